#!/usr/bin/env python3
"""JAX's allocation path: XLA's BFC allocator by default (one large up-front
reservation), or per-buffer cudaMalloc with XLA_PYTHON_CLIENT_ALLOCATOR=platform.
Runs a few jitted array operations and prints the result."""
import jax
import jax.numpy as jnp

# Full float32 matmuls: TF32 would make the result depend on the kernel chosen.
jax.config.update("jax_default_matmul_precision", "highest")


@jax.jit
def step(x, w):
    return jnp.tanh(x @ w) + 0.5 * x


def main():
    key = jax.random.PRNGKey(7)
    kx, kw = jax.random.split(key)
    total = 0.0
    for n in (256, 512, 1024, 2048):
        x = jax.random.normal(kx, (n, n), dtype=jnp.float32)
        w = jax.random.normal(kw, (n, n), dtype=jnp.float32) / n
        for _ in range(3):
            x = step(x, w)
        total += float(jnp.sum(x * x))
    print(f"result {total!r}")
    print(f"jax {jax.__version__} devices {jax.devices()}")


if __name__ == "__main__":
    main()
