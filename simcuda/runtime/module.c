/* Fat binary registration. nvcc makes every .cu file register its fat binary
 * at start-up, even one with host code only; the simulated device runs no
 * kernels, so the registration is accepted and ignored. That lets a host-only
 * .cu program built by nvcc with -cudart shared run here unchanged. A program
 * with kernels also needs __cudaRegisterFunction, which is absent: it fails to
 * load, with the missing symbol named by the dynamic linker. */
#include "runtime.h"

RT_API void **__cudaRegisterFatBinary(void *fatCubin);
RT_API void __cudaRegisterFatBinaryEnd(void **fatCubinHandle);
RT_API void __cudaUnregisterFatBinary(void **fatCubinHandle);

/* A handle nvcc's start-up code keeps and hands back; never looked into. */
static void *fat_binary_handle;

RT_API void **__cudaRegisterFatBinary(void *fatCubin)
{
    (void)fatCubin;
    return &fat_binary_handle;
}

RT_API void __cudaRegisterFatBinaryEnd(void **fatCubinHandle)
{
    (void)fatCubinHandle;
}

RT_API void __cudaUnregisterFatBinary(void **fatCubinHandle)
{
    (void)fatCubinHandle;
}
