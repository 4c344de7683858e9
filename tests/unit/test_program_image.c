/* Unit test of program_image.c on nvcc's own fixtures (tests/ptx/, made by
 * `make check`): the size of each image form the driver takes is found from
 * its headers, a wrapper's -rdc list is copied after its fatbin, the PTX
 * for sm_90 is chosen, and cubins, PTX of several objects and corrupt
 * images give a reason instead of PTX. */
#include "program_image.h"

#include "check.h"
#include "ptx/fatbin.h"

#include <stdint.h>
#include <stdlib.h>

static char *slurp(const char *path, size_t *size)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL) {
        fprintf(stderr, "cannot open %s (run from the build directory after make check)\n", path);
        exit(1);
    }
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *data = calloc(1, (size_t)n + 16);
    if (data == NULL || fread(data, 1, (size_t)n, f) != (size_t)n)
        exit(1);
    fclose(f);
    *size = (size_t)n;
    return data;
}

struct wrapper {
    uint32_t magic, version;
    const void *data, *list;
};

int main(void)
{
    size_t fatbin_size, cubin_size, ptx_size, copy_size, size;
    char *fatbin = slurp("tests/ptx/kernels.fatbin", &fatbin_size);
    char *cubin = slurp("tests/ptx/kernels.cubin", &cubin_size);
    char *ptx_text = slurp("tests/ptx/kernels.ptx", &ptx_size);
    void *copy;
    char *ptx;
    char err[256], why[256];

    /* A fatbin: its header gives its size. */
    CHECK(mgpu_program_image_copy(fatbin, &copy, &copy_size, err, sizeof err) == 0);
    CHECK(copy_size <= fatbin_size && copy_size + 16 > fatbin_size);
    CHECK(memcmp(copy, fatbin, copy_size) == 0);
    CHECK(mgpu_program_image_ptx(copy, copy_size, 90, &ptx, &size, why, sizeof why) == 0);
    CHECK_CONTAINS(ptx, ".entry");
    CHECK(strlen(ptx) == size);
    free(ptx);
    /* Newer GPUs take the same PTX; older ones have none. */
    CHECK(mgpu_program_image_ptx(copy, copy_size, 100, &ptx, &size, why, sizeof why) == 0);
    free(ptx);
    CHECK(mgpu_program_image_ptx(copy, copy_size, 80, &ptx, &size, why, sizeof why) == -1);
    CHECK_CONTAINS(why, "no PTX for sm_80");
    free(copy);

    /* A wrapper (what the CUDA runtime registers) around it. */
    struct wrapper w = {MGPU_FATBIN_WRAPPER_MAGIC, 1, fatbin, NULL};
    CHECK(mgpu_program_image_copy(&w, &copy, &size, err, sizeof err) == 0);
    CHECK(size >= copy_size && size < copy_size + 8 && memcmp(copy, fatbin, copy_size) == 0);
    free(copy);

    /* Version 2 lists -rdc fatbins: all are copied, and PTX in more than
     * one of them cannot be rewritten alone. */
    const void *list[] = {fatbin, NULL};
    struct wrapper linked = {MGPU_FATBIN_WRAPPER_MAGIC, 2, fatbin, list};
    CHECK(mgpu_program_image_copy(&linked, &copy, &size, err, sizeof err) == 0);
    CHECK(size >= 2 * copy_size);
    CHECK(mgpu_program_image_ptx(copy, size, 90, &ptx, &size, why, sizeof why) == -1);
    CHECK_CONTAINS(why, "several separately compiled objects");
    free(copy);

    /* A wrapper around something else. */
    struct wrapper bad = {MGPU_FATBIN_WRAPPER_MAGIC, 1, cubin, NULL};
    CHECK(mgpu_program_image_copy(&bad, &copy, &size, err, sizeof err) == -1);
    CHECK_CONTAINS(err, "not a fatbin");

    /* An ELF cubin: its section headers give its size; it has no PTX. */
    CHECK(mgpu_program_image_copy(cubin, &copy, &size, err, sizeof err) == 0);
    CHECK(size == cubin_size && memcmp(copy, cubin, size) == 0);
    CHECK(mgpu_program_image_ptx(copy, size, 90, &ptx, &size, why, sizeof why) == -1);
    CHECK_CONTAINS(why, "no PTX for sm_90 (machine code only)");
    free(copy);

    /* PTX text: up to its NUL. */
    CHECK(mgpu_program_image_copy(ptx_text, &copy, &size, err, sizeof err) == 0);
    CHECK(size == ptx_size);
    CHECK(mgpu_program_image_ptx(copy, size, 90, &ptx, &size, why, sizeof why) == 0);
    CHECK(size == ptx_size && strcmp(ptx, ptx_text) == 0);
    free(ptx);
    free(copy);

    /* A fatbin header claiming more than any image holds. */
    char huge[64];
    memcpy(huge, fatbin, sizeof huge);
    uint64_t claim = (uint64_t)1 << 40;
    memcpy(huge + 8, &claim, sizeof claim);
    CHECK(mgpu_program_image_copy(huge, &copy, &size, err, sizeof err) == -1);
    CHECK_CONTAINS(err, "gives no size");

    /* Every payload byte garbled in turn, in a copy: a reason, never a
     * crash (ASan watches the reads). */
    char *damaged = malloc(fatbin_size);
    for (size_t at = 16; at < fatbin_size; at += 7) {
        memcpy(damaged, fatbin, fatbin_size);
        damaged[at] ^= 0x5a;
        if (mgpu_program_image_ptx(damaged, fatbin_size, 90, &ptx, &size, why, sizeof why) == 0)
            free(ptx);
        else
            CHECK(why[0] != '\0');
    }
    /* Truncated. */
    for (size_t cut = 0; cut < fatbin_size; cut += 13) {
        if (mgpu_program_image_ptx(fatbin, cut, 90, &ptx, &size, why, sizeof why) == 0)
            free(ptx);
        else
            CHECK(why[0] != '\0');
    }
    free(damaged);

    CHECK(mgpu_program_image_read_file("tests/ptx/no-such-file", &copy, &size, err, sizeof err) ==
          -1);
    CHECK_CONTAINS(err, "cannot read the image file");
    CHECK(mgpu_program_image_read_file("tests/ptx/kernels.cubin", &copy, &size, err, sizeof err) ==
          0);
    CHECK(size == cubin_size);
    free(copy);

    free(fatbin);
    free(cubin);
    free(ptx_text);
    CHECK_DONE();
}
