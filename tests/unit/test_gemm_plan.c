/* The cutting of a GEMM into per-GPU parts (blas/gemm_plan.c): every
 * transpose and odd sizes, computed whole and part by part with a CPU
 * GEMM on the parts' offsets, which must give the same C bit for bit;
 * cuts that follow C's owners; batches; what stays whole. */
#include "blas/gemm_plan.h"

#include "check.h"

#include <stdint.h>
#include <stdlib.h>

/* Column-major C = alpha op(A) op(B) + beta C, summed in one order. */
static void reference_gemm(int transa, int transb, long long m, long long n, long long k,
                           double alpha, const double *a, long long lda, const double *b,
                           long long ldb, double beta, double *c, long long ldc)
{
    for (long long j = 0; j < n; j++)
        for (long long i = 0; i < m; i++) {
            double sum = 0;
            for (long long l = 0; l < k; l++) {
                double x = transa == MGPU_GEMM_OP_N ? a[i + l * lda] : a[l + i * lda];
                double y = transb == MGPU_GEMM_OP_N ? b[l + j * ldb] : b[j + l * ldb];
                sum += x * y;
            }
            c[i + j * ldc] = alpha * sum + beta * c[i + j * ldc];
        }
}

static double *filled(size_t count, unsigned seed)
{
    double *p = malloc(count * sizeof *p);
    for (size_t i = 0; i < count; i++) {
        seed = seed * 1103515245u + 12345u;
        p[i] = (double)((seed >> 8) % 2001) / 1000.0 - 1.0;
    }
    return p;
}

/* Whole and by parts must agree exactly; the parts must cover C once. */
static void check_parts_compute(int transa, int transb, long long m, long long n, long long k,
                                int ngpus, enum mgpu_gemm_cut expected)
{
    long long lda = (transa == MGPU_GEMM_OP_N ? m : k) + 3;
    long long ldb = (transb == MGPU_GEMM_OP_N ? k : n) + 1;
    long long ldc = m + 2;
    long long a_cols = transa == MGPU_GEMM_OP_N ? k : m;
    long long b_cols = transb == MGPU_GEMM_OP_N ? n : k;
    double *a = filled((size_t)(lda * a_cols), 1), *b = filled((size_t)(ldb * b_cols), 2);
    double *whole = filled((size_t)(ldc * n), 3), *parts = filled((size_t)(ldc * n), 3);
    reference_gemm(transa, transb, m, n, k, 1.5, a, lda, b, ldb, -0.5, whole, ldc);

    struct mgpu_gemm_shape s = {transa, transb, m, n, k, lda, ldb, ldc, 1, false, 8, 8, 8};
    struct mgpu_gemm_plan plan;
    mgpu_gemm_plan_make(&s, ngpus, 0, NULL, NULL, &plan);
    CHECK(plan.cut == expected);
    long long covered = 0;
    for (int p = 0; p < plan.nparts; p++) {
        struct mgpu_gemm_part_shape ps;
        mgpu_gemm_part_shape(&s, &plan, p, &ps);
        CHECK(plan.parts[p].begin == covered);
        covered = plan.parts[p].end;
        CHECK(plan.parts[p].gpu == p);
        reference_gemm(transa, transb, ps.m, ps.n, k, 1.5, a + ps.a_offset, lda, b + ps.b_offset,
                       ldb, -0.5, parts + ps.c_offset, ldc);
    }
    CHECK(covered == (plan.cut == MGPU_GEMM_BY_ROWS ? m : n));
    CHECK(plan.nparts == (int)(ngpus < covered ? ngpus : covered));
    CHECK(memcmp(whole, parts, (size_t)(ldc * n) * sizeof *whole) == 0);
    free(a);
    free(b);
    free(whole);
    free(parts);
}

/* A buffer whose bytes belong to GPU 0 up to bounds[0], GPU 1 up to
 * bounds[1], and so on; -1 past the last. */
struct owners {
    uint64_t base;
    uint64_t bounds[8];
    int count;
};

static int owner_by_bounds(uint64_t address, void *arg)
{
    const struct owners *o = arg;
    for (int g = 0; g < o->count; g++)
        if (address < o->base + o->bounds[g])
            return g;
    return -1;
}

static int owner_alternating(uint64_t address, void *arg)
{
    (void)arg;
    return (int)((address >> 12) & 1);
}

static void check_owner_cuts(void)
{
    /* 100 columns of 64 doubles (512 bytes each), owners changing at
     * columns 20, 47 and 71: the cuts fall exactly there. */
    struct mgpu_gemm_shape s = {
        MGPU_GEMM_OP_N, MGPU_GEMM_OP_T, 64, 100, 50, 64, 100, 64, 1, false, 8, 8, 8};
    struct owners o = {0x10000000, {20 * 512, 47 * 512, 71 * 512, 100 * 512}, 4};
    struct mgpu_gemm_plan plan;
    mgpu_gemm_plan_make(&s, 4, o.base, owner_by_bounds, &o, &plan);
    CHECK(plan.cut == MGPU_GEMM_BY_COLUMNS);
    CHECK(plan.by_owner);
    CHECK(plan.nparts == 4);
    long long cuts[5] = {0, 20, 47, 71, 100};
    for (int p = 0; p < plan.nparts && p < 4; p++) {
        CHECK(plan.parts[p].gpu == p);
        CHECK(plan.parts[p].begin == cuts[p]);
        CHECK(plan.parts[p].end == cuts[p + 1]);
    }

    /* A part more than half again the even share: even cuts instead. */
    struct owners lopsided = {0x10000000, {5 * 512, 10 * 512, 15 * 512, 100 * 512}, 4};
    mgpu_gemm_plan_make(&s, 4, lopsided.base, owner_by_bounds, &lopsided, &plan);
    CHECK(plan.cut == MGPU_GEMM_BY_COLUMNS && !plan.by_owner && plan.nparts == 4);
    CHECK(plan.parts[1].begin == 25 && plan.parts[3].end == 100);

    /* Owners that come back (interleaved pages): even cuts. */
    struct mgpu_gemm_shape wide = s;
    wide.m = wide.ldc = 512; /* 4 KiB columns: owners alternate column by column */
    mgpu_gemm_plan_make(&wide, 2, 0x10000000, owner_alternating, NULL, &plan);
    CHECK(plan.cut == MGPU_GEMM_BY_COLUMNS && !plan.by_owner && plan.nparts == 2);
    CHECK(plan.parts[0].end == 50);

    /* All on one GPU (owner 0 throughout): even cuts, every GPU computes. */
    struct owners one = {0x10000000, {100 * 512}, 1};
    mgpu_gemm_plan_make(&s, 4, one.base, owner_by_bounds, &one, &plan);
    CHECK(plan.cut == MGPU_GEMM_BY_COLUMNS && !plan.by_owner && plan.nparts == 4);

    /* Outside the pool (-1): even cuts. */
    struct owners none = {0x10000000, {0}, 0};
    mgpu_gemm_plan_make(&s, 4, none.base, owner_by_bounds, &none, &plan);
    CHECK(plan.cut == MGPU_GEMM_BY_COLUMNS && !plan.by_owner && plan.nparts == 4);
}

static void check_batches_and_whole(void)
{
    struct mgpu_gemm_shape s = {
        MGPU_GEMM_OP_N, MGPU_GEMM_OP_N, 32, 32, 32, 32, 32, 32, 10, false, 4, 4, 4};
    struct mgpu_gemm_plan plan;
    struct mgpu_gemm_part_shape ps;
    /* Ten matrices over four GPUs: 2, 3, 2, 3 (offsets in matrices). */
    mgpu_gemm_plan_make(&s, 4, 0, NULL, NULL, &plan);
    CHECK(plan.cut == MGPU_GEMM_BY_BATCH && plan.nparts == 4);
    long long total = 0;
    for (int p = 0; p < plan.nparts; p++) {
        mgpu_gemm_part_shape(&s, &plan, p, &ps);
        CHECK(ps.a_offset == plan.parts[p].begin && ps.c_offset == plan.parts[p].begin);
        CHECK(ps.m == 32 && ps.n == 32);
        total += ps.batch;
    }
    CHECK(total == 10);

    /* Three strided matrices over four GPUs: each matrix cut by columns. */
    s.batch = 3;
    mgpu_gemm_plan_make(&s, 4, 0, NULL, NULL, &plan);
    CHECK(plan.cut == MGPU_GEMM_BY_COLUMNS && plan.nparts == 4);
    mgpu_gemm_part_shape(&s, &plan, 1, &ps);
    CHECK(ps.batch == 3 && ps.n == 8 && ps.c_offset == 8 * 32 && ps.b_offset == 8 * 32);

    /* The same through pointer arrays: only whole matrices; stays whole. */
    s.pointer_arrays = true;
    mgpu_gemm_plan_make(&s, 4, 0, NULL, NULL, &plan);
    CHECK(plan.cut == MGPU_GEMM_WHOLE && plan.nparts == 1 && plan.parts[0].gpu == 0);
    s.batch = 9;
    mgpu_gemm_plan_make(&s, 8, 0, NULL, NULL, &plan);
    CHECK(plan.cut == MGPU_GEMM_BY_BATCH && plan.nparts == 8);

    /* One GPU, empty GEMMs, too small in both directions. */
    s.pointer_arrays = false;
    s.batch = 1;
    mgpu_gemm_plan_make(&s, 1, 0, NULL, NULL, &plan);
    CHECK(plan.cut == MGPU_GEMM_WHOLE);
    s.n = 0;
    mgpu_gemm_plan_make(&s, 4, 0, NULL, NULL, &plan);
    CHECK(plan.cut == MGPU_GEMM_WHOLE);
    s.n = 3;
    s.m = 3;
    mgpu_gemm_plan_make(&s, 4, 0, NULL, NULL, &plan);
    CHECK(plan.cut == MGPU_GEMM_WHOLE);
    /* k = 0 (C = beta C) still cuts. */
    s.m = s.n = 64;
    s.k = 0;
    mgpu_gemm_plan_make(&s, 4, 0, NULL, NULL, &plan);
    CHECK(plan.cut == MGPU_GEMM_BY_COLUMNS);

    /* Row cuts keep 8-row boundaries where every part gets 8 rows. */
    s.m = 100;
    s.n = 2;
    mgpu_gemm_plan_make(&s, 4, 0, NULL, NULL, &plan);
    CHECK(plan.cut == MGPU_GEMM_BY_ROWS && plan.nparts == 4);
    for (int p = 0; p + 1 < plan.nparts; p++)
        CHECK(plan.parts[p].end % 8 == 0);
    CHECK(plan.parts[3].end == 100);
}

int main(void)
{
    int ops[2] = {MGPU_GEMM_OP_N, MGPU_GEMM_OP_T};
    for (int ta = 0; ta < 2; ta++)
        for (int tb = 0; tb < 2; tb++) {
            check_parts_compute(ops[ta], ops[tb], 37, 29, 13, 4, MGPU_GEMM_BY_COLUMNS);
            check_parts_compute(ops[ta], ops[tb], 37, 29, 13, 3, MGPU_GEMM_BY_COLUMNS);
            check_parts_compute(ops[ta], ops[tb], 11, 7, 3, 8, MGPU_GEMM_BY_ROWS);
            check_parts_compute(ops[ta], ops[tb], 61, 3, 17, 4, MGPU_GEMM_BY_ROWS);
            check_parts_compute(ops[ta], ops[tb], 9, 9, 1, 2, MGPU_GEMM_BY_COLUMNS);
        }
    check_owner_cuts();
    check_batches_and_whole();
    CHECK_DONE();
}
