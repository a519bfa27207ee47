#!/usr/bin/env python3
"""JAX training loops for `cudafrag advise` against XLA's own allocator.

  jax_loop.py --shape mlp      an MLP trained with Adam, fixed shapes: the same
                               buffers every step
  jax_loop.py --shape varlen   attention over sequences whose length changes
                               every step: a compiled program per length, its
                               buffers of odd sizes

At the end it prints the device's memory_stats() figures that XLA's BFC
allocator keeps (peak_pool_bytes, bytes_limit, peak_bytes_in_use), or
"memory_stats none" under the platform allocator, which keeps none."""
import argparse

import jax
import jax.numpy as jnp

jax.config.update("jax_default_matmul_precision", "highest")


def adam(params, grads, m, v, t, lr=1e-3):
    m = jax.tree.map(lambda a, g: 0.9 * a + 0.1 * g, m, grads)
    v = jax.tree.map(lambda a, g: 0.999 * a + 0.001 * g * g, v, grads)
    params = jax.tree.map(
        lambda p, a, b: p - lr * (a / (1 - 0.9**t)) / (jnp.sqrt(b / (1 - 0.999**t)) + 1e-8),
        params, m, v)
    return params, m, v


def train(loss, params, key, steps, batch, probe):
    """Adam on loss for steps; batch(t, k) is step t's input, drawn with key k.
    Returns the sum of probe(params) over the steps (the result line)."""
    step = jax.jit(lambda ps, m, v, t, x: adam(ps, jax.grad(loss)(ps, x), m, v, t))
    m = jax.tree.map(jnp.zeros_like, params)
    v = jax.tree.map(jnp.zeros_like, params)
    total = 0.0
    for t in range(1, steps + 1):
        key, k = jax.random.split(key)
        params, m, v = step(params, m, v, jnp.float32(t), batch(t, k))
        total += float(probe(params))
    return total


def mlp(steps):
    widths = [4096, 8192, 8192, 8192, 4096]
    key = jax.random.PRNGKey(1)
    params = []
    for a, b in zip(widths[:-1], widths[1:]):
        key, k = jax.random.split(key)
        params.append(jax.random.normal(k, (a, b), jnp.float32) / a**0.5)

    def loss(ps, x):
        for w in ps:
            x = jnp.tanh(x @ w)
        return jnp.mean(x * x)

    return train(loss, params, key, steps,
                 lambda t, k: jax.random.normal(k, (2048, widths[0]), jnp.float32),
                 lambda ps: jnp.sum(ps[0][:4, :4]))


def varlen(steps):
    d, heads, batch = 1024, 16, 8
    key = jax.random.PRNGKey(2)
    key, kq, ko = jax.random.split(key, 3)
    params = {"qkv": jax.random.normal(kq, (d, 3 * d), jnp.float32) / d**0.5,
              "out": jax.random.normal(ko, (d, d), jnp.float32) / d**0.5}

    def loss(ps, x):
        b, n, _ = x.shape
        q, k, v = jnp.split(x @ ps["qkv"], 3, axis=-1)
        split = lambda a: a.reshape(b, n, heads, d // heads).transpose(0, 2, 1, 3)
        att = jax.nn.softmax(split(q) @ split(k).transpose(0, 1, 3, 2) / 8.0, axis=-1)
        y = (att @ split(v)).transpose(0, 2, 1, 3).reshape(b, n, d) @ ps["out"]
        return jnp.mean(y * y)

    # Four lengths: each is a program of its own to compile, in each of the checker's runs.
    lengths = [384, 1000, 1536, 700]
    return train(loss, params, key, steps,
                 lambda t, k: jax.random.normal(k, (batch, lengths[t % len(lengths)], d),
                                                jnp.float32),
                 lambda ps: jnp.sum(ps["out"][:4, :4]))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--shape", choices=["mlp", "varlen"], required=True)
    ap.add_argument("--steps", type=int, default=16)
    args = ap.parse_args()
    total = (mlp if args.shape == "mlp" else varlen)(args.steps)
    print(f"result {total!r}")
    stats = jax.devices()[0].memory_stats()
    if not stats:
        print("memory_stats none")
        return
    for k in ("peak_pool_bytes", "pool_bytes", "bytes_limit", "peak_bytes_in_use"):
        if k in stats:
            print(f"{k} {stats[k]}")


if __name__ == "__main__":
    main()
