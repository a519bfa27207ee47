/* Extra entry points of the simulated CUDA driver (libcuda.so.1 built from
 * simcuda/driver). They exist only in the simulator: tests look them up with
 * dlsym or link the simulated driver directly. */
#ifndef SIMCUDA_H
#define SIMCUDA_H

#ifdef __cplusplus
extern "C" {
#endif

struct simcuda_stats {
    unsigned long long pages_total;            /* capacity / 2 MiB */
    unsigned long long pages_used;             /* physical pages taken, for any reason */
    unsigned long long largest_free_run_pages; /* contiguous mode: longest free run;
                                                  paged mode: all free pages */
    unsigned long long pool_reserved;          /* bytes reserved by the device's mempools */
    unsigned long long vmm_physical;           /* bytes held by cuMemCreate handles */
    unsigned long long graph_reserved;         /* bytes held by the graph memory pool */
    unsigned long long alloc_calls;            /* successful device allocations of any kind */
    unsigned long long free_calls;             /* successful device frees of any kind */
    unsigned long long pages_peak;             /* high water of pages_used since cuInit */
};

/* 0 on success, -1 when the driver is not initialised or device is out of range. */
int simcudaGetStats(int device, struct simcuda_stats *out);

/* Number of stream-order hazards seen so far (see simcuda/README.md). */
unsigned long long simcudaHazardCount(void);

/* Calls so far of one of the counted query entry points, by base name (the
 * variants of a name count under it): cuCtxGetDevice, cuCtxGetCurrent,
 * cuStreamIsCapturing, cuStreamGetDevice, cuDeviceGetDefaultMemPool,
 * cuDeviceGetMemPool. Counted only with SIMCUDA_COUNT_CALLS=1; ~0 without it and
 * for any other name. */
unsigned long long simcudaCallCount(const char *name);

/* Driver calls made to fail so far by SIMCUDA_FAULT (see simcuda/README.md). */
unsigned long long simcudaFaultCount(void);

#ifdef __cplusplus
}
#endif
#endif
