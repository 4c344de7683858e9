/* The GPU code a program carries: every PTX and cubin object of an image,
 * whatever holds it (a host program or library, a fatbin, a cubin, PTX
 * text), decompressed, with its architecture. */
#ifndef MGPU_PTX_IMAGE_H
#define MGPU_PTX_IMAGE_H

#include "ptx/fatbin.h"

#include <stddef.h>

enum mgpu_image_kind { MGPU_IMAGE_HOST_ELF, MGPU_IMAGE_FATBIN, MGPU_IMAGE_CUBIN, MGPU_IMAGE_PTX };

struct mgpu_code_object {
    enum mgpu_code_kind kind;
    unsigned arch; /* 90 for sm_90 or compute_90; 0 when unknown */
    unsigned version_major, version_minor;
    enum mgpu_compression compression; /* as it was stored */
    const char *section; /* where a host file keeps it: ".nv_fatbin", "__nv_relfatbin" */
    size_t container;    /* fatbin container within that, from 0 */
    char *code;          /* decompressed; NUL after it */
    size_t size;
};

struct mgpu_image {
    enum mgpu_image_kind kind;
    struct mgpu_code_object *objects;
    size_t count;
};

/* Reads every code object out of `size` bytes. Returns 0, or -1 with a
 * one-line message in err (the image is then empty). */
int mgpu_image_read(const void *data, size_t size, struct mgpu_image *image, char *err,
                    size_t errlen);

/* The PTX to compile for a GPU of architecture `arch`: the newest one not
 * newer than the GPU. NULL when there is none. */
const struct mgpu_code_object *mgpu_image_best_ptx(const struct mgpu_image *image, unsigned arch);

void mgpu_image_free(struct mgpu_image *image);

const char *mgpu_image_kind_name(enum mgpu_image_kind kind);

#endif
