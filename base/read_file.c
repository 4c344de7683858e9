/* Owns reading a small file whole (see read_file.h). */
#include "base/read_file.h"

#include <errno.h>
#include <stdio.h>
#include <stdbool.h>
#include <stdlib.h>

char *mgpu_read_file(const char *path, size_t max, size_t *size)
{
    FILE *f = fopen(path, "rbe");
    if (f == NULL)
        return NULL;
    char *data = malloc(max + 1);
    size_t n = data ? fread(data, 1, max + 1, f) : 0;
    bool failed = ferror(f) != 0;
    fclose(f);
    if (data == NULL || failed || n > max) {
        free(data);
        errno = data == NULL ? ENOMEM : failed ? EIO : EFBIG;
        return NULL;
    }
    data[n] = '\0';
    *size = n;
    return data;
}
