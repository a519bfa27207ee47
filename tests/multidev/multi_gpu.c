/* The two-GPU program of the real-GPU check (tests/gpu/multi_gpu.cu), built as C
 * against the simulated device: one source for both. */
#include "../gpu/multi_gpu.cu"
