/* Several devices (SIMCUDA_DEVICES=2): each thread has its own current device,
 * allocations land on it, and peer copies move data between devices. */
#include "rt_test.h"

#include <pthread.h>
#include <stdint.h>

static void *on_device_one(void *arg)
{
    int device = -1;
    CHECK_RT(cudaGetDevice(&device));
    CHECK_EQ(device, 0);
    CHECK_RT(cudaSetDevice(1));
    CHECK_RT(cudaMalloc((void **)arg, 8 * MIB));
    return NULL;
}

int main(void)
{
    int count = 0;
    CHECK_RT(cudaGetDeviceCount(&count));
    CHECK_EQ(count, 2);

    void *on0 = NULL, *on1 = NULL;
    CHECK_RT(cudaMalloc(&on0, 4 * MIB));
    pthread_t t;
    CHECK_EQ(pthread_create(&t, NULL, on_device_one, &on1), 0);
    CHECK_EQ(pthread_join(t, NULL), 0);
    CHECK(on1 != NULL);

    /* This thread still works on device 0. */
    int device = -1;
    CHECK_RT(cudaGetDevice(&device));
    CHECK_EQ(device, 0);
    struct cudaPointerAttributes attr;
    CHECK_RT(cudaPointerGetAttributes(&attr, on0));
    CHECK_EQ(attr.device, 0);
    CHECK_RT(cudaPointerGetAttributes(&attr, on1));
    CHECK_EQ(attr.device, 1);

    CHECK_RT(cudaSetDevice(1));
    size_t used1 = rt_used_bytes();
    CHECK_GE(used1, 8 * MIB);
    CHECK_RT(cudaSetDevice(0));
    CHECK_LT(rt_used_bytes(), used1);

    int can = 0;
    CHECK_RT(cudaDeviceCanAccessPeer(&can, 0, 1));
    if (can) {
        CHECK_RT(cudaDeviceEnablePeerAccess(1, 0));
        CHECK_EQ(cudaDeviceEnablePeerAccess(1, 0), cudaErrorPeerAccessAlreadyEnabled);
        CHECK_EQ(cudaGetLastError(), cudaErrorPeerAccessAlreadyEnabled);
        CHECK_RT(cudaDeviceDisablePeerAccess(1));
    }

    uint8_t src[4096], back[4096];
    for (size_t i = 0; i < sizeof(src); i++)
        src[i] = (uint8_t)(i * 7u);
    CHECK_RT(cudaMemcpy(on0, src, sizeof(src), cudaMemcpyHostToDevice));
    CHECK_RT(cudaMemcpyPeer(on1, 1, on0, 0, sizeof(src)));
    cudaStream_t s = NULL;
    CHECK_RT(cudaStreamCreate(&s));
    CHECK_RT(cudaMemcpyPeerAsync(on0, 0, on1, 1, sizeof(src) / 2, s));
    CHECK_RT(cudaStreamSynchronize(s));
    CHECK_RT(cudaSetDevice(1));
    memset(back, 0, sizeof(back));
    CHECK_RT(cudaMemcpy(back, on1, sizeof(back), cudaMemcpyDeviceToHost));
    CHECK_EQ(memcmp(src, back, sizeof(src)), 0);
    CHECK_RT(cudaFree(on1));
    CHECK_RT(cudaSetDevice(0));
    CHECK_RT(cudaFree(on0));
    CHECK_RT(cudaStreamDestroy(s));
    CHECK_EQ(cudaGetLastError(), cudaSuccess);
    return 0;
}
