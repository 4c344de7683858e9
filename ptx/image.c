/* Owns turning an image's bytes into its list of code objects: recognising
 * what holds the code, walking fatbins, decompressing, and picking the PTX
 * for a GPU. */
#include "ptx/image.h"

#include "ptx/elf_file.h"
#include "ptx/ptx_text.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct collector {
    struct mgpu_image *image;
    const char *section;
    size_t container_base;
    char *err;
    size_t errlen;
    int failed;
};

static int add_object(struct mgpu_image *image, const struct mgpu_code_object *object)
{
    struct mgpu_code_object *grown =
        realloc(image->objects, (image->count + 1) * sizeof *image->objects);
    if (grown == NULL)
        return -1;
    image->objects = grown;
    image->objects[image->count++] = *object;
    return 0;
}

static int check_cubin(const void *data, size_t size, char *err, size_t errlen);

static int collect_entry(const struct mgpu_fatbin_entry *entry, void *ctx)
{
    struct collector *c = ctx;
    struct mgpu_code_object object = {
        .kind = entry->kind,
        .arch = entry->arch,
        .version_major = entry->version_major,
        .version_minor = entry->version_minor,
        .compression = entry->compression,
        .section = c->section,
        .container = c->container_base + entry->container,
    };
    if (mgpu_fatbin_entry_code(entry, &object.code, &object.size, c->err, c->errlen) != 0) {
        c->failed = 1;
        return 1;
    }
    /* An entry stored as a cubin must be a whole one; entries of other kinds
     * kept as ELF are checked only when they are ELF. */
    if (entry->kind == MGPU_CODE_ELF &&
        (entry->stored_kind == MGPU_FATBIN_KIND_CUBIN ||
         mgpu_elf_identify(object.code, object.size, NULL)) &&
        check_cubin(object.code, object.size, c->err, c->errlen) != 0) {
        free(object.code);
        c->failed = 1;
        return 1;
    }
    if (add_object(c->image, &object) != 0) {
        free(object.code);
        snprintf(c->err, c->errlen, "out of memory reading the image");
        c->failed = 1;
        return 1;
    }
    return 0;
}

static int read_fatbins(struct mgpu_image *image, const void *data, size_t size,
                        const char *section, char *err, size_t errlen)
{
    struct collector c = {image, section, 0, err, errlen, 0};
    if (image->count > 0)
        c.container_base = image->objects[image->count - 1].container + 1;
    long n = mgpu_fatbin_walk(data, size, collect_entry, &c, err, errlen);
    if (n < 0 || c.failed) {
        if (section != NULL) {
            char detail[256];
            snprintf(detail, sizeof detail, "%s", err);
            snprintf(err, errlen, "section %s: %s", section, detail);
        }
        return -1;
    }
    return 0;
}

/* The SM of a cubin, from its ELF flags (byte 1 since CUDA 12.8, byte 0
 * before). */
static unsigned cubin_arch(const void *data)
{
    unsigned flags;
    memcpy(&flags, (const char *)data + 48, sizeof flags); /* e_flags of Elf64_Ehdr */
    unsigned arch = (flags >> 8) & 0xff;
    return arch >= 20 ? arch : flags & 0xff;
}

static int copy_object(struct mgpu_image *image, enum mgpu_code_kind kind, unsigned arch,
                       const void *data, size_t size, char *err, size_t errlen)
{
    struct mgpu_code_object object = {.kind = kind, .arch = arch, .size = size};
    object.code = malloc(size + 1);
    if (object.code == NULL || add_object(image, &object) != 0) {
        free(object.code);
        snprintf(err, errlen, "out of memory reading the image");
        return -1;
    }
    memcpy(object.code, data, size);
    object.code[size] = '\0';
    return 0;
}

/* A cubin must have its sections and symbol table within its bytes: one cut
 * short is an error here, not an object whose kernels cannot be read. */
static int check_cubin(const void *data, size_t size, char *err, size_t errlen)
{
    char why[160];
    if (mgpu_elf_check(data, size, why, sizeof why) != 0) {
        snprintf(err, errlen, "corrupt cubin: %s", why);
        return -1;
    }
    if (mgpu_cubin_kernels(data, size, NULL, NULL) < 0) {
        snprintf(err, errlen, "corrupt cubin: its symbol table is unreadable");
        return -1;
    }
    return 0;
}

static int read_host_elf(struct mgpu_image *image, const void *data, size_t size, char *err,
                         size_t errlen)
{
    char why[160];
    if (mgpu_elf_check(data, size, why, sizeof why) != 0) {
        snprintf(err, errlen, "corrupt program or library: %s", why);
        return -1;
    }
    static const char *const fatbin_sections[] = {".nv_fatbin", "__nv_relfatbin"};
    for (size_t i = 0; i < sizeof fatbin_sections / sizeof fatbin_sections[0]; i++) {
        size_t length = 0;
        const void *section = mgpu_elf_section(data, size, fatbin_sections[i], &length);
        if (section != NULL && length > 0 &&
            read_fatbins(image, section, length, fatbin_sections[i], err, errlen) != 0)
            return -1;
    }
    return 0;
}

static bool starts_with_fatbin_magic(const void *data, size_t size)
{
    uint32_t magic;
    if (size < sizeof magic)
        return false;
    memcpy(&magic, data, sizeof magic); /* little-endian hosts only, as the rest of mgpu */
    return magic == MGPU_FATBIN_MAGIC;
}

int mgpu_image_read(const void *data, size_t size, struct mgpu_image *image, char *err,
                    size_t errlen)
{
    memset(image, 0, sizeof *image);
    unsigned machine;
    int rc;
    if (mgpu_elf_identify(data, size, &machine) && machine == MGPU_EM_CUDA) {
        image->kind = MGPU_IMAGE_CUBIN;
        rc = check_cubin(data, size, err, errlen);
        if (rc == 0)
            rc = copy_object(image, MGPU_CODE_ELF, cubin_arch(data), data, size, err, errlen);
    } else if (mgpu_elf_identify(data, size, &machine)) {
        image->kind = MGPU_IMAGE_HOST_ELF;
        rc = read_host_elf(image, data, size, err, errlen);
    } else if (starts_with_fatbin_magic(data, size)) {
        /* Taken as a fatbin by its magic alone, so that one cut short is
         * reported as truncated by the walk rather than as not GPU code. */
        image->kind = MGPU_IMAGE_FATBIN;
        rc = read_fatbins(image, data, size, NULL, err, errlen);
    } else if (size > 0 && mgpu_ptx_is_text(data, size)) {
        image->kind = MGPU_IMAGE_PTX;
        rc = copy_object(image, MGPU_CODE_PTX, mgpu_ptx_target_arch(data, size), data,
                         strnlen(data, size), err, errlen);
        if (rc == 0)
            mgpu_ptx_version(data, size, &image->objects[0].version_major,
                             &image->objects[0].version_minor);
    } else {
        snprintf(err, errlen,
                 "not GPU code: neither a program or library, a fatbin, a cubin nor PTX text");
        rc = -1;
    }
    if (rc != 0)
        mgpu_image_free(image);
    return rc;
}

const struct mgpu_code_object *mgpu_image_best_ptx(const struct mgpu_image *image, unsigned arch)
{
    const struct mgpu_code_object *best = NULL;
    for (size_t i = 0; i < image->count; i++) {
        const struct mgpu_code_object *o = &image->objects[i];
        if (o->kind != MGPU_CODE_PTX || o->arch > arch)
            continue;
        if (best == NULL || o->arch > best->arch)
            best = o;
    }
    return best;
}

void mgpu_image_free(struct mgpu_image *image)
{
    for (size_t i = 0; i < image->count; i++)
        free(image->objects[i].code);
    free(image->objects);
    memset(image, 0, sizeof *image);
}

const char *mgpu_image_kind_name(enum mgpu_image_kind kind)
{
    switch (kind) {
    case MGPU_IMAGE_HOST_ELF:
        return "program or library";
    case MGPU_IMAGE_FATBIN:
        return "fatbin";
    case MGPU_IMAGE_CUBIN:
        return "cubin";
    default:
        return "PTX";
    }
}
