/* Memset and memcpy move real bytes; device ranges are validated; host,
 * managed and pointer-attribute queries behave like the real driver. */
#include "simtest.h"

int main(void)
{
    sim_setup(0);
    size_t free0 = sim_free_mem();
    CUdeviceptr d, e;
    CHECK_CU(cuMemAlloc(&d, 1 * MiB));
    CHECK_CU(cuMemAlloc(&e, 1 * MiB));

    unsigned char h[256];
    CHECK_CU(cuMemsetD8(d, 0xab, 1 * MiB));
    CHECK_CU(cuMemcpyDtoH(h, d + 1 * MiB - 256, 256));
    for (int i = 0; i < 256; i++)
        CHECK_EQ(h[i], 0xab);
    CHECK_CU(cuMemsetD16(d, 0x1234, 8));
    CHECK_CU(cuMemsetD32(d + 16, 0xdeadbeef, 4));
    CHECK_CU(cuMemcpyDtoH(h, d, 40));
    uint16_t s16;
    uint32_t s32;
    memcpy(&s16, h + 14, 2);
    memcpy(&s32, h + 28, 4);
    CHECK_EQ(s16, 0x1234);
    CHECK_EQ(s32, 0xdeadbeef);
    CHECK_EQ(h[32], 0xab);

    /* 2D: only the first `width` bytes of each row are written. */
    CHECK_CU(cuMemsetD8(e, 0, 4096));
    CHECK_CU(cuMemsetD2D8(e, 512, 7, 100, 4));
    CHECK_CU(cuMemcpyDtoH(h, e + 512 + 96, 8));
    CHECK_EQ(h[3], 7);
    CHECK_EQ(h[4], 0);

    for (int i = 0; i < 256; i++)
        h[i] = (unsigned char)i;
    CHECK_CU(cuMemcpyHtoD(e, h, 256));
    CHECK_CU(cuMemcpyDtoD(d, e, 256));
    unsigned char back[256];
    CHECK_CU(cuMemcpy((CUdeviceptr)(uintptr_t)back, d, 256));
    CHECK_EQ(memcmp(back, h, 256), 0);

    CUDA_MEMCPY2D c;
    memset(&c, 0, sizeof c);
    c.srcMemoryType = CU_MEMORYTYPE_DEVICE;
    c.srcDevice = d;
    c.srcPitch = 16;
    c.dstMemoryType = CU_MEMORYTYPE_HOST;
    c.dstHost = back;
    c.dstPitch = 4;
    c.WidthInBytes = 4;
    c.Height = 3;
    CHECK_CU(cuMemcpy2D(&c));
    CHECK_EQ(back[4], 16);
    CHECK_EQ(back[9], 33);

    /* Invalid device ranges. */
    CHECK_EQ(cuMemsetD8(d + 1 * MiB - 8, 0, 9), CUDA_ERROR_INVALID_VALUE);
    CHECK_EQ(cuMemcpyHtoD((CUdeviceptr)(uintptr_t)h, h, 16), CUDA_ERROR_INVALID_VALUE);
    CHECK_EQ(cuMemcpyDtoH(h, (CUdeviceptr)(uintptr_t)back, 16), CUDA_ERROR_INVALID_VALUE);
    CHECK_EQ(cuMemsetD32(d + 2, 0, 1), CUDA_ERROR_INVALID_VALUE);
    CHECK_CU(cuMemFree(e));
    CHECK_EQ(cuMemsetD8(e, 0, 1), CUDA_ERROR_INVALID_VALUE);

    /* Pointer attributes. */
    unsigned type = 0;
    CHECK_CU(cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, d + 5));
    CHECK_EQ(type, CU_MEMORYTYPE_DEVICE);
    void *hp;
    CHECK_EQ(cuPointerGetAttribute(&hp, CU_POINTER_ATTRIBUTE_HOST_POINTER, d),
             CUDA_ERROR_INVALID_VALUE);
    CHECK_EQ(
        cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, (CUdeviceptr)(uintptr_t)h),
        CUDA_ERROR_INVALID_VALUE);
    CUpointer_attribute attrs[2] = {CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
                                    CU_POINTER_ATTRIBUTE_RANGE_SIZE};
    size_t range = 99;
    int ordinal = 99;
    type = 99;
    void *data[3] = {&type, &range, &ordinal};
    CUpointer_attribute attrs3[3] = {CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
                                     CU_POINTER_ATTRIBUTE_RANGE_SIZE,
                                     CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL};
    /* Unknown memory, as an H200 answers: type 0, ordinal -2, range untouched. */
    CHECK_CU(cuPointerGetAttributes(3, attrs3, data, (CUdeviceptr)(uintptr_t)h));
    CHECK_EQ(type, 0);
    CHECK_EQ(range, 99);
    CHECK_EQ(ordinal, -2);
    CHECK_CU(cuPointerGetAttributes(2, attrs, data, d + 7));
    CHECK_EQ(type, CU_MEMORYTYPE_DEVICE);
    CHECK_EQ(range, 1 * MiB);

    /* Page-locked host memory: host type, same address on the device. */
    void *pinned;
    CHECK_CU(cuMemAllocHost(&pinned, 10000));
    CHECK_CU(cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
                                   (CUdeviceptr)(uintptr_t)pinned));
    CHECK_EQ(type, CU_MEMORYTYPE_HOST);
    CUdeviceptr dp, base;
    size_t size;
    CHECK_CU(cuMemGetAddressRange(&base, &size, (CUdeviceptr)(uintptr_t)pinned + 10));
    CHECK_EQ(base, (CUdeviceptr)(uintptr_t)pinned);
    CHECK_EQ(size, 10000);
    CHECK_CU(cuMemHostGetDevicePointer(&dp, pinned, 0));
    CHECK_EQ(dp, (CUdeviceptr)(uintptr_t)pinned);
    CHECK_CU(cuMemcpyDtoH(pinned, d, 256));
    CHECK_EQ(memcmp(pinned, h, 256), 0);
    CHECK_CU(cuMemFreeHost(pinned));
    CHECK_EQ(cuMemFreeHost(pinned), CUDA_ERROR_INVALID_VALUE);

    static char reg[8192];
    CHECK_CU(cuMemHostRegister(reg, sizeof reg, 0));
    CHECK_EQ(cuMemHostRegister(reg, sizeof reg, 0), CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED);
    CHECK_CU(cuMemHostGetDevicePointer(&dp, reg + 10, 0));
    CHECK_CU(cuMemHostUnregister(reg));
    CHECK_EQ(cuMemHostGetDevicePointer(&dp, reg, 0), CUDA_ERROR_INVALID_VALUE);

    /* Managed memory: usable from the host, not counted as device use. */
    CUdeviceptr m;
    CHECK_CU(cuMemAllocManaged(&m, 64 * MiB, CU_MEM_ATTACH_GLOBAL));
    CHECK_EQ(sim_free_mem(), free0 - 2 * MiB);
    unsigned managed = 0;
    CHECK_CU(cuPointerGetAttribute(&managed, CU_POINTER_ATTRIBUTE_IS_MANAGED, m + 100));
    CHECK_EQ(managed, 1);
    ((char *)(uintptr_t)m)[5] = 42;
    CHECK_CU(cuMemcpyDtoH(h, m, 8));
    CHECK_EQ(h[5], 42);
    CHECK_CU(cuMemFree(m));

    /* Arrays take whole pages. */
    CUDA_ARRAY_DESCRIPTOR ad = {1024, 1024, CU_AD_FORMAT_FLOAT, 4};
    CUarray arr;
    CHECK_CU(cuArrayCreate(&arr, &ad));
    CHECK_EQ(sim_free_mem(), free0 - 2 * MiB - 16 * MiB);
    CHECK_CU(cuArrayDestroy(arr));

    CHECK_CU(cuMemFree(d));
    CHECK_EQ(sim_free_mem(), free0);
    return 0;
}
