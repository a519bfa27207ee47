/* Include this before anything else in a wrapper file. With
 * __CUDA_API_VERSION_INTERNAL the CUDA headers declare every ABI version of an entry
 * point under the name libcuda/libcudart export it by (cuMemAlloc is the 32-bit legacy
 * one, cuMemAlloc_v2 the current one, *_ptsz the per-thread default stream ones)
 * instead of mapping the plain names onto the newest version -- exactly what a file
 * that defines those exported names needs. */
#ifndef CF_HOOK_CUDA_ABI_H
#define CF_HOOK_CUDA_ABI_H

#ifdef __cuda_cuda_h__
#error "hook/cuda_abi.h must be included before cuda.h"
#endif
#define __CUDA_API_VERSION_INTERNAL 1
#include <cuda.h>
#include <cudaTypedefs.h>
#include <cuda_runtime_api.h>

/* We define and hand out deprecated entry points (cudaGetDriverEntryPoint): programs
 * still call them, so they must be intercepted like any other. */
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"

/* Exported by libcuda (the CUDA 4.0 ABI, same arguments as _v2) but not declared. */
CUresult CUDAAPI cuMemHostRegister(void *p, size_t bytesize, unsigned int Flags);
/* Exported by libcudart before CUDA 13 (cudaDeviceReset by its older name); CUDA 13's
 * headers no longer declare it. */
cudaError_t CUDARTAPI cudaThreadExit(void);

#endif
