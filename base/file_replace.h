/* A small file written whole in place of the one at its path, for what
 * mgpu keeps in its cache directory (base/cache_dir.h): written beside it
 * and renamed over it, so that a run reading it at the same time sees the
 * old file or the new one, never a part. */
#ifndef MGPU_FILE_REPLACE_H
#define MGPU_FILE_REPLACE_H

#include <stdbool.h>
#include <stddef.h>

/* Writes text (len bytes) to path, mode 0600; whether it was. A file that
 * could not be written whole is removed, and the old one stays. */
bool mgpu_file_replace(const char *path, const char *text, size_t len);

#endif
