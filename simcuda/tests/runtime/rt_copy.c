/* Copies and fills move the right bytes: host -> device -> device -> host,
 * synchronous, stream-ordered and 2D. */
#include "rt_test.h"

#include <stdint.h>

cudaError_t cudaMemcpyAsync_ptsz(void *dst, const void *src, size_t count, enum cudaMemcpyKind kind,
                                 cudaStream_t stream);
cudaError_t cudaMemsetAsync_ptsz(void *devPtr, int value, size_t count, cudaStream_t stream);
cudaError_t cudaStreamSynchronize_ptsz(cudaStream_t stream);

#define N (1 << 20)

static void fill_pattern(uint8_t *buf, size_t n, unsigned seed)
{
    for (size_t i = 0; i < n; i++)
        buf[i] = (uint8_t)(i * 31u + seed);
}

static void check_round_trip(void)
{
    uint8_t *src = malloc(N), *dst = malloc(N);
    CHECK(src && dst);
    fill_pattern(src, N, 7);
    void *d1 = NULL, *d2 = NULL;
    CHECK_RT(cudaMalloc(&d1, N));
    CHECK_RT(cudaMalloc(&d2, N));
    CHECK_RT(cudaMemcpy(d1, src, N, cudaMemcpyHostToDevice));
    CHECK_RT(cudaMemcpy(d2, d1, N, cudaMemcpyDeviceToDevice));
    memset(dst, 0, N);
    CHECK_RT(cudaMemcpy(dst, d2, N, cudaMemcpyDeviceToHost));
    CHECK_EQ(memcmp(src, dst, N), 0);

    /* cudaMemcpyDefault infers the direction from the addresses. */
    fill_pattern(src, N, 99);
    CHECK_RT(cudaMemcpy(d1, src, N, cudaMemcpyDefault));
    memset(dst, 0, N);
    CHECK_RT(cudaMemcpy(dst, d1, N, cudaMemcpyDefault));
    CHECK_EQ(memcmp(src, dst, N), 0);

    /* Host to host copies too, pageable memory included. */
    memset(dst, 0, N);
    CHECK_RT(cudaMemcpy(dst, src, N, cudaMemcpyHostToHost));
    CHECK_EQ(memcmp(src, dst, N), 0);

    CHECK_RT(cudaMemset(d1, 0xAB, N / 2));
    CHECK_RT(cudaMemcpy(dst, d1, N, cudaMemcpyDeviceToHost));
    CHECK_EQ(dst[0], 0xAB);
    CHECK_EQ(dst[N / 2 - 1], 0xAB);
    CHECK_EQ(dst[N / 2], src[N / 2]);

    CHECK_RT(cudaFree(d1));
    CHECK_RT(cudaFree(d2));
    free(src);
    free(dst);
}

static void check_async(void)
{
    uint8_t *src = NULL, *dst = NULL;
    CHECK_RT(cudaMallocHost((void **)&src, N));
    CHECK_RT(cudaMallocHost((void **)&dst, N));
    fill_pattern(src, N, 3);
    cudaStream_t s = NULL;
    CHECK_RT(cudaStreamCreate(&s));
    void *d = NULL;
    CHECK_RT(cudaMallocAsync(&d, N, s));
    CHECK_RT(cudaMemcpyAsync(d, src, N, cudaMemcpyHostToDevice, s));
    CHECK_RT(cudaMemsetAsync(d, 0x5A, 16, s));
    CHECK_RT(cudaMemcpyAsync(dst, d, N, cudaMemcpyDeviceToHost, s));
    CHECK_RT(cudaStreamSynchronize(s));
    CHECK_EQ(dst[15], 0x5A);
    CHECK_EQ(memcmp(src + 16, dst + 16, N - 16), 0);

    CHECK_RT(cudaMemsetAsync_ptsz(d, 0x11, N, NULL));
    CHECK_RT(cudaMemcpyAsync_ptsz(dst, d, N, cudaMemcpyDeviceToHost, NULL));
    CHECK_RT(cudaStreamSynchronize_ptsz(NULL));
    CHECK_EQ(dst[0], 0x11);
    CHECK_EQ(dst[N - 1], 0x11);

    CHECK_RT(cudaFreeAsync(d, s));
    CHECK_RT(cudaStreamSynchronize(s));
    CHECK_RT(cudaStreamDestroy(s));
    CHECK_RT(cudaFreeHost(src));
    CHECK_RT(cudaFreeHost(dst));
}

static void check_2d(void)
{
    enum { W = 100, H = 20 };
    uint8_t host[H][W], back[H][W];
    fill_pattern(&host[0][0], sizeof(host), 11);
    void *d = NULL;
    size_t pitch = 0;
    CHECK_RT(cudaMallocPitch(&d, &pitch, W, H));
    CHECK_GE(pitch, W);
    CHECK_RT(cudaMemset2D(d, pitch, 0, W, H));
    CHECK_RT(cudaMemcpy2D(d, pitch, host, W, W, H, cudaMemcpyHostToDevice));
    memset(back, 0, sizeof(back));
    CHECK_RT(cudaMemcpy2D(back, W, d, pitch, W, H, cudaMemcpyDeviceToHost));
    CHECK_EQ(memcmp(host, back, sizeof(host)), 0);

    cudaStream_t s = NULL;
    CHECK_RT(cudaStreamCreate(&s));
    CHECK_RT(cudaMemset2DAsync(d, pitch, 0x77, W / 2, H, s));
    CHECK_RT(cudaMemcpy2DAsync(back, W, d, pitch, W, H, cudaMemcpyDefault, s));
    CHECK_RT(cudaStreamSynchronize(s));
    CHECK_EQ(back[H - 1][W / 2 - 1], 0x77);
    CHECK_EQ(back[H - 1][W / 2], host[H - 1][W / 2]);
    CHECK_EQ(cudaMemcpy2D(back, W, d, pitch, pitch + 1, H, cudaMemcpyDeviceToHost),
             cudaErrorInvalidPitchValue);
    CHECK_EQ(cudaGetLastError(), cudaErrorInvalidPitchValue);
    CHECK_RT(cudaStreamDestroy(s));
    CHECK_RT(cudaFree(d));
}

/* A 3D fill covers exactly the requested box of every slice. */
static void check_3d(void)
{
    struct cudaPitchedPtr p;
    CHECK_RT(cudaMalloc3D(&p, rt_extent(40, 8, 3)));
    size_t bytes = p.pitch * p.ysize * 3;
    uint8_t *back = malloc(bytes);
    CHECK(back != NULL);
    CHECK_RT(cudaMemset3D(p, 0x01, rt_extent(40, 8, 3)));
    CHECK_RT(cudaMemset3DAsync(p, 0x02, rt_extent(10, 4, 2), NULL));
    CHECK_RT(cudaMemcpy(back, p.ptr, bytes, cudaMemcpyDeviceToHost));
    for (size_t z = 0; z < 3; z++)
        for (size_t y = 0; y < 8; y++)
            for (size_t x = 0; x < 40; x++) {
                int inside = z < 2 && y < 4 && x < 10;
                CHECK_EQ(back[(z * 8 + y) * p.pitch + x], inside ? 0x02 : 0x01);
            }
    free(back);
    CHECK_RT(cudaFree(p.ptr));
}

int main(void)
{
    check_round_trip();
    check_async();
    check_2d();
    check_3d();
    CHECK_EQ(cudaGetLastError(), cudaSuccess);
    return 0;
}
