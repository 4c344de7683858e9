/* Unit test of program_image.c on nvcc's own fixtures (tests/ptx/, made by
 * `make check`): the size of each image form the driver takes is found from
 * its headers, a wrapper's -rdc list is copied after its fatbin, the PTX
 * for sm_90 is chosen, and cubins, PTX of several objects and corrupt
 * images give a reason instead of PTX. */
#include "modules/program_image.h"

#include "check.h"
#include "ptx/elf_file.h"
#include "ptx/fatbin.h"
#include "ptx/image.h"

#include <elf.h>
#include <stdint.h>
#include <stdlib.h>

static void count_kernel(const char *name, void *ctx)
{
    (void)name;
    (*(long *)ctx)++;
}

/* The cubin copied to an odd address: its headers, sections and symbols are
 * read there as well as at an aligned one (UBSan traps a misaligned load). */
static void check_cubin_at_odd_address(const char *cubin, size_t cubin_size)
{
    char *block = malloc(cubin_size + 1);
    char *odd = block + 1;
    memcpy(odd, cubin, cubin_size);
    unsigned machine = 0;
    CHECK(mgpu_elf_identify(odd, cubin_size, &machine) && machine == MGPU_EM_CUDA);
    long seen = 0;
    long kernels = mgpu_cubin_kernels(odd, cubin_size, count_kernel, &seen);
    CHECK(kernels == 4 && seen == 4);
    CHECK(mgpu_cubin_kernels(cubin, cubin_size, NULL, NULL) == kernels);
    struct mgpu_image image;
    char err[256];
    CHECK(mgpu_image_read(odd, cubin_size, &image, err, sizeof err) == 0);
    CHECK(image.kind == MGPU_IMAGE_CUBIN && image.count == 1 && image.objects[0].arch == 90);
    mgpu_image_free(&image);
    free(block);
}

/* A cubin cut anywhere before its end (its last byte included: nvcc puts
 * the program headers there) is refused as corrupt, with one line that says
 * so, not read as a cubin whose kernels cannot be found. */
static void check_cubin_cut(const char *cubin, size_t cut)
{
    char err[256], why[256];
    char *copy = malloc(cut);
    memcpy(copy, cubin, cut);
    struct mgpu_image image;
    int rc = mgpu_image_read(copy, cut, &image, err, sizeof err);
    CHECK(rc == -1);
    if (rc == 0)
        mgpu_image_free(&image);
    else if (strncmp(err, "corrupt cubin: ", 15) != 0 || strchr(err, '\n') != NULL)
        fprintf(stderr, "cut at %zu: %s\n", cut, err), check_failures++;
    char *ptx;
    size_t size;
    CHECK(mgpu_program_image_ptx(copy, cut, 90, &ptx, &size, why, sizeof why) == -1);
    CHECK_CONTAINS(why, "corrupt image: corrupt cubin");
    free(copy);
}

static void check_truncated_cubin(const char *cubin, size_t cubin_size)
{
    for (size_t cut = 64; cut < cubin_size; cut += 1 + cut / 16)
        check_cubin_cut(cubin, cut);
    check_cubin_cut(cubin, cubin_size - 1);
}

/* ELF headers whose program-header table lies past the largest image: no
 * size (before, the end of the table wrapped around and the header alone was
 * copied as the image). */
static void check_absurd_elf_tables(void)
{
    unsigned char h[64] = {0x7f, 'E', 'L', 'F', ELFCLASS64, ELFDATA2LSB, 1};
    uint16_t shentsize = sizeof(Elf64_Shdr), phentsize = sizeof(Elf64_Phdr), one = 1;
    uint64_t far = (uint64_t)1 << 40, wrap = ~(uint64_t)0 - 8;
    memcpy(h + 58, &shentsize, 2); /* e_shentsize; no sections */
    memcpy(h + 54, &phentsize, 2);
    memcpy(h + 56, &one, 2); /* e_phnum */
    uint64_t offsets[] = {far, wrap};
    for (size_t i = 0; i < 2; i++) {
        memcpy(h + 32, &offsets[i], 8); /* e_phoff */
        unsigned char *header = malloc(sizeof h);
        memcpy(header, h, sizeof h);
        void *copy = NULL;
        size_t size = 0;
        char err[256];
        CHECK(mgpu_program_image_copy(header, &copy, &size, err, sizeof err) == -1);
        CHECK_CONTAINS(err, "gives no size");
        free(copy);
        free(header);
    }
}

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

    check_cubin_at_odd_address(cubin, cubin_size);
    check_truncated_cubin(cubin, cubin_size);
    check_absurd_elf_tables();

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
