/* The code images a program hands the driver (cuModuleLoad*, cuLibraryLoad*,
 * cuLinkAdd*): copying them while they are valid, and choosing the PTX that
 * mgpu rewrites. */
#ifndef MGPU_PROGRAM_IMAGE_H
#define MGPU_PROGRAM_IMAGE_H

#include <stddef.h>

/* Copies an image in memory: a fatbin wrapper (the fatbins of its -rdc list
 * follow its own in the copy), a fatbin, an ELF cubin or PTX text. Call it
 * only after the driver has accepted the image: its size comes from the
 * image's own headers. Returns 0, or -1 with a one-line reason in err. */
int mgpu_program_image_copy(const void *image, void **bytes, size_t *size, char *err,
                            size_t errlen);

/* Reads an image file whole. Returns 0, or -1 with a reason in err. */
int mgpu_program_image_read_file(const char *path, void **bytes, size_t *size, char *err,
                                 size_t errlen);

/* The PTX of a copied image to rewrite for a GPU of architecture `arch`
 * (90 for sm_90), NUL-terminated. Returns 0, or -1 with a one-line reason
 * in why: a corrupt image, no PTX, or PTX of several separately compiled
 * objects. */
int mgpu_program_image_ptx(const void *bytes, size_t size, unsigned arch, char **ptx,
                           size_t *ptx_size, char *why, size_t whylen);

#endif
