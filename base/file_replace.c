/* Owns writing a small file whole in place of another (see file_replace.h). */
#include "base/file_replace.h"

#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <sys/types.h>
#include <unistd.h>

bool mgpu_file_replace(const char *path, const char *text, size_t len)
{
    char temporary[PATH_MAX + 32];
    if (snprintf(temporary, sizeof temporary, "%s.%ld.tmp", path, (long)getpid()) >=
        (int)sizeof temporary)
        return false;
    int fd = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    bool ok = fd >= 0;
    for (size_t done = 0; ok && done < len;) {
        ssize_t n = write(fd, text + done, len - done);
        ok = n > 0;
        done += ok ? (size_t)n : 0;
    }
    if (fd >= 0 && close(fd) != 0)
        ok = false;
    if (!ok || rename(temporary, path) != 0) {
        unlink(temporary);
        return false;
    }
    return true;
}
