#!/usr/bin/env python3
"""CuPy's allocation path: arrays of several sizes created and dropped through
CuPy's default memory pool, a few with the pool bypassed (cupy.cuda.malloc
through cudaMalloc directly). Prints how many arrays it made and freed, the
pool's bytes and a checksum of the results."""
import cupy as cp


def main():
    made = freed = 0
    total = 0
    pool = cp.get_default_memory_pool()
    for i in range(40):
        n = 1024 << (i % 12)
        a = cp.arange(n, dtype=cp.float32) * (i + 1)
        b = cp.sqrt(a + 1.0)
        total += int(cp.sum(b.astype(cp.float64) * 1000).get())
        made += 2
        del a, b
        freed += 2
    pool_used, pool_total = pool.used_bytes(), pool.total_bytes()
    pool.free_all_blocks()

    # Raw device memory without the pool.
    raw = [cp.cuda.Memory(1 << (16 + i)) for i in range(4)]
    made += len(raw)
    del raw
    freed += 4
    cp.cuda.Device().synchronize()
    print(f"checksum {total:016x}")
    print(f"cupy {cp.__version__}: arrays made={made} freed={freed} pool used={pool_used} "
          f"pool total={pool_total}")


if __name__ == "__main__":
    main()
