/* Owns measuring a GPU's clocks against the host's (probe_clock.h): one
 * kernel of its own, loaded in the current context and unloaded after. */
#include "probes/probe_clock.h"

#include "base/monotonic_clock.h"
#include "base/real_driver.h"

#include <stdint.h>

/* out[0]: the global timer as the kernel starts. With spin_ns > 0 the
 * kernel also spins that long on the global timer: out[1] its end,
 * out[2] the clock64 cycles it took, out[3] the smallest nonzero step of
 * the timer it saw. */
static const char clock_ptx[] =
    ".version 7.0\n.target sm_70\n.address_size 64\n"
    ".visible .entry mgpu_probe_clock(.param .u64 out, .param .u64 spin_ns)\n{\n"
    ".reg .b64 %o, %s, %t0, %t, %prev, %c0, %c, %step, %d;\n.reg .pred %p, %q;\n"
    "ld.param.u64 %o, [out];\nld.param.u64 %s, [spin_ns];\n"
    "mov.u64 %t0, %globaltimer;\nmov.u64 %c0, %clock64;\nst.u64 [%o], %t0;\n"
    "setp.eq.u64 %p, %s, 0;\n@%p ret;\n"
    "mov.u64 %prev, %t0;\nmov.u64 %step, -1;\n"
    "SPIN:\nmov.u64 %t, %globaltimer;\nsub.u64 %d, %t, %prev;\n"
    "setp.ne.u64 %q, %d, 0;\n@%q min.u64 %step, %step, %d;\nmov.u64 %prev, %t;\n"
    "sub.u64 %d, %t, %t0;\nsetp.lt.u64 %p, %d, %s;\n@%p bra SPIN;\n"
    "mov.u64 %c, %clock64;\nsub.u64 %c, %c, %c0;\n"
    "st.u64 [%o+8], %t;\nst.u64 [%o+16], %c;\nst.u64 [%o+24], %step;\nret;\n}\n";

#define ROUNDS 7
#define SPIN_NS 2000000ull

static CUresult run(CUfunction fn, CUdeviceptr out, uint64_t spin_ns, uint64_t words[4],
                    uint64_t *start_ns, uint64_t *end_ns)
{
    void *params[] = {&out, &spin_ns};
    *start_ns = mgpu_monotonic_ns();
    CUresult r = mgpu_drv.cuLaunchKernel(fn, 1, 1, 1, 1, 1, 1, 0, NULL, params, NULL);
    if (r == CUDA_SUCCESS)
        r = mgpu_drv.cuCtxSynchronize();
    *end_ns = mgpu_monotonic_ns();
    if (r == CUDA_SUCCESS)
        r = mgpu_drv.cuMemcpyDtoHAsync(words, out, 4 * sizeof *words, NULL);
    if (r == CUDA_SUCCESS)
        r = mgpu_drv.cuCtxSynchronize();
    return r;
}

CUresult mgpu_probe_clock_measure(struct mgpu_probe_clock *clock)
{
    CUmodule module;
    CUresult r = mgpu_drv.cuModuleLoadDataEx(&module, clock_ptx, 0, NULL, NULL);
    if (r != CUDA_SUCCESS)
        return r;
    CUfunction fn;
    CUdeviceptr out = 0;
    r = mgpu_drv.cuModuleGetFunction(&fn, module, "mgpu_probe_clock");
    if (r == CUDA_SUCCESS)
        r = mgpu_drv.cuMemAlloc(&out, 4 * sizeof(uint64_t));
    uint64_t words[4], start, end, best = UINT64_MAX;
    /* The first launch loads the kernel: not a round trip to keep. */
    if (r == CUDA_SUCCESS)
        r = run(fn, out, 0, words, &start, &end);
    for (int i = 0; i < ROUNDS && r == CUDA_SUCCESS; i++) {
        r = run(fn, out, 0, words, &start, &end);
        if (r == CUDA_SUCCESS && end - start < best) {
            best = end - start;
            /* The kernel ran between start and end: the middle is off by
             * at most half the round trip. */
            clock->offset_ns = (int64_t)(words[0] - (start + (end - start) / 2));
            clock->error_ns = (end - start) / 2;
        }
    }
    if (r == CUDA_SUCCESS)
        r = run(fn, out, SPIN_NS, words, &start, &end);
    if (r == CUDA_SUCCESS) {
        uint64_t ns = words[1] - words[0];
        clock->cycles_per_ns = ns ? (double)words[2] / (double)ns : 0;
        clock->timer_step_ns = words[3];
    }
    if (out)
        mgpu_drv.cuMemFree(out);
    mgpu_drv.cuModuleUnload(module);
    return r;
}
