/* Bad and edge-case memory calls, each followed by cudaPeekAtLastError and
 * cudaGetLastError, printed one line per call: return code, last-error state and
 * what the out-parameters say, never an address (they differ between runs).
 * conformance.sh runs it without cudafrag, with the profiler only and with the
 * arena (synchronous and stream-ordered) and requires the outputs to be
 * identical line for line: with the arena a program must see exactly the return
 * codes and the runtime error state it sees natively.
 *
 * Built against the shared and against the static runtime: with the shared one
 * cudafrag sees the runtime calls, with the static one only the driver calls the
 * runtime makes. The driver API is called directly too. Needs no GPU of its own:
 * the same source builds against NVIDIA's headers and libraries. */
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

static int step_no;

/* The runtime's per-thread error state after a call: peeked, then read (which
 * resets it), then read again (must now be cudaSuccess). */
static void last(void)
{
    int peek = cudaPeekAtLastError();
    int get = cudaGetLastError();
    int again = cudaGetLastError();
    printf(" peek=%d last=%d after=%d\n", peek, get, again);
}

static void rt(const char *what, cudaError_t rc)
{
    printf("%3d %-44s rc=%d", ++step_no, what, (int)rc);
    last();
}

static void drv(const char *what, CUresult rc)
{
    printf("%3d %-44s cu=%d", ++step_no, what, (int)rc);
    last();
}

/* What out-pointers hold before a call: a runtime may leave them as they were
 * when it fails. */
#define UNSET ((void *)(uintptr_t)0x100)

/* An out-pointer as the program would judge it: NULL, left alone, or set and
 * how it is aligned. */
static void ptr_note(const char *what, const void *p)
{
    uintptr_t a = (uintptr_t)p;
    const char *how = p == NULL ? "null" : p == UNSET ? "unchanged" : "set";
    printf("    %s: %s align256=%d\n", what, how, p && p != UNSET ? (int)(a % 256 == 0) : -1);
}

static void attrs(const char *what, const void *p)
{
    struct cudaPointerAttributes at;
    cudaError_t rc = cudaPointerGetAttributes(&at, p);
    rt(what, rc);
    if (rc != cudaSuccess) return;
    printf("    type=%d device=%d dptr_is_p=%d hptr_null=%d\n", (int)at.type, at.device,
           at.devicePointer == p, at.hostPointer == NULL);
}

/* The allocation holding p: offset of p in it and its size. */
static void range(const char *what, CUdeviceptr p)
{
    CUdeviceptr base = 0;
    size_t size = 0;
    CUresult rc = cuMemGetAddressRange(&base, &size, p);
    drv(what, rc);
    if (rc == CUDA_SUCCESS)
        printf("    offset=%llu size=%zu\n", (unsigned long long)(p - base), size);
    unsigned int type = 0;
    rc = cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, p);
    printf("    attr memory_type cu=%d type=%u\n", (int)rc, rc == CUDA_SUCCESS ? type : 0);
    CUdeviceptr start = 0;
    rc = cuPointerGetAttribute(&start, CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, p);
    printf("    attr range_start cu=%d offset=%llu\n", (int)rc,
           rc == CUDA_SUCCESS ? (unsigned long long)(p - start) : 0ull);
    size_t rsize = 0;
    rc = cuPointerGetAttribute(&rsize, CU_POINTER_ATTRIBUTE_RANGE_SIZE, p);
    printf("    attr range_size cu=%d size=%zu\n", (int)rc, rc == CUDA_SUCCESS ? rsize : 0);
}

static char *off(void *p, size_t n)
{
    return (char *)p + n;
}

static void runtime_frees(void)
{
    rt("cudaFree(NULL)", cudaFree(NULL));
    void *z = UNSET;
    rt("cudaMalloc(0)", cudaMalloc(&z, 0));
    ptr_note("ptr", z);
    rt("cudaMalloc(NULL out)", cudaMalloc(NULL, 4096));

    void *a = NULL;
    rt("cudaMalloc(1 MiB)", cudaMalloc(&a, 1 << 20));
    ptr_note("ptr", a);
    attrs("cudaPointerGetAttributes(base)", a);
    attrs("cudaPointerGetAttributes(interior)", off(a, 1000));
    range("cuMemGetAddressRange(interior)", (CUdeviceptr)(uintptr_t)off(a, 1000));
    rt("cudaFree(interior)", cudaFree(off(a, 256)));
    /* The error stays until read: successful calls in between do not clear it. */
    void *b = NULL;
    cudaError_t e1 = cudaFree(off(a, 512));
    cudaError_t e2 = cudaMalloc(&b, 4096);
    cudaError_t e3 = cudaFree(b);
    printf("%3d %-44s rc=%d,%d,%d", ++step_no, "interior free, alloc, free; then read", (int)e1,
           (int)e2, (int)e3);
    last();
    rt("cudaFree(base)", cudaFree(a));
    rt("cudaFree(base) double free", cudaFree(a));
    /* Natively the driver no longer knows the address. */
    attrs("cudaPointerGetAttributes(freed)", a);
    range("cuMemGetAddressRange(freed)", (CUdeviceptr)(uintptr_t)a);

    void *s = NULL;
    rt("cudaMalloc(100)", cudaMalloc(&s, 100));
    range("cuMemGetAddressRange(small)", (CUdeviceptr)(uintptr_t)s);
    range("cuMemGetAddressRange(small + 200, past it)", (CUdeviceptr)(uintptr_t)off(s, 200));
    rt("cudaFree(small + 256)", cudaFree(off(s, 256)));
    /* Buffer ids tell allocations apart, however close they lie. */
    void *t = NULL;
    rt("cudaMalloc(100)", cudaMalloc(&t, 100));
    unsigned long long id_s = 0, id_t = 0;
    CUresult c1 = cuPointerGetAttribute(&id_s, CU_POINTER_ATTRIBUTE_BUFFER_ID, (CUdeviceptr)s);
    CUresult c2 = cuPointerGetAttribute(&id_t, CU_POINTER_ATTRIBUTE_BUFFER_ID, (CUdeviceptr)t);
    printf("    buffer ids cu=%d,%d differ=%d\n", (int)c1, (int)c2, id_s != id_t);
    rt("cudaFree(second small)", cudaFree(t));
    rt("cudaFree(small)", cudaFree(s));

    char *host = malloc(1 << 16);
    rt("cudaFree(malloc pointer)", cudaFree(host));
    int on_stack = 0;
    rt("cudaFree(stack pointer)", cudaFree(&on_stack));
    free(host);

    void *pinned = NULL;
    rt("cudaMallocHost(64 KiB)", cudaMallocHost(&pinned, 1 << 16));
    rt("cudaFree(pinned host)", cudaFree(pinned));
    attrs("cudaPointerGetAttributes(pinned)", pinned);
    rt("cudaFreeHost(pinned)", cudaFreeHost(pinned));
    void *dev = NULL;
    rt("cudaMalloc(64 KiB)", cudaMalloc(&dev, 1 << 16));
    rt("cudaFreeHost(device pointer)", cudaFreeHost(dev));
    rt("cudaFree(device pointer)", cudaFree(dev));
}

static void runtime_async(void)
{
    cudaStream_t st = NULL;
    rt("cudaStreamCreate", cudaStreamCreate(&st));

    void *a = NULL;
    rt("cudaMalloc(256 KiB)", cudaMalloc(&a, 1 << 18));
    rt("cudaFreeAsync(cudaMalloc pointer)", cudaFreeAsync(a, st));
    rt("cudaStreamSynchronize", cudaStreamSynchronize(st));
    rt("cudaFree(cudaMalloc pointer) after", cudaFree(a));
    rt("cudaFree(cudaMalloc pointer) double", cudaFree(a));

    void *q = NULL;
    rt("cudaMallocAsync(256 KiB)", cudaMallocAsync(&q, 1 << 18, st));
    ptr_note("ptr", q);
    rt("cudaFreeAsync(interior)", cudaFreeAsync(off(q, 256), st));
    rt("cudaFreeAsync(async pointer)", cudaFreeAsync(q, st));
    rt("cudaStreamSynchronize", cudaStreamSynchronize(st));

    rt("cudaMallocAsync(64 KiB)", cudaMallocAsync(&q, 1 << 16, st));
    rt("cudaStreamSynchronize", cudaStreamSynchronize(st));
    rt("cudaFree(async pointer)", cudaFree(q));

    void *z = UNSET;
    rt("cudaMallocAsync(0)", cudaMallocAsync(&z, 0, st));
    ptr_note("ptr", z);
    rt("cudaFreeAsync(NULL)", cudaFreeAsync(NULL, st));
    char *host = malloc(64);
    rt("cudaFreeAsync(malloc pointer)", cudaFreeAsync(host, st));
    free(host);

    void *huge = UNSET;
    rt("cudaMallocAsync(1 TiB)", cudaMallocAsync(&huge, (size_t)1 << 40, st));
    ptr_note("ptr", huge);
    rt("cudaStreamSynchronize", cudaStreamSynchronize(st));
    rt("cudaStreamDestroy", cudaStreamDestroy(st));
}

static struct cudaExtent extent(size_t w, size_t h, size_t d)
{
    struct cudaExtent e = {.width = w, .height = h, .depth = d};
    return e;
}

/* Inside a capture a stream-ordered free becomes a graph node, which only a
 * graph allocation may take; a synchronous allocation is an unsafe call. */
static void runtime_capture(void)
{
    cudaStream_t st = NULL;
    rt("cudaStreamCreate", cudaStreamCreate(&st));
    void *q = NULL, *g = NULL, *m = NULL;
    rt("cudaMallocAsync(64 KiB)", cudaMallocAsync(&q, 1 << 16, st));
    rt("cudaStreamSynchronize", cudaStreamSynchronize(st));
    rt("cudaStreamBeginCapture(relaxed)", cudaStreamBeginCapture(st, cudaStreamCaptureModeRelaxed));
    rt("cudaFreeAsync(pointer from before) captured", cudaFreeAsync(q, st));
    rt("cudaMallocAsync(64 KiB) captured", cudaMallocAsync(&g, 1 << 16, st));
    rt("cudaFreeAsync(graph allocation) captured", cudaFreeAsync(g, st));
    cudaGraph_t graph = NULL;
    rt("cudaStreamEndCapture", cudaStreamEndCapture(st, &graph));
    rt("cudaGraphDestroy", cudaGraphDestroy(graph));
    rt("cudaStreamBeginCapture(global)", cudaStreamBeginCapture(st, cudaStreamCaptureModeGlobal));
    rt("cudaMalloc(4 KiB) during global capture", cudaMalloc(&m, 4096));
    graph = NULL;
    rt("cudaStreamEndCapture", cudaStreamEndCapture(st, &graph));
    if (graph) cudaGraphDestroy(graph);
    if (m) cudaFree(m);
    rt("cudaFreeAsync(pointer from before) after", cudaFreeAsync(q, st));
    rt("cudaStreamSynchronize", cudaStreamSynchronize(st));
    rt("cudaStreamDestroy", cudaStreamDestroy(st));
}

static void runtime_shapes(void)
{
    void *huge = UNSET;
    rt("cudaMalloc(1 TiB)", cudaMalloc(&huge, (size_t)1 << 40));
    ptr_note("ptr", huge);
    huge = UNSET;
    rt("cudaMalloc(SIZE_MAX)", cudaMalloc(&huge, SIZE_MAX));
    ptr_note("ptr", huge);

    void *p = NULL;
    size_t pitch = 7;
    rt("cudaMallocPitch(100 x 10)", cudaMallocPitch(&p, &pitch, 100, 10));
    printf("    pitch=%zu\n", pitch);
    range("cuMemGetAddressRange(pitched)", (CUdeviceptr)(uintptr_t)p);
    rt("cudaFree(pitched)", cudaFree(p));
    pitch = 7;
    rt("cudaMallocPitch(0 x 10)", cudaMallocPitch(&p, &pitch, 0, 10));
    printf("    pitch=%zu\n", pitch);
    pitch = 7;
    rt("cudaMallocPitch(100 x 0)", cudaMallocPitch(&p, &pitch, 100, 0));
    printf("    pitch=%zu\n", pitch);
    rt("cudaMallocPitch(NULL pitch)", cudaMallocPitch(&p, NULL, 100, 10));
    rt("cudaMallocPitch(huge)", cudaMallocPitch(&p, &pitch, (size_t)1 << 30, 1 << 12));

    struct cudaPitchedPtr pp = {0};
    rt("cudaMalloc3D(64 x 4 x 2)", cudaMalloc3D(&pp, extent(64, 4, 2)));
    printf("    pitch=%zu xsize=%zu ysize=%zu\n", pp.pitch, pp.xsize, pp.ysize);
    rt("cudaFree(3D)", cudaFree(pp.ptr));
    pp.ptr = UNSET;
    rt("cudaMalloc3D(0 x 4 x 2)", cudaMalloc3D(&pp, extent(0, 4, 2)));
    ptr_note("ptr", pp.ptr);

    void *m = UNSET;
    rt("cudaMallocManaged(0)", cudaMallocManaged(&m, 0, cudaMemAttachGlobal));
    rt("cudaMallocManaged(64 KiB)", cudaMallocManaged(&m, 1 << 16, cudaMemAttachGlobal));
    attrs("cudaPointerGetAttributes(managed)", m);
    rt("cudaFreeAsync(managed)", cudaFreeAsync(m, 0));
    rt("cudaFree(managed interior)", cudaFree(off(m, 256)));
    rt("cudaFree(managed)", cudaFree(m));

    void *h = UNSET;
    rt("cudaHostAlloc(0)", cudaHostAlloc(&h, 0, cudaHostAllocDefault));
    ptr_note("ptr", h);
    rt("cudaFreeHost(NULL)", cudaFreeHost(NULL));

    size_t fr = 0, total = 0;
    rt("cudaMemGetInfo", cudaMemGetInfo(&fr, &total));
    printf("    total=%zu free_le_total=%d\n", total, fr <= total);
    rt("cudaMemGetInfo(NULL)", cudaMemGetInfo(NULL, &total));
}

static void driver_calls(void)
{
    CUdeviceptr d = 0;
    drv("cuMemAlloc(0)", cuMemAlloc(&d, 0));
    drv("cuMemAlloc(NULL out)", cuMemAlloc(NULL, 4096));
    drv("cuMemAlloc(1 MiB)", cuMemAlloc(&d, 1 << 20));
    range("cuMemGetAddressRange(drv interior)", d + 4096);
    drv("cuMemFree(interior)", cuMemFree(d + 256));
    drv("cuMemFreeAsync(cuMemAlloc pointer)", cuMemFreeAsync(d, NULL));
    drv("cuMemFree(cuMemAlloc pointer)", cuMemFree(d));
    drv("cuMemFree(double)", cuMemFree(d));
    drv("cuMemFree(0)", cuMemFree(0));
    drv("cuMemAlloc(1 TiB)", cuMemAlloc(&d, (size_t)1 << 40));

    CUdeviceptr q = 0;
    drv("cuMemAllocAsync(128 KiB)", cuMemAllocAsync(&q, 1 << 17, NULL));
    drv("cuMemFreeAsync(interior)", cuMemFreeAsync(q + 512, NULL));
    drv("cuMemFreeAsync", cuMemFreeAsync(q, NULL));
    drv("cuMemFreeAsync(double)", cuMemFreeAsync(q, NULL));
    drv("cuCtxSynchronize", cuCtxSynchronize());
    drv("cuMemAllocAsync(128 KiB)", cuMemAllocAsync(&q, 1 << 17, NULL));
    drv("cuCtxSynchronize", cuCtxSynchronize());
    drv("cuMemFree(async pointer)", cuMemFree(q));

    size_t pitch = 0;
    drv("cuMemAllocPitch(element 3)", cuMemAllocPitch(&d, &pitch, 100, 10, 3));
    drv("cuMemAllocPitch(100 x 10, 4)", cuMemAllocPitch(&d, &pitch, 100, 10, 4));
    printf("    pitch=%zu\n", pitch);
    drv("cuMemFree(pitched)", cuMemFree(d));

    size_t fr = 0, total = 0;
    drv("cuMemGetInfo", cuMemGetInfo(&fr, &total));
    printf("    total=%zu free_le_total=%d\n", total, fr <= total);
}

/* The driver API before the runtime made a context current. */
static void no_context(void)
{
    CUdeviceptr d = 0;
    drv("cuMemAlloc before cuInit", cuMemAlloc(&d, 4096));
    drv("cuInit", cuInit(0));
    CUcontext ctx = NULL;
    drv("cuCtxGetCurrent", cuCtxGetCurrent(&ctx));
    printf("    context: %s\n", ctx ? "current" : "none");
    drv("cuMemAlloc without a context", cuMemAlloc(&d, 4096));
    if (ctx == NULL && d != 0) cuMemFree(d);
    size_t pitch = 0;
    drv("cuMemAllocPitch without a context", cuMemAllocPitch(&d, &pitch, 100, 10, 4));
}

int main(void)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    no_context();
    rt("cudaSetDevice(0)", cudaSetDevice(0));
    runtime_frees();
    runtime_async();
    runtime_capture();
    runtime_shapes();
    driver_calls();
    return 0;
}
