"""PyTorch as a user runs it, each result checked against the CPU.

Matrix products in fp32 and bf16 (cuBLAS, which mgpu splits at the API),
nn.Linear forward and backward (cuBLAS or cuBLASLt), an elementwise chain
and a reduction (PyTorch's own kernels, machine code only, which run
whole). Prints one line per check and "torch_client: N checks passed";
exits 1 on the first wrong one. With --bench, the sizes of bench/ and
GPU times (CUDA events, median of the rounds) instead of checks on every
element: "bench NAME MS".
"""
import statistics
import sys

import torch

CHECKS = 0


def check(name, got, want, rtol, atol):
    global CHECKS
    got = got.detach().to("cpu", torch.float64)
    want = want.detach().to("cpu", torch.float64)
    if got.shape != want.shape:
        print(f"WRONG {name}: shape {tuple(got.shape)}, not {tuple(want.shape)}")
        sys.exit(1)
    err = (got - want).abs()
    bound = atol + rtol * want.abs()
    if not bool((err <= bound).all()) or not bool(torch.isfinite(got).all()):
        i = int(torch.argmax(err - bound))
        print(f"WRONG {name}: element {i} is {got.flatten()[i].item()}, "
              f"not {want.flatten()[i].item()}")
        sys.exit(1)
    CHECKS += 1
    print(f"ok {name}")


def gpu_ms(fn, rounds):
    """The median GPU time of fn over rounds, after one warm-up."""
    fn()
    times = []
    for _ in range(rounds):
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    return statistics.median(times)


def checks():
    torch.backends.cuda.matmul.allow_tf32 = False
    dev = torch.device("cuda")
    gen = torch.Generator().manual_seed(7)
    n = 2048
    a = torch.rand(n, n, generator=gen) - 0.5
    b = torch.rand(n, n, generator=gen) - 0.5
    rows = torch.arange(0, n, 29)  # a sample of rows covers every column
    want = a[rows].double() @ b.double()
    c = torch.mm(a.to(dev), b.to(dev))
    check("torch.mm fp32 2048", c[rows.to(dev)], want, 1e-4, 1e-4)
    ct = torch.mm(a.to(dev).t(), b.to(dev))
    check("torch.mm fp32 2048 A transposed", ct[rows.to(dev)], a.t()[rows].double() @ b.double(),
          1e-4, 1e-4)

    abf, bbf = a.bfloat16(), b.bfloat16()
    want = abf[rows].double() @ bbf.double()
    c = torch.mm(abf.to(dev), bbf.to(dev))
    check("torch.mm bf16 2048", c[rows.to(dev)], want, 2e-2, 5e-2)

    for dtype, rtol, atol in ((torch.float32, 1e-4, 1e-4), (torch.bfloat16, 3e-2, 1e-1)):
        lin = torch.nn.Linear(1024, 1536).to(dev, dtype)
        x = (torch.rand(4096, 1024, generator=gen) - 0.5).to(dev, dtype).requires_grad_()
        y = lin(x)
        y.square().sum().backward()
        w = lin.weight.detach().double().cpu()
        bias = lin.bias.detach().double().cpu()
        xc = x.detach().double().cpu()
        yc = xc @ w.t() + bias
        gy = 2 * y.detach().double().cpu()
        name = str(dtype).replace("torch.", "")
        check(f"nn.Linear {name} forward", y, yc, rtol, atol)
        check(f"nn.Linear {name} weight gradient", lin.weight.grad, gy.t() @ xc, rtol, atol * 64)
        check(f"nn.Linear {name} input gradient", x.grad, gy @ w, rtol, atol * 16)

    u = torch.rand(1 << 24, generator=gen)
    v = torch.rand(1 << 24, generator=gen)
    ud, vd = u.to(dev), v.to(dev)
    chain = torch.sin(ud) * 2 + vd.sqrt() - ud * vd
    check("elementwise chain 2^24", chain,
          torch.sin(u.double()) * 2 + v.double().sqrt() - u.double() * v.double(), 1e-5, 1e-5)
    check("sum 2^24", ud.sum().reshape(1), u.double().sum().reshape(1), 1e-5, 1e-2)
    check("max along rows", ud.view(4096, -1).amax(dim=1), u.view(4096, -1).amax(dim=1).double(),
          0, 0)
    print(f"torch_client: {CHECKS} checks passed")


def bench():
    dev = torch.device("cuda")
    n = 8192
    for dtype in (torch.float32, torch.bfloat16):
        a = torch.rand(n, n, device=dev, dtype=dtype) - 0.5
        b = torch.rand(n, n, device=dev, dtype=dtype) - 0.5
        ms = gpu_ms(lambda: torch.mm(a, b), 10)
        c = torch.mm(a, b)
        want = a[:16].double() @ b.double()
        err = float((c[:16].double() - want).abs().max())
        print(f"bench torch.mm_{str(dtype)[6:]}_8192 {ms:.3f} (max error of 16 rows {err:.2e})")
        del a, b, c
    lin = torch.nn.Linear(4096, 4096).to(dev, torch.bfloat16)
    x = (torch.rand(16384, 4096, device=dev, dtype=torch.bfloat16) - 0.5).requires_grad_()

    def step():
        lin(x).float().square().mean().backward()

    print(f"bench nn.Linear_bf16_fwd_bwd_16384x4096 {gpu_ms(step, 10):.3f}")
    u = torch.rand(1 << 28, device=dev)
    v = torch.rand(1 << 28, device=dev)
    print(f"bench elementwise_chain_2^28 {gpu_ms(lambda: torch.sin(u) * 2 + v.sqrt() - u * v, 10):.3f}")


if __name__ == "__main__":
    bench() if "--bench" in sys.argv else checks()
