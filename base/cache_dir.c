/* Owns finding and making mgpu's cache directory (see cache_dir.h). */
#include "base/cache_dir.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

int mgpu_cache_dir(char *out, size_t len)
{
    const char *dir = getenv("MGPU_CACHE_DIR");
    const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
    int n;
    if (dir && *dir)
        n = snprintf(out, len, "%s", dir);
    else if (xdg && *xdg)
        n = snprintf(out, len, "%s/mgpu", xdg);
    else if (home && *home)
        n = snprintf(out, len, "%s/.cache/mgpu", home);
    else
        n = snprintf(out, len, "/tmp/mgpu-cache-%u", (unsigned)getuid());
    if (n < 0 || (size_t)n >= len) {
        errno = ENAMETOOLONG;
        return -1;
    }
    /* mkdir -p */
    for (char *p = out + 1; *p; p++)
        if (*p == '/') {
            *p = '\0';
            mkdir(out, 0700);
            *p = '/';
        }
    if (mkdir(out, 0700) != 0 && errno != EEXIST)
        return -1;
    /* Ours alone: what is kept there is read back into the program (a
     * probe's PTX, the machine's GPUs), and /tmp is everyone's. */
    struct stat st;
    if (stat(out, &st) != 0)
        return -1;
    if (!S_ISDIR(st.st_mode) || st.st_uid != getuid() || (st.st_mode & (S_IWGRP | S_IWOTH))) {
        errno = EACCES;
        return -1;
    }
    return 0;
}
