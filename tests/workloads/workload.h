/* Shared pieces of the bundled workloads: CUDA error checks, option parsing and
 * the output checksum. The workloads use only the CUDA runtime API (no kernels),
 * so the same binary runs on the simulated device and on a real GPU. */
#ifndef CUDAFRAG_WORKLOAD_H
#define CUDAFRAG_WORKLOAD_H

#include <cuda_runtime_api.h>
#include <stddef.h>
#include <stdint.h>

/* Exit status of a workload that hit a CUDA error. */
#define WL_EXIT_CUDA 1

/* Any CUDA error ends the run: print the call, the error name and exit 1. */
#define WL_CUDA(call) wl_cuda_check((call), #call, __FILE__, __LINE__)
void wl_cuda_check(cudaError_t err, const char *what, const char *file, int line);

/* Name the workload uses in its messages (set once from main). */
void wl_set_name(const char *name);
const char *wl_name(void);

/* Parse a count or a size with an optional K/M/G suffix (powers of 1024). Exits
 * with status 2 and a usage message on a malformed value. */
uint64_t wl_parse_size(const char *arg, const char *option);
long wl_parse_count(const char *arg, const char *option, long lo, long hi);
void wl_usage_error(const char *usage);

/* 64-bit FNV-1a over the bytes read back from the device, in program order. */
struct wl_hash {
    uint64_t state;
};
void wl_hash_init(struct wl_hash *h);
void wl_hash_bytes(struct wl_hash *h, const void *data, size_t len);
void wl_hash_u64(struct wl_hash *h, uint64_t v);
/* Prints "checksum <16 hex digits>" on its own line. */
void wl_print_checksum(const struct wl_hash *h);

/* Deterministic pseudo-random stream (xorshift64*), the same on every machine. */
struct wl_rng {
    uint64_t state;
};
void wl_rng_seed(struct wl_rng *r, uint64_t seed);
uint64_t wl_rng_next(struct wl_rng *r);
/* Uniform in [lo, hi]. */
uint64_t wl_rng_range(struct wl_rng *r, uint64_t lo, uint64_t hi);
void wl_rng_fill(struct wl_rng *r, void *buf, size_t len);

#endif
