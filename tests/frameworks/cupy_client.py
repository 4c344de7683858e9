"""CuPy as a user runs it, each result checked against numpy.

An ElementwiseKernel, a RawKernel (a 2D Jacobi stencil, sweeps swapping
buffers) and a reduction. Run with CUPY_COMPILE_WITH_PTX=1 so that the
kernels reach the driver as PTX, which mgpu can split. Prints one line per
check and "cupy_client: N checks passed"; exits 1 on the first wrong one.
With --bench, the sizes of bench/ and GPU times (CUDA events, median of
the rounds): "bench NAME MS".
"""
import statistics
import sys

import cupy as cp
import numpy as np

CHECKS = 0

AXPY = cp.ElementwiseKernel("float32 a, float32 x, float32 y", "float32 z", "z = a * x + y",
                            "mgpu_axpy")
JACOBI = cp.RawKernel(r"""
extern "C" __global__ void jacobi(const float *in, float *out, int n)
{
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x <= 0 || y <= 0 || x >= n - 1 || y >= n - 1)
        return;
    size_t i = (size_t)y * n + x;
    out[i] = 0.25f * (in[i - 1] + in[i + 1] + in[i - n] + in[i + n]);
}
""", "jacobi")


def check(name, got, want, rtol, atol):
    global CHECKS
    got = cp.asnumpy(got).astype(np.float64)
    want = np.asarray(want, dtype=np.float64)
    err = np.abs(got - want)
    bad = err > atol + rtol * np.abs(want)
    if got.shape != want.shape or bad.any() or not np.isfinite(got).all():
        i = int(np.argmax(bad)) if got.shape == want.shape else -1
        print(f"WRONG {name}: element {i} is {got.flat[i]}, not {want.flat[i]}")
        sys.exit(1)
    CHECKS += 1
    print(f"ok {name}")


def sweeps(grid, count, n):
    a, b = grid, grid.copy()
    threads = (32, 8)
    blocks = ((n + 31) // 32, (n + 7) // 8)
    for _ in range(count):
        JACOBI(blocks, threads, (a, b, cp.int32(n)))
        a, b = b, a
    return a


def reference_sweeps(grid, count):
    a = grid.astype(np.float32).copy()
    for _ in range(count):
        b = a.copy()
        b[1:-1, 1:-1] = np.float32(0.25) * (a[1:-1, :-2] + a[1:-1, 2:] + a[:-2, 1:-1] + a[2:, 1:-1])
        a = b
    return a


def checks():
    rng = np.random.default_rng(11)
    x = rng.random(1 << 24, dtype=np.float32)
    y = rng.random(1 << 24, dtype=np.float32)
    z = AXPY(np.float32(2.5), cp.asarray(x), cp.asarray(y))
    # The GPU fuses a * x + y into one rounding; numpy rounds twice.
    check("ElementwiseKernel axpy 2^24", z, np.float32(2.5) * x + y, 3e-7, 0)
    n = 2048
    grid = rng.random((n, n), dtype=np.float32)
    check("RawKernel Jacobi 2048^2, 10 sweeps", sweeps(cp.asarray(grid), 10, n),
          reference_sweeps(grid, 10), 1e-6, 1e-6)
    check("sum 2^24", cp.asarray(x).sum(dtype=cp.float64).reshape(1),
          np.array([x.astype(np.float64).sum()]), 1e-9, 1e-6)
    print(f"cupy_client: {CHECKS} checks passed")


def gpu_ms(fn, rounds):
    fn()
    times = []
    for _ in range(rounds):
        start, end = cp.cuda.Event(), cp.cuda.Event()
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(cp.cuda.get_elapsed_time(start, end))
    return statistics.median(times)


def bench():
    x = cp.random.random(1 << 28, dtype=cp.float32)
    y = cp.random.random(1 << 28, dtype=cp.float32)
    ms = gpu_ms(lambda: AXPY(np.float32(2.5), x, y), 10)
    z = AXPY(np.float32(2.5), x, y)
    ok = bool(cp.allclose(z[::4099], 2.5 * x[::4099] + y[::4099]))
    print(f"bench ElementwiseKernel_axpy_2^28 {ms:.3f} ({'right' if ok else 'WRONG'})")
    del x, y, z
    n = 16384
    grid = cp.random.random((n, n), dtype=cp.float32)
    other = grid.copy()
    threads = (32, 8)
    blocks = ((n + 31) // 32, (n + 7) // 8)
    ms = gpu_ms(lambda: JACOBI(blocks, threads, (grid, other, cp.int32(n))), 20)
    print(f"bench RawKernel_jacobi_16384^2_per_sweep {ms:.3f}")


if __name__ == "__main__":
    bench() if "--bench" in sys.argv else checks()
