/* mgpu-ptx: shows the GPU code a program, library, fatbin, cubin or PTX file
 * carries, and extracts it. `list` tells, before any run, which kernels mgpu
 * has PTX for (kernels compiled to machine code only cannot be split). */
#include <build_config.h>

#include "demangle.h"
#include "ptx/elf_file.h"
#include "ptx/image.h"
#include "ptx/ptx_text.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define EXIT_USAGE 2

static void usage(FILE *out)
{
    fprintf(out, "Usage: mgpu-ptx list FILE...\n"
                 "       mgpu-ptx extract FILE -o DIR\n"
                 "\n"
                 "  list     the code objects (PTX, cubins; architectures; compression) and the\n"
                 "           kernels of each FILE, and which kernels have PTX\n"
                 "  extract  write every code object of FILE into DIR, decompressed\n"
                 "\n"
                 "FILE is a CUDA program or library, a fatbin, a cubin or a PTX file.\n");
}

struct mapped_file {
    void *data;
    size_t size;
};

static int map_file(const char *path, struct mapped_file *f)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        fprintf(stderr, "mgpu-ptx: cannot open %s: %s\n", path, strerror(errno));
        return -1;
    }
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size == 0) {
        fprintf(stderr, "mgpu-ptx: %s is not a regular, non-empty file\n", path);
        close(fd);
        return -1;
    }
    f->size = (size_t)st.st_size;
    f->data = mmap(NULL, f->size, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (f->data == MAP_FAILED) {
        fprintf(stderr, "mgpu-ptx: cannot read %s: %s\n", path, strerror(errno));
        return -1;
    }
    return 0;
}

static int read_image(const char *path, struct mgpu_image *image)
{
    struct mapped_file f;
    if (map_file(path, &f) != 0)
        return -1;
    char err[512];
    int rc = mgpu_image_read(f.data, f.size, image, err, sizeof err);
    munmap(f.data, f.size);
    if (rc != 0)
        fprintf(stderr, "mgpu-ptx: %s: %s\n", path, err);
    return rc;
}

static void describe_object(const struct mgpu_code_object *o, char *out, size_t outlen)
{
    if (o->kind == MGPU_CODE_PTX)
        snprintf(out, outlen, "PTX ISA %u.%u for compute_%u", o->version_major, o->version_minor,
                 o->arch);
    else
        snprintf(out, outlen, "cubin for sm_%u", o->arch);
}

/* Kernels by name, with the architectures of the code each one has. */
struct kernel_row {
    char *name;
    char ptx[64];
    char sass[64];
};
struct kernel_table {
    struct kernel_row *rows;
    size_t count;
    const struct mgpu_code_object *current;
};

static void append_arch(char *list, size_t len, unsigned arch)
{
    char item[16];
    snprintf(item, sizeof item, "%u", arch);
    for (const char *p = list; (p = strstr(p, item)) != NULL; p += strlen(item))
        if ((p == list || p[-1] == ',') && (p[strlen(item)] == ',' || p[strlen(item)] == '\0'))
            return;
    if (strlen(list) + strlen(item) + 2 < len) {
        if (list[0])
            strcat(list, ",");
        strcat(list, item);
    }
}

static void note_kernel(const char *name, void *ctx)
{
    struct kernel_table *t = ctx;
    size_t i;
    for (i = 0; i < t->count; i++)
        if (strcmp(t->rows[i].name, name) == 0)
            break;
    if (i == t->count) {
        struct kernel_row *grown = realloc(t->rows, (t->count + 1) * sizeof *grown);
        if (grown == NULL)
            return;
        t->rows = grown;
        memset(&t->rows[i], 0, sizeof t->rows[i]);
        t->rows[i].name = strdup(name);
        if (t->rows[i].name == NULL)
            return;
        t->count++;
    }
    struct kernel_row *row = &t->rows[i];
    if (t->current->kind == MGPU_CODE_PTX)
        append_arch(row->ptx, sizeof row->ptx, t->current->arch);
    else
        append_arch(row->sass, sizeof row->sass, t->current->arch);
}

static int compare_rows(const void *a, const void *b)
{
    return strcmp(((const struct kernel_row *)a)->name, ((const struct kernel_row *)b)->name);
}

static int list_file(const char *path)
{
    struct mgpu_image image;
    if (read_image(path, &image) != 0)
        return 1;
    printf("%s: %s, %zu code object%s\n", path, mgpu_image_kind_name(image.kind), image.count,
           image.count == 1 ? "" : "s");
    struct kernel_table table = {NULL, 0, NULL};
    for (size_t i = 0; i < image.count; i++) {
        const struct mgpu_code_object *o = &image.objects[i];
        char what[96];
        describe_object(o, what, sizeof what);
        if (o->section)
            printf("  %s #%zu: %s, %zu bytes, stored %s\n", o->section, o->container, what, o->size,
                   mgpu_compression_name(o->compression));
        else
            printf("  %s, %zu bytes\n", what, o->size);
        table.current = o;
        long n = o->kind == MGPU_CODE_PTX
                     ? mgpu_ptx_kernels(o->code, o->size, note_kernel, &table)
                     : mgpu_cubin_kernels(o->code, o->size, note_kernel, &table);
        if (n < 0)
            printf("    (its symbol table is unreadable)\n");
    }
    qsort(table.rows, table.count, sizeof *table.rows, compare_rows);
    size_t without_ptx = 0;
    printf("kernels: %zu\n", table.count);
    for (size_t i = 0; i < table.count; i++) {
        struct kernel_row *row = &table.rows[i];
        char *pretty = mgpu_demangle(row->name);
        printf("  %s\n    %s; PTX: %s%s; machine code: %s%s\n", pretty ? pretty : row->name,
               row->name, row->ptx[0] ? "compute_" : "none", row->ptx,
               row->sass[0] ? "sm_" : "none", row->sass);
        if (!row->ptx[0]) {
            printf("    cannot be split: no PTX, machine code only\n");
            without_ptx++;
        }
        free(pretty);
        free(row->name);
    }
    if (table.count > without_ptx)
        printf("%zu kernel%s with PTX: mgpu can rewrite them; whether each can be split is\n"
               "decided by the kernel analysis, which is not built yet\n",
               table.count - without_ptx, table.count - without_ptx == 1 ? "" : "s");
    free(table.rows);
    mgpu_image_free(&image);
    return 0;
}

static int extract_file(const char *path, const char *dir)
{
    struct mgpu_image image;
    if (read_image(path, &image) != 0)
        return 1;
    if (mkdir(dir, 0777) != 0 && errno != EEXIST) {
        fprintf(stderr, "mgpu-ptx: cannot create %s: %s\n", dir, strerror(errno));
        mgpu_image_free(&image);
        return 1;
    }
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    int rc = 0;
    for (size_t i = 0; i < image.count && rc == 0; i++) {
        const struct mgpu_code_object *o = &image.objects[i];
        char out[4096];
        snprintf(out, sizeof out, "%s/%s.%zu.%s_%u.%s", dir, base, i,
                 o->kind == MGPU_CODE_PTX ? "compute" : "sm", o->arch,
                 o->kind == MGPU_CODE_PTX ? "ptx" : "cubin");
        FILE *f = fopen(out, "wb");
        if (f == NULL || fwrite(o->code, 1, o->size, f) != o->size || fclose(f) != 0) {
            fprintf(stderr, "mgpu-ptx: cannot write %s: %s\n", out, strerror(errno));
            rc = 1;
            continue;
        }
        printf("%s\n", out);
    }
    if (image.count == 0)
        fprintf(stderr, "mgpu-ptx: %s carries no GPU code\n", path);
    mgpu_image_free(&image);
    return rc;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return EXIT_USAGE;
    }
    const char *command = argv[1];
    if (strcmp(command, "-h") == 0 || strcmp(command, "--help") == 0) {
        usage(stdout);
        return 0;
    }
    if (strcmp(command, "-V") == 0 || strcmp(command, "--version") == 0) {
        printf("mgpu-ptx %s\n", PACKAGE_VERSION);
        return 0;
    }
    if (strcmp(command, "list") == 0) {
        if (argc < 3) {
            fprintf(stderr, "mgpu-ptx: list needs a file; usage: mgpu-ptx list FILE...\n");
            return EXIT_USAGE;
        }
        int rc = 0;
        for (int i = 2; i < argc; i++)
            rc |= list_file(argv[i]);
        return rc;
    }
    if (strcmp(command, "extract") == 0) {
        if (argc != 5 || strcmp(argv[3], "-o") != 0) {
            fprintf(stderr, "mgpu-ptx: usage: mgpu-ptx extract FILE -o DIR\n");
            return EXIT_USAGE;
        }
        return extract_file(argv[2], argv[4]);
    }
    fprintf(stderr, "mgpu-ptx: unknown command '%s'; use list or extract (see mgpu-ptx --help)\n",
            command);
    return EXIT_USAGE;
}
