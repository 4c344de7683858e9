/* The cost of mgpu's PTX work on one large module: parse and print
 * unchanged, parse + every pass + print (what the runtime does before it
 * compiles a module for each GPU), and the kernel analysis. Medians of
 * ROUNDS runs, wall-clock time on the host (no GPU involved).
 *   bench/ptx_rewrite_bench FILE.ptx [ROUNDS=11] */
#include "ptx/ptx_analysis.h"
#include "ptx/ptx_module.h"
#include "ptx/ptx_rewrite.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int compare(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, compare);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: ptx_rewrite_bench FILE.ptx [ROUNDS]\n");
        return 2;
    }
    int rounds = argc > 2 ? atoi(argv[2]) : 11;
    if (rounds < 1 || rounds > 1000)
        rounds = 11;
    FILE *f = fopen(argv[1], "rb");
    if (f == NULL) {
        perror(argv[1]);
        return 1;
    }
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    rewind(f);
    char *text = malloc((size_t)size + 1);
    if (text == NULL || fread(text, 1, (size_t)size, f) != (size_t)size) {
        fprintf(stderr, "cannot read %s\n", argv[1]);
        return 1;
    }
    fclose(f);
    text[size] = '\0';

    double *print_only = calloc((size_t)rounds, sizeof(double));
    double *rewrite = calloc((size_t)rounds, sizeof(double));
    double *analysis = calloc((size_t)rounds, sizeof(double));
    size_t instructions = 0, kernels = 0, splittable = 0, out_size = 0;
    char err[256];
    for (int r = 0; r < rounds; r++) {
        struct mgpu_ptx_rewrite rw;
        double t0 = now();
        if (mgpu_ptx_rewrite(text, (size_t)size, 0, &rw, err, sizeof err) != 0) {
            fprintf(stderr, "print: %s\n", err);
            return 1;
        }
        double t1 = now();
        mgpu_ptx_rewrite_free(&rw);
        double t2 = now();
        if (mgpu_ptx_rewrite(text, (size_t)size, MGPU_PASS_ALL, &rw, err, sizeof err) != 0) {
            fprintf(stderr, "rewrite: %s\n", err);
            return 1;
        }
        double t3 = now();
        out_size = rw.size;
        mgpu_ptx_rewrite_free(&rw);

        struct ptx_module m;
        struct mgpu_ptx_analysis a;
        if (ptx_parse(text, (size_t)size, &m) != 0)
            return 1;
        double t4 = now();
        if (mgpu_ptx_analyze(&m, &a) != 0)
            return 1;
        double t5 = now();
        instructions = 0;
        for (size_t i = 0; i < m.ntop; i++)
            if (m.top[i]->kind == PTX_FUNCTION)
                for (size_t j = 0; j < m.top[i]->u.func.nbody; j++)
                    instructions += m.top[i]->u.func.body[j]->kind == PTX_INSTRUCTION;
        kernels = a.nkernels;
        splittable = 0;
        for (size_t k = 0; k < a.nkernels; k++)
            splittable += a.kernels[k].why == 0;
        mgpu_ptx_analysis_free(&a);
        ptx_module_free(&m);
        print_only[r] = t1 - t0;
        rewrite[r] = t3 - t2;
        analysis[r] = t5 - t4;
    }
    printf("PTX: %s, %.1f MB, %zu instructions, %zu kernels (%zu can be split); rewritten: %.1f "
           "MB\n\n",
           argv[1], (double)size / 1e6, instructions, kernels, splittable, (double)out_size / 1e6);
    printf("| step (median of %d) | time | MB/s |\n| --- | --- | --- |\n", rounds);
    double p = median(print_only, rounds), w = median(rewrite, rounds),
           a = median(analysis, rounds);
    printf("| parse + print | %.3f s | %.0f |\n", p, (double)size / 1e6 / p);
    printf("| parse + all passes + print | %.3f s | %.0f |\n", w, (double)size / 1e6 / w);
    printf("| analysis (module parsed) | %.3f s | %.0f |\n", a, (double)size / 1e6 / a);
    free(print_only);
    free(rewrite);
    free(analysis);
    free(text);
    return 0;
}
