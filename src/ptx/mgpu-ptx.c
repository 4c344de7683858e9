/* mgpu-ptx: shows the GPU code a program, library, fatbin, cubin or PTX file
 * carries, extracts it, and rewrites PTX as mgpu does for split launches.
 * `list` tells, before any run, which kernels mgpu can split and why not. */
#include <build_config.h>

#include "base/demangle.h"
#include "ptx/elf_file.h"
#include "ptx/image.h"
#include "ptx/ptx_analysis.h"
#include "ptx/ptx_edit.h"
#include "ptx/ptx_footprint.h"
#include "ptx/ptx_probes.h"
#include "ptx/ptx_rewrite.h"
#include "ptx/ptx_text.h"

#include <errno.h>
#include <limits.h>
#include <stdarg.h>
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
    fprintf(out,
            "Usage: mgpu-ptx list FILE...\n"
            "  or:  mgpu-ptx extract FILE -o DIR\n"
            "  or:  mgpu-ptx rewrite IN.ptx -o OUT.ptx [--passes LIST] [--probe PROBE.ptx]...\n"
            "\n"
            "  list     the code objects (PTX, cubins; architectures; compression) and the\n"
            "           kernels of each FILE; whether mgpu can split each kernel across\n"
            "           GPUs and, if not, why; how each kernel uses its pointer parameters,\n"
            "           which of them a replica on each GPU can serve (MGPU_MIRROR), and its\n"
            "           footprint: the offsets from each pointer that it loads and stores at,\n"
            "           in the thread's and block's indices and the scalar parameters\n"
            "  extract  write every code object of FILE into DIR, decompressed\n"
            "  rewrite  apply mgpu's passes to a PTX file (OUT.ptx '-' writes to stdout);\n"
            "           LIST is all (default), none (parse and print only), or any of\n"
            "           block-offset,scope,device-ordinal,module-globals; each --probe links\n"
            "           a probe file (mgpu/probe.h, compiled with nvcc -ptx -rdc=true) in\n"
            "           and runs its probes in the kernels they attach to (inlined where\n"
            "           they can be: $__mgpu_inlined_NAME_N follows each), which are listed\n"
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
    unsigned analysed_arch; /* of the PTX the analysis below comes from */
    bool analysed;
    unsigned why, notes;
    char detail[128];
    char pointers[256];     /* "0 load, 1 store" */
    char values[128];       /* "3": 8-byte parameters not used as addresses */
    char mirrorable[128];   /* "1, 3": read-only pointers a replica can serve */
    char privatisable[128]; /* "2 (add.u32)": reductions each GPU can do on a copy */
    char scattered[128];    /* "0 (8x)": a sector per thread (ptx_thread_stride.h) */
    char *footprint;        /* lines of what a slice reads and writes (ptx_footprint.h), or NULL */
    int stride_bound_param;
};
struct kernel_table {
    struct kernel_row *rows;
    size_t count, cap;
    /* The rows' names, each with its row's index: looking a kernel up by
     * scanning the rows made `list` quadratic (98 000 kernels: 85 s). */
    struct ptx_name_set by_name;
    bool out_of_memory;
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

static struct kernel_row *find_row(struct kernel_table *t, const char *name)
{
    long i = ptx_name_set_find(&t->by_name, ptx_str_of(name));
    return i < 0 ? NULL : &t->rows[i];
}

static void note_kernel(const char *name, void *ctx)
{
    struct kernel_table *t = ctx;
    struct kernel_row *row = find_row(t, name);
    if (row == NULL && !t->out_of_memory) {
        if (t->count == t->cap) {
            size_t cap = t->cap ? t->cap * 2 : 64;
            struct kernel_row *grown = realloc(t->rows, cap * sizeof *grown);
            if (grown == NULL) {
                t->out_of_memory = true;
                return;
            }
            t->rows = grown;
            t->cap = cap;
        }
        row = &t->rows[t->count];
        memset(row, 0, sizeof *row);
        row->stride_bound_param = -1;
        row->name = strdup(name);
        /* The set holds the row's own copy of the name, which lives as
         * long as the table. */
        if (row->name == NULL || ptx_name_set_add(&t->by_name, ptx_str_of(row->name)) < 0) {
            free(row->name);
            t->out_of_memory = true;
            return;
        }
        t->count++;
    }
    if (row == NULL)
        return;
    if (t->current->kind == MGPU_CODE_PTX)
        append_arch(row->ptx, sizeof row->ptx, t->current->arch);
    else
        append_arch(row->sass, sizeof row->sass, t->current->arch);
}

static int compare_rows(const void *a, const void *b)
{
    return strcmp(((const struct kernel_row *)a)->name, ((const struct kernel_row *)b)->name);
}

/* Appends one item of a list ("0 load, 1 store") to out, which holds
 * *used characters: after ", " unless it is the first. Returns false, the
 * item cut short, when out is full. */
static bool append_item(char *out, size_t len, size_t *used, const char *format, ...)
{
    char item[96];
    va_list args;
    va_start(args, format);
    vsnprintf(item, sizeof item, format, args);
    va_end(args);
    int n = snprintf(out + *used, len - *used, "%s%s", *used ? ", " : "", item);
    if (n < 0 || (size_t)n >= len - *used)
        return false;
    *used += (size_t)n;
    return true;
}

/* The parameters the kernel uses as addresses, with how ("0 load, 2
 * store"), into `out`; the other 8-byte integers (a size_t, or a pointer
 * the kernel never reaches memory through) into `values` ("3"): the
 * analysis cannot tell those apart, and neither is a pointer to mgpu. */
static void describe_pointers(const struct mgpu_kernel_info *k, char *out, size_t len, char *values,
                              size_t values_len)
{
    out[0] = values[0] = '\0';
    size_t used = 0, values_used = 0;
    for (size_t i = 0; i < k->nparams && used + 1 < len; i++) {
        const struct mgpu_kernel_param *p = &k->params[i];
        if ((p->size != 8 || p->floating) && !p->aggregate)
            continue;
        if (strcmp(p->name, MGPU_PTX_GRID_PARAM) == 0)
            continue;
        if (p->use == 0 && !p->aggregate) {
            append_item(values, values_len, &values_used, "%zu", i);
            continue;
        }
        if (!append_item(out, len, &used, "%zu %s%s", i, p->aggregate ? "(struct) " : "",
                         mgpu_param_use_text(p->use)))
            break;
    }
}

/* The pointer parameters MGPU_MIRROR may serve, as sched/mirror_reads.c
 * decides less the checks at launch (that no other parameter writes, or
 * reaches, the same buffer), in a kernel that stores through no pointer of
 * unknown origin: 8-byte pointers the kernel only loads through ("0, 1",
 * replicas), or, with `reductions`, those it only updates with a
 * privatisable reduction ("2 (add.u32)"). */
static void describe_mirror_params(const struct mgpu_kernel_info *k, bool reductions, char *out,
                                   size_t len)
{
    out[0] = '\0';
    if (k->notes & MGPU_NOTE_UNKNOWN_STORE)
        return;
    size_t used = 0;
    for (size_t i = 0; i < k->nparams && used + 1 < len; i++) {
        const struct mgpu_kernel_param *p = &k->params[i];
        bool served = p->size == 8 && !p->aggregate &&
                      (reductions ? p->reduction != 0
                                  : !p->floating && p->use == MGPU_PARAM_LOAD &&
                                        strcmp(p->name, MGPU_PTX_GRID_PARAM) != 0);
        if (!served)
            continue;
        bool fits = reductions ? append_item(out, len, &used, "%zu (%s)", i,
                                             mgpu_reduction_text(p->reduction))
                               : append_item(out, len, &used, "%zu", i);
        if (!fits)
            break;
    }
}

/* The parameters whose accesses take a sector per thread, with the bytes a
 * link carries per byte used: "0 (8x)". */
static void describe_scattered(const struct mgpu_kernel_info *k, char *out, size_t len)
{
    out[0] = '\0';
    size_t used = 0;
    for (size_t i = 0; i < k->nparams && used + 1 < len; i++) {
        if (k->params[i].scatter <= 1)
            continue;
        if (!append_item(out, len, &used, "%zu (%ux)", i, (unsigned)k->params[i].scatter))
            break;
    }
}

/* Appends printf text to a malloc'd string; false when memory runs out. */
static bool append_text(char **text, size_t *len, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static bool append_text(char **text, size_t *len, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0)
        return false;
    char *grown = realloc(*text, *len + (size_t)n + 1);
    if (grown == NULL)
        return false;
    va_start(ap, fmt);
    vsnprintf(grown + *len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    *text = grown;
    *len += (size_t)n;
    return true;
}

#define FOOTPRINT_SHOWN 4 /* distinct offsets shown per slot and use */

static const char *use_verb(unsigned use)
{
    return use == MGPU_FP_LOAD ? "loads" : use == MGPU_FP_STORE ? "stores" : "atomics";
}

/* A kernel's footprint as lines for `list`: per pointer (a parameter,
 * or 8 bytes of a struct passed by value), the offsets from it of each
 * kind of access, as expressions of the thread's and block's indices and
 * the scalar parameters ("param 2"); an offset it cannot follow makes the
 * use "anywhere". Returns a malloc'd string, or NULL when memory runs out. */
static char *describe_footprint(const struct mgpu_kernel_footprint *fp)
{
    char *text = NULL;
    size_t len = 0;
    bool ok = append_text(&text, &len, "%s", "");
    if (fp->unknown)
        ok = append_text(&text, &len, "    footprint: every buffer whole: %s\n", fp->reason);
    else if (fp->nslots == 0)
        ok = append_text(&text, &len, "    footprint: no global memory through its parameters\n");
    for (size_t s = 0; ok && !fp->unknown && s < fp->nslots; s++) {
        const struct mgpu_fp_slot *slot = &fp->slots[s];
        if (slot->offset == UINT_MAX)
            ok = append_text(&text, &len,
                             "    footprint of param %d (any pointer in it):", slot->param);
        else if (slot->offset != 0)
            ok = append_text(&text, &len, "    footprint of param %d at byte %u:", slot->param,
                             slot->offset);
        else
            ok = append_text(&text, &len, "    footprint of param %d:", slot->param);
        const char *sep = " ";
        static const unsigned uses[] = {MGPU_FP_LOAD, MGPU_FP_STORE, MGPU_FP_ATOMIC};
        for (size_t u = 0; ok && u < 3; u++) {
            if (slot->whole & uses[u]) {
                ok = append_text(&text, &len, "%s%s anywhere", sep, use_verb(uses[u]));
                sep = "; ";
                continue;
            }
            char shown[FOOTPRINT_SHOWN][160];
            size_t nshown = 0, more = 0;
            for (size_t i = 0; ok && i < fp->naccesses; i++) {
                const struct mgpu_fp_access *a = &fp->accesses[i];
                if (a->slot != (int)s || a->use != uses[u])
                    continue;
                char expr[140], item[160];
                snprintf(item, sizeof item, "%s (%u B)",
                         mgpu_fp_node_text(fp, a->offset, expr, sizeof expr), a->bytes);
                bool seen = false;
                for (size_t k = 0; k < nshown && !seen; k++)
                    seen = strcmp(shown[k], item) == 0;
                if (seen)
                    continue;
                if (nshown < FOOTPRINT_SHOWN)
                    memcpy(shown[nshown++], item, sizeof item);
                else
                    more++;
            }
            if (nshown == 0)
                continue;
            ok = append_text(&text, &len, "%s%s at", sep, use_verb(uses[u]));
            for (size_t k = 0; ok && k < nshown; k++)
                ok = append_text(&text, &len, "%s %s", k ? "," : "", shown[k]);
            if (ok && more > 0)
                ok = append_text(&text, &len, " and %zu more", more);
            sep = "; ";
        }
        ok = ok && append_text(&text, &len, "\n");
    }
    if (!ok) {
        free(text);
        return NULL;
    }
    return text;
}

/* Analyses one PTX object and records the verdict of each of its kernels
 * in the rows (the newest PTX of a kernel wins). Returns 0, or -1 when
 * memory runs out (parsing and analysing fail for nothing else). */
/* Returns -1 only when memory ran out; PTX the parser refuses (blocks
 * nested too deep) is said in one line, and its kernels stay unanalysed. */
static int analyse_ptx(struct kernel_table *t, const struct mgpu_code_object *o, const char *path)
{
    struct ptx_module module;
    struct mgpu_ptx_analysis a;
    if (ptx_parse(o->code, o->size, &module) != 0) {
        if (strcmp(module.error, "out of memory") == 0)
            return -1;
        fprintf(stderr, "mgpu-ptx: %s: its compute_%u PTX cannot be parsed: %s\n", path, o->arch,
                module.error);
        return 0;
    }
    if (mgpu_ptx_analyze_accesses(&module, &a) != 0) {
        ptx_module_free(&module);
        return -1;
    }
    char err[256] = "";
    struct mgpu_ptx_rewrite rw;
    int rewritten = mgpu_ptx_rewrite(o->code, o->size, MGPU_PASS_ALL, &rw, err, sizeof err);
    if (rewritten == MGPU_PTX_REWRITE_NO_MEMORY) {
        mgpu_ptx_analysis_free(&a);
        ptx_module_free(&module);
        return -1;
    }
    bool rewrites = rewritten == 0;
    if (rewrites)
        mgpu_ptx_rewrite_free(&rw);
    for (size_t i = 0; i < a.nkernels; i++) {
        const struct mgpu_kernel_info *k = &a.kernels[i];
        struct kernel_row *row = find_row(t, k->name);
        if (row == NULL || (row->analysed && row->analysed_arch > o->arch))
            continue;
        row->analysed = true;
        row->analysed_arch = o->arch;
        row->why = k->why | (rewrites ? 0 : MGPU_WHY_REWRITE);
        row->notes = k->notes;
        row->stride_bound_param = k->stride_bound_param;
        snprintf(row->detail, sizeof row->detail, "%s", k->why ? k->detail : rewrites ? "" : err);
        describe_pointers(k, row->pointers, sizeof row->pointers, row->values, sizeof row->values);
        describe_mirror_params(k, false, row->mirrorable, sizeof row->mirrorable);
        describe_mirror_params(k, true, row->privatisable, sizeof row->privatisable);
        describe_scattered(k, row->scattered, sizeof row->scattered);
        free(row->footprint);
        row->footprint = NULL;
        if (k->footprint != NULL) {
            row->footprint = describe_footprint(k->footprint);
            if (row->footprint == NULL) {
                mgpu_ptx_analysis_free(&a);
                ptx_module_free(&module);
                return -1;
            }
        }
    }
    mgpu_ptx_analysis_free(&a);
    ptx_module_free(&module);
    return 0;
}

static void print_verdict(const struct kernel_row *row)
{
    if (!row->ptx[0]) {
        printf("    cannot be split: no PTX, machine code only\n");
        return;
    }
    if (!row->analysed) {
        printf("    cannot be split: its PTX could not be analysed\n");
        return;
    }
    if (row->why) {
        printf("    cannot be split:");
        const char *sep = " ";
        for (unsigned b = 0; b < MGPU_WHY_COUNT; b++)
            if (row->why & (1u << b)) {
                printf("%s%s", sep, mgpu_unsplittable_text(1u << b));
                sep = "; ";
            }
        printf("%s%s%s\n", row->detail[0] ? " (" : "", row->detail, row->detail[0] ? ")" : "");
    } else if (row->stride_bound_param >= 0) {
        printf("    can be split: a grid-stride loop bounded by parameter %d, cut by iterations\n",
               row->stride_bound_param);
    } else {
        printf("    can be split\n");
    }
    if (row->pointers[0])
        printf("    pointer parameters: %s\n", row->pointers);
    if (row->values[0])
        printf("    8-byte parameters not used as addresses: %s\n", row->values);
    if (row->mirrorable[0])
        printf("    read only, replicated with MGPU_MIRROR=always: %s\n", row->mirrorable);
    if (row->privatisable[0])
        printf("    reductions, privatised per GPU with MGPU_MIRROR=always: %s\n",
               row->privatisable);
    if (row->scattered[0])
        printf("    neighbouring threads a sector apart (bytes over a link per byte used): %s\n",
               row->scattered);
    for (unsigned b = 0; b < MGPU_NOTE_COUNT; b++)
        if ((row->notes & (1u << b)) && (1u << b) != MGPU_NOTE_READS_GRID)
            printf("    note: %s\n", mgpu_kernel_note_text(1u << b));
    if (row->footprint != NULL)
        fputs(row->footprint, stdout);
}

static int list_file(const char *path)
{
    struct mgpu_image image;
    if (read_image(path, &image) != 0)
        return 1;
    printf("%s: %s, %zu code object%s\n", path, mgpu_image_kind_name(image.kind), image.count,
           image.count == 1 ? "" : "s");
    struct kernel_table table;
    memset(&table, 0, sizeof table);
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
    for (size_t i = 0; i < image.count && !table.out_of_memory; i++)
        if (image.objects[i].kind == MGPU_CODE_PTX &&
            analyse_ptx(&table, &image.objects[i], path) != 0)
            table.out_of_memory = true;
    ptx_name_set_free(&table.by_name); /* the sort below moves the rows */
    if (table.out_of_memory) {
        /* A verdict from part of the code would be a wrong one. */
        fprintf(stderr, "mgpu-ptx: %s: out of memory analysing its kernels\n", path);
        for (size_t i = 0; i < table.count; i++) {
            free(table.rows[i].name);
            free(table.rows[i].footprint);
        }
        free(table.rows);
        mgpu_image_free(&image);
        return 1;
    }
    if (table.count > 1) /* with no kernels, rows is NULL: qsort must not see it */
        qsort(table.rows, table.count, sizeof *table.rows, compare_rows);
    size_t splittable = 0;
    printf("kernels: %zu\n", table.count);
    for (size_t i = 0; i < table.count; i++) {
        struct kernel_row *row = &table.rows[i];
        char *pretty = mgpu_demangle(row->name);
        printf("  %s\n    %s; PTX: %s%s; machine code: %s%s\n", pretty ? pretty : row->name,
               row->name, row->ptx[0] ? "compute_" : "none", row->ptx,
               row->sass[0] ? "sm_" : "none", row->sass);
        print_verdict(row);
        splittable += row->ptx[0] && row->analysed && !row->why;
        free(pretty);
        free(row->name);
        free(row->footprint);
    }
    printf("%zu of %zu kernel%s can be split\n", splittable, table.count,
           table.count == 1 ? "" : "s");
    free(table.rows);
    mgpu_image_free(&image);
    return 0;
}

/* `mgpu-ptx rewrite --probe`: each kernel a probe attaches to, listed. */
struct attachments {
    unsigned next_id;
    FILE *out; /* stderr when the PTX goes to stdout */
};

static unsigned list_attachment(void *ctx, const char *kernel, const size_t *probes, size_t n)
{
    struct attachments *a = ctx;
    fprintf(a->out, "  kernel %u: %s:", a->next_id, kernel);
    for (size_t i = 0; i < n; i++)
        fprintf(a->out, " %zu", probes[i]);
    fprintf(a->out, "\n");
    return a->next_id++;
}

static char *demangle_for_probes(const char *mangled)
{
    return mgpu_demangle(mangled);
}

/* The probe files named on the command line, read into a set. */
static int read_probes(char **files, int nfiles, struct ptx_probe_set *set)
{
    for (int i = 0; i < nfiles; i++) {
        struct mapped_file f;
        if (map_file(files[i], &f) != 0)
            return -1;
        char err[512];
        int rc = ptx_probe_set_add(set, files[i], f.data, f.size, err, sizeof err);
        munmap(f.data, f.size);
        if (rc != 0) {
            fprintf(stderr, "mgpu-ptx: %s\n", err);
            return -1;
        }
    }
    return 0;
}

static int rewrite_file(const char *in, const char *out, const char *pass_list, char **probe_files,
                        int nprobe_files)
{
    long passes = mgpu_ptx_parse_passes(pass_list);
    if (passes < 0) {
        fprintf(stderr,
                "mgpu-ptx: unknown pass in '%s'; use all, none, or any of "
                "block-offset,scope,device-ordinal,module-globals\n",
                pass_list);
        return EXIT_USAGE;
    }
    struct mapped_file f;
    if (map_file(in, &f) != 0)
        return 1;
    if (!mgpu_ptx_is_text(f.data, f.size)) {
        fprintf(stderr,
                "mgpu-ptx: %s is not PTX text; 'mgpu-ptx extract' gets the PTX out of a "
                "program, library or fatbin\n",
                in);
        munmap(f.data, f.size);
        return 1;
    }
    char err[512];
    struct mgpu_ptx_rewrite rw;
    struct ptx_probe_set set = {0};
    if (read_probes(probe_files, nprobe_files, &set) != 0) {
        ptx_probe_set_free(&set);
        munmap(f.data, f.size);
        return 1;
    }
    struct attachments attached = {0, strcmp(out, "-") == 0 ? stderr : stdout};
    struct ptx_probe_inject inject = {
        .set = &set, .demangle = demangle_for_probes, .attach = list_attachment, .ctx = &attached};
    if (nprobe_files > 0)
        fprintf(attached.out, "probes attached (kernel id: name: probe indexes):\n");
    int rc = mgpu_ptx_rewrite_probed(f.data, f.size, (unsigned)passes,
                                     nprobe_files > 0 ? &inject : NULL, &rw, err, sizeof err);
    ptx_probe_set_free(&set);
    munmap(f.data, f.size);
    if (rc != 0) {
        fprintf(stderr, "mgpu-ptx: cannot rewrite %s: %s\n", in, err);
        return 1;
    }
    bool to_stdout = strcmp(out, "-") == 0;
    FILE *o = to_stdout ? stdout : fopen(out, "wb");
    if (o == NULL || fwrite(rw.ptx, 1, rw.size, o) != rw.size || (!to_stdout && fclose(o) != 0)) {
        fprintf(stderr, "mgpu-ptx: cannot write %s: %s\n", out, strerror(errno));
        mgpu_ptx_rewrite_free(&rw);
        return 1;
    }
    if (!to_stdout) {
        printf("%s: %zu bytes\n", out, rw.size);
        for (size_t i = 0; i < rw.globals.nredirected; i++)
            printf("  redirected to the home GPU: %s\n", rw.globals.redirected[i]);
        for (size_t i = 0; i < rw.globals.nconstants; i++)
            printf("  constant kept per GPU, refreshed from the home module: %s (%zu bytes)\n",
                   rw.globals.constants[i], rw.globals.constant_sizes[i]);
    }
    mgpu_ptx_rewrite_free(&rw);
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
    if (strcmp(command, "rewrite") == 0) {
        const char *in = NULL, *out = NULL, *passes = "all";
        char **probe_files = calloc((size_t)argc, sizeof *probe_files);
        int nprobe_files = 0;
        if (probe_files == NULL) {
            fprintf(stderr, "mgpu-ptx: out of memory\n");
            return 1;
        }
        for (int i = 2; i < argc; i++) {
            if (strcmp(argv[i], "-o") == 0 && i + 1 < argc)
                out = argv[++i];
            else if (strcmp(argv[i], "--probe") == 0 && i + 1 < argc)
                probe_files[nprobe_files++] = argv[++i];
            else if (strcmp(argv[i], "--passes") == 0 && i + 1 < argc)
                passes = argv[++i];
            else if (strncmp(argv[i], "--passes=", 9) == 0)
                passes = argv[i] + 9;
            else if (argv[i][0] != '-' && in == NULL)
                in = argv[i];
            else
                in = out = NULL, i = argc;
        }
        if (in == NULL || out == NULL) {
            fprintf(stderr, "mgpu-ptx: usage: mgpu-ptx rewrite IN.ptx -o OUT.ptx [--passes LIST] "
                            "[--probe PROBE.ptx]...\n");
            free(probe_files);
            return EXIT_USAGE;
        }
        int rc = rewrite_file(in, out, passes, probe_files, nprobe_files);
        free(probe_files);
        return rc;
    }
    fprintf(stderr,
            "mgpu-ptx: unknown command '%s'; use list, extract or rewrite (see mgpu-ptx --help)\n",
            command);
    return EXIT_USAGE;
}
