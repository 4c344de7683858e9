/* Owns copying the program's code images and picking their PTX (see
 * program_image.h). Parsing is left to ptx/image.c, which checks every
 * length against the bytes copied. */
#include "modules/program_image.h"

#include "ptx/fatbin.h"
#include "ptx/image.h"

#include <elf.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* An image larger than this is taken for a corrupt header. */
#define IMAGE_SIZE_LIMIT ((size_t)1 << 34)

struct fatbin_wrapper {
    uint32_t magic;
    uint32_t version;
    const void *data;
    const void *filename_or_fatbins; /* version 2: NULL-terminated list of fatbins */
};

static size_t fatbin_size(const void *fatbin)
{
    /* Magic, version, header size, then the size of what follows it. */
    const unsigned char *p = fatbin;
    uint32_t magic;
    uint16_t header;
    uint64_t body;
    memcpy(&magic, p, 4);
    memcpy(&header, p + 6, 2);
    memcpy(&body, p + 8, 8);
    if (magic != MGPU_FATBIN_MAGIC || header < 16 || body > IMAGE_SIZE_LIMIT)
        return 0;
    return header + (size_t)body;
}

/* *end = offset + count * entry; false when that passes IMAGE_SIZE_LIMIT
 * (every term is checked before the sum, so nothing wraps around). */
static bool table_end(uint64_t offset, uint64_t count, uint64_t entry, size_t *end)
{
    if (offset > IMAGE_SIZE_LIMIT || count > IMAGE_SIZE_LIMIT || entry > IMAGE_SIZE_LIMIT ||
        (entry != 0 && count > (IMAGE_SIZE_LIMIT - offset) / entry))
        return false;
    *end = (size_t)(offset + count * entry);
    return true;
}

static size_t elf_size(const void *image)
{
    Elf64_Ehdr eh;
    memcpy(&eh, image, sizeof eh);
    size_t end, programs_end = 0;
    if (eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_shentsize != sizeof(Elf64_Shdr) ||
        !table_end(eh.e_shoff, eh.e_shnum, eh.e_shentsize, &end) ||
        (eh.e_phnum != 0 && !table_end(eh.e_phoff, eh.e_phnum, eh.e_phentsize, &programs_end)))
        return 0;
    const unsigned char *p = image;
    for (unsigned i = 0; i < eh.e_shnum; i++) {
        Elf64_Shdr sh;
        memcpy(&sh, p + eh.e_shoff + (size_t)i * sizeof sh, sizeof sh);
        size_t section_end;
        if (sh.sh_type != SHT_NOBITS && table_end(sh.sh_offset, 1, sh.sh_size, &section_end) &&
            section_end > end)
            end = section_end;
    }
    if (programs_end > end)
        end = programs_end;
    return end;
}

static int copy_bytes(const void *from, size_t size, void **bytes, size_t *out_size, char *err,
                      size_t errlen)
{
    *bytes = malloc(size + 1);
    if (*bytes == NULL) {
        snprintf(err, errlen, "out of memory copying a %zu-byte image", size);
        return -1;
    }
    memcpy(*bytes, from, size);
    ((char *)*bytes)[size] = '\0';
    *out_size = size;
    return 0;
}

/* The wrapper's fatbin, then each fatbin of its -rdc list, each at an
 * 8-byte boundary, as nvcc lays containers out in a section. */
static int copy_wrapper(const struct fatbin_wrapper *w, void **bytes, size_t *size, char *err,
                        size_t errlen)
{
    const void *parts[257];
    size_t nparts = 0;
    parts[nparts++] = w->data;
    if (w->version == 2 && w->filename_or_fatbins != NULL) {
        const void *const *list = w->filename_or_fatbins;
        for (size_t i = 0; list[i] != NULL; i++) {
            if (nparts == sizeof parts / sizeof parts[0]) {
                snprintf(err, errlen, "a fatbin wrapper lists more than %zu fatbins", nparts - 1);
                return -1;
            }
            parts[nparts++] = list[i];
        }
    }
    size_t total = 0, sizes[257];
    for (size_t i = 0; i < nparts; i++) {
        sizes[i] = parts[i] ? fatbin_size(parts[i]) : 0;
        if (sizes[i] == 0) {
            snprintf(err, errlen, "a fatbin wrapper points at something that is not a fatbin");
            return -1;
        }
        total += (sizes[i] + 7) & ~(size_t)7;
    }
    unsigned char *out = calloc(1, total + 1);
    if (out == NULL) {
        snprintf(err, errlen, "out of memory copying a %zu-byte image", total);
        return -1;
    }
    size_t at = 0;
    for (size_t i = 0; i < nparts; i++) {
        memcpy(out + at, parts[i], sizes[i]);
        at += (sizes[i] + 7) & ~(size_t)7;
    }
    *bytes = out;
    *size = total;
    return 0;
}

int mgpu_program_image_copy(const void *image, void **bytes, size_t *size, char *err, size_t errlen)
{
    if (image == NULL) {
        snprintf(err, errlen, "no image");
        return -1;
    }
    uint32_t magic;
    memcpy(&magic, image, sizeof magic);
    if (magic == MGPU_FATBIN_WRAPPER_MAGIC) {
        struct fatbin_wrapper w;
        memcpy(&w, image, sizeof w);
        return copy_wrapper(&w, bytes, size, err, errlen);
    }
    size_t n = 0;
    if (magic == MGPU_FATBIN_MAGIC)
        n = fatbin_size(image);
    else if (memcmp(image, ELFMAG, SELFMAG) == 0)
        n = elf_size(image);
    else
        n = strnlen(image, IMAGE_SIZE_LIMIT); /* PTX text */
    if (n == 0) {
        snprintf(err, errlen, "the image's header gives no size");
        return -1;
    }
    return copy_bytes(image, n, bytes, size, err, errlen);
}

int mgpu_program_image_read_file(const char *path, void **bytes, size_t *size, char *err,
                                 size_t errlen)
{
    FILE *f = path != NULL ? fopen(path, "rb") : NULL;
    struct stat st;
    if (f == NULL || fstat(fileno(f), &st) != 0 || st.st_size <= 0) {
        snprintf(err, errlen, "cannot read the image file %s", path ? path : "(none named)");
        if (f)
            fclose(f);
        return -1;
    }
    size_t n = (size_t)st.st_size;
    char *data = malloc(n + 1);
    bool ok = data != NULL && fread(data, 1, n, f) == n;
    fclose(f);
    if (!ok) {
        free(data);
        snprintf(err, errlen, "cannot read the image file %s", path ? path : "(none named)");
        return -1;
    }
    data[n] = '\0';
    *bytes = data;
    *size = n;
    return 0;
}

int mgpu_program_image_ptx(const void *bytes, size_t size, unsigned arch, char **ptx,
                           size_t *ptx_size, char *why, size_t whylen)
{
    struct mgpu_image image;
    char err[256];
    if (mgpu_image_read(bytes, size, &image, err, sizeof err) != 0) {
        snprintf(why, whylen, "corrupt image: %s", err);
        return -1;
    }
    const struct mgpu_code_object *best = mgpu_image_best_ptx(&image, arch);
    int rc = -1;
    if (best == NULL) {
        snprintf(why, whylen, "the image has no PTX for sm_%u (machine code only)", arch);
        goto out;
    }
    /* PTX in more than one container: objects compiled separately (-rdc)
     * whose device code only works linked together. */
    for (size_t i = 0; i < image.count; i++)
        if (image.objects[i].kind == MGPU_CODE_PTX &&
            image.objects[i].container != best->container) {
            snprintf(why, whylen,
                     "the image links PTX of several separately compiled objects (-rdc)");
            goto out;
        }
    if ((*ptx = malloc(best->size + 1)) == NULL) {
        snprintf(why, whylen, "out of memory");
        goto out;
    }
    memcpy(*ptx, best->code, best->size);
    (*ptx)[best->size] = '\0';
    *ptx_size = best->size;
    rc = 0;
out:
    mgpu_image_free(&image);
    return rc;
}
