/* A kernel that keeps a stream busy, for the GPU programs that need work queued
 * behind it (a free that has not completed yet). Compiled by nvcc only: built as
 * C++ against the simulated runtime, the programs launch nothing. */
#ifndef CF_TESTS_GPU_SPIN_H
#define CF_TESTS_GPU_SPIN_H

#ifdef __CUDACC__
/* Spins for ns nanoseconds of the GPU's global timer. */
__global__ void spin(unsigned long long ns)
{
    unsigned long long t0, t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
    do {
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    } while (t - t0 < ns);
}
#endif

#endif
