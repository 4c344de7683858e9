/* Unit tests of the GEMM cut-or-not decisions (blas/gemm_policy.c) with
 * the driver's events stubbed: each timed call takes the time the test
 * sets. A shape's first call runs whole untimed, the second whole timed;
 * a shape measured under 100 us whole is never cut, nor one whose
 * estimate cannot beat its whole call until it is asked again, as its
 * calls double (a mirror's copies are shared over the calls); the
 * best of two cut tries, however slow the first (it pays the other GPUs'
 * set-up), is weighed against the whole call; MGPU_SPLIT=always cuts
 * every call.
 * The numbers are this project's measurements on 4 x H100 (torch.mm of
 * 8192^3: BF16 1.37 ms whole, 8.75 ms cut; FP32 21.2 ms and 5.57 ms). */
#include "check.h"
#include "event_stubs.h"

#include "base/config.h"
#include "blas/gemm_policy.h"

#include <string.h>

struct mgpu_config mgpu_cfg;
struct mgpu_driver_api mgpu_drv;

static double estimated_us = -1.0; /* what the estimate says */
static double shared_copy_us;      /* and a copy shared over the calls so far */
static int estimates;
static unsigned long asked_at[8]; /* the calls so far at each of the last shape's questions */

static double estimate(void *arg, double whole_us, unsigned long calls)
{
    (void)arg;
    (void)whole_us;
    asked_at[estimates++ % 8] = calls;
    return estimated_us + shared_copy_us / (double)calls;
}

static const struct mgpu_blas_library lib_a, lib_b;

/* One call of an m x m x m GEMM of `lib`; whole calls take whole_us, cut
 * ones split_us. Returns whether it was cut; *timed whether it was timed,
 * *why why it ran whole. */
static bool call(const struct mgpu_blas_library *lib, const char *name, long long m,
                 double whole_us, double split_us, bool *timed, enum mgpu_gemm_policy_whole *why)
{
    struct mgpu_gemm_call c = {.name = name, .m = m, .n = m, .k = m, .batch = 1};
    struct mgpu_gemm_trial trial;
    bool split = mgpu_gemm_policy_choose(lib, &c, estimate, NULL, &trial, why);
    CHECK(split == trial.split);
    CHECK(split == (*why == MGPU_GEMM_WHOLE_SPLITS));
    *timed = trial.shape != NULL;
    stub_elapsed_ms = (float)((split ? split_us : whole_us) / 1000.0);
    mgpu_gemm_trial_begin(&trial, NULL);
    mgpu_gemm_trial_end(&trial, NULL, CUDA_SUCCESS);
    return split;
}

int main(void)
{
    mgpu_cfg.try_budget_off = true; /* the policy alone */
    stub_events_install();
    mgpu_cfg.split = MGPU_SPLIT_AUTO;
    static const char bf16[] = "bf16", fp32[] = "fp32", small[] = "small", costly[] = "costly";
    bool timed;
    enum mgpu_gemm_policy_whole why;

    /* BF16: whole, whole timed, two cut tries at 6.4x: whole from then on. */
    CHECK(!call(&lib_a, bf16, 8192, 1370.0, 8750.0, &timed, &why) && !timed &&
          why == MGPU_GEMM_WHOLE_FIRST);
    CHECK(!call(&lib_a, bf16, 8192, 1370.0, 8750.0, &timed, &why) && timed &&
          why == MGPU_GEMM_WHOLE_FIRST);
    CHECK(call(&lib_a, bf16, 8192, 1370.0, 8750.0, &timed, &why) && timed);
    CHECK(call(&lib_a, bf16, 8192, 1370.0, 8750.0, &timed, &why) && timed);
    CHECK(estimates == 1);
    for (int i = 0; i < 20; i++)
        CHECK(!call(&lib_a, bf16, 8192, 1370.0, 8750.0, &timed, &why) && !timed &&
              why == MGPU_GEMM_WHOLE_MEASURED);

    /* FP32: two cut tries, the first paying the other GPUs' set-up (1058
     * ms, as measured), then cut from then on; the estimate asked once. */
    CHECK(!call(&lib_a, fp32, 8192, 21200.0, 5570.0, &timed, &why) && !timed);
    CHECK(!call(&lib_a, fp32, 8192, 21200.0, 5570.0, &timed, &why) && timed);
    CHECK(call(&lib_a, fp32, 8192, 21200.0, 1058000.0, &timed, &why) && timed);
    CHECK(call(&lib_a, fp32, 8192, 21200.0, 5570.0, &timed, &why) && timed);
    CHECK(estimates == 2);
    for (int i = 0; i < 20; i++)
        CHECK(call(&lib_a, fp32, 8192, 21200.0, 5570.0, &timed, &why) && !timed);
    /* The same shape from another cuBLAS is a shape of its own. */
    CHECK(!call(&lib_b, fp32, 8192, 21200.0, 5570.0, &timed, &why) && !timed &&
          why == MGPU_GEMM_WHOLE_FIRST);

    /* A split a bit slower than whole: two tries, then whole. */
    CHECK(!call(&lib_a, fp32, 4096, 3000.0, 3100.0, &timed, &why) && !timed);
    CHECK(!call(&lib_a, fp32, 4096, 3000.0, 3100.0, &timed, &why) && timed);
    CHECK(call(&lib_a, fp32, 4096, 3000.0, 3100.0, &timed, &why) && timed);
    CHECK(call(&lib_a, fp32, 4096, 3000.0, 3100.0, &timed, &why) && timed);
    for (int i = 0; i < 10; i++)
        CHECK(!call(&lib_a, fp32, 4096, 3000.0, 3100.0, &timed, &why) && !timed &&
              why == MGPU_GEMM_WHOLE_MEASURED);

    /* Under 100 us whole: never cut, never timed again, the estimate not asked. */
    int before = estimates;
    CHECK(!call(&lib_a, small, 1024, 60.0, 20.0, &timed, &why) && !timed);
    CHECK(!call(&lib_a, small, 1024, 60.0, 20.0, &timed, &why) && timed);
    for (int i = 0; i < 10; i++)
        CHECK(!call(&lib_a, small, 1024, 60.0, 20.0, &timed, &why) && !timed &&
              why == MGPU_GEMM_WHOLE_SHORT);
    CHECK(estimates == before);

    /* An estimate at or above the whole call: not tried, asked again as
     * its calls double (at the 3rd, 6th and 12th of 12 calls). */
    estimated_us = 2000.0;
    CHECK(!call(&lib_a, costly, 8192, 1370.0, 900.0, &timed, &why) && !timed);
    CHECK(!call(&lib_a, costly, 8192, 1370.0, 900.0, &timed, &why) && timed);
    for (int i = 0; i < 10; i++)
        CHECK(!call(&lib_a, costly, 8192, 1370.0, 900.0, &timed, &why) && !timed &&
              why == MGPU_GEMM_WHOLE_ESTIMATE);
    CHECK(estimates == before + 3);
    CHECK(asked_at[before % 8] == 3 && asked_at[(before + 1) % 8] == 6 &&
          asked_at[(before + 2) % 8] == 12);

    /* BF16 torch.mm at -n 4 with mirrors: the parts' own work and slices
     * 610 us, A's copies to three GPUs 1100 us once. Over 3 calls 977 us,
     * under the 1343 us whole: tried at the third call, and cut from then
     * on when its tries are faster. */
    static const char mirrored[] = "mirrored";
    estimated_us = 610.0;
    shared_copy_us = 1100.0;
    CHECK(!call(&lib_a, mirrored, 8192, 1343.0, 700.0, &timed, &why) && !timed);
    CHECK(!call(&lib_a, mirrored, 8192, 1343.0, 700.0, &timed, &why) && timed);
    CHECK(call(&lib_a, mirrored, 8192, 1343.0, 1900.0, &timed, &why) && timed);
    CHECK(call(&lib_a, mirrored, 8192, 1343.0, 700.0, &timed, &why) && timed);
    for (int i = 0; i < 5; i++)
        CHECK(call(&lib_a, mirrored, 8192, 1343.0, 700.0, &timed, &why) && !timed);
    /* Counted at every call (calls 1), the same copies keep it whole. */
    estimated_us = 610.0 + 1100.0;
    shared_copy_us = 0.0;
    CHECK(!call(&lib_a, mirrored, 2048, 1343.0, 700.0, &timed, &why) && !timed);
    CHECK(!call(&lib_a, mirrored, 2048, 1343.0, 700.0, &timed, &why) && timed);
    CHECK(!call(&lib_a, mirrored, 2048, 1343.0, 700.0, &timed, &why) && !timed &&
          why == MGPU_GEMM_WHOLE_ESTIMATE);
    shared_copy_us = 0.0;

    /* An estimate below it: tried. */
    estimated_us = 1000.0;
    CHECK(!call(&lib_a, costly, 4096, 1370.0, 900.0, &timed, &why) && !timed);
    CHECK(!call(&lib_a, costly, 4096, 1370.0, 900.0, &timed, &why) && timed);
    CHECK(call(&lib_a, costly, 4096, 1370.0, 900.0, &timed, &why) && timed);

    /* The report's lines: each shape measured whole, its times, its way. */
    char lines[16][160];
    size_t n = mgpu_gemm_policy_describe(lines, 16);
    bool bf16_line = false, fp32_line = false, small_line = false;
    for (size_t i = 0; i < n; i++) {
        bf16_line |= strcmp(lines[i], "  measured: bf16 8192x8192x8192: whole 1.370 ms, cut 8.750 "
                                      "ms (2 tries): whole") == 0;
        fp32_line |= strcmp(lines[i], "  measured: fp32 8192x8192x8192: whole 21.200 ms, cut "
                                      "5.570 ms (2 tries): cut") == 0;
        small_line |=
            strcmp(lines[i], "  measured: small 1024x1024x1024: whole 0.060 ms, cut never "
                             "tried: whole") == 0;
    }
    CHECK(bf16_line && fp32_line && small_line);
    CHECK(mgpu_gemm_policy_describe(lines, 1) == 1);

    /* MGPU_SPLIT=always: every call cut, untimed, even the first. */
    mgpu_cfg.split = MGPU_SPLIT_ALWAYS;
    CHECK(call(&lib_a, small, 512, 60.0, 20.0, &timed, &why) && !timed);
    CHECK(call(&lib_a, bf16, 8192, 1370.0, 8750.0, &timed, &why) && !timed);
    return check_failures != 0;
}
