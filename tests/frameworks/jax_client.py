"""JAX as a user runs it: a jitted function (a matrix product, an
elementwise tail and a reduction) and a jitted elementwise update in a
loop, each result checked against numpy. XLA's kernels are machine code,
so they run whole under mgpu; the results must still be the plain run's.
Prints one line per check and "jax_client: N checks passed"; exits 1 on
the first wrong one.
"""
import sys

import jax
import jax.numpy as jnp
import numpy as np

CHECKS = 0


def check(name, got, want, rtol, atol):
    global CHECKS
    got = np.asarray(got, dtype=np.float64)
    want = np.asarray(want, dtype=np.float64)
    bad = np.abs(got - want) > atol + rtol * np.abs(want)
    if got.shape != want.shape or bad.any():
        i = int(np.argmax(bad)) if got.shape == want.shape else -1
        print(f"WRONG {name}: element {i} is {got.flat[i]}, not {want.flat[i]}")
        sys.exit(1)
    CHECKS += 1
    print(f"ok {name}")


@jax.jit
def layer(x, w, b):
    y = jnp.tanh(x @ w + b)
    return y, y.sum(axis=1)


@jax.jit
def step(p, v):
    return p + 0.01 * v, v * 0.99


def main():
    if jax.devices()[0].platform != "gpu":
        print(f"jax_client: JAX runs on {jax.devices()[0].platform}, not a GPU")
        sys.exit(1)
    rng = np.random.default_rng(5)
    x = rng.random((1024, 512), dtype=np.float32) - 0.5
    w = rng.random((512, 768), dtype=np.float32) - 0.5
    b = rng.random(768, dtype=np.float32) - 0.5
    with jax.default_matmul_precision("highest"):
        y, s = layer(x, w, b)
    want = np.tanh(x.astype(np.float64) @ w + b)
    check("jit tanh(x @ w + b)", y, want, 1e-4, 1e-4)
    check("jit row sums", s, want.sum(axis=1), 1e-4, 1e-3)
    p = jnp.asarray(rng.random(1 << 22, dtype=np.float32))
    v = jnp.asarray(rng.random(1 << 22, dtype=np.float32))
    pn, vn = np.asarray(p, dtype=np.float64), np.asarray(v, dtype=np.float64)
    for _ in range(20):
        p, v = step(p, v)
        pn, vn = pn + 0.01 * vn, vn * 0.99
    check("jit update loop, 20 steps", p, pn, 1e-5, 1e-5)
    print(f"jax_client: {CHECKS} checks passed")


if __name__ == "__main__":
    main()
