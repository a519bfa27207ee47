/* Two devices used the way multi-GPU programs use them, host code only, so that
 * the same file builds with nvcc for a real two-GPU host and as C against the
 * simulated device (tests/multidev/multi_gpu.c includes it):
 *
 *   - cudaSetDevice back and forth, a non-blocking stream per device;
 *   - on each device: raw cudaMalloc (a large and a small block), cudaMallocAsync
 *     on the device's default pool (a large and a small block), and an
 *     "NCCL-like" buffer: cuMemCreate with a device location, cuMemAddressReserve,
 *     cuMemMap, cuMemSetAccess, through driver entry points obtained with
 *     cuGetProcAddress (libcuda.so.1 opened with dlopen, as NCCL does);
 *   - peer access enabled both ways, and data moved between the devices with
 *     cudaMemcpyPeer, cudaMemcpyPeerAsync and through the other device's
 *     NCCL-like buffer.
 *
 * Device 1 gets larger blocks than device 0 everywhere, so a report that mixes
 * the devices up cannot pass. Every block's device is checked with
 * cudaPointerGetAttributes (so under cudafrag's arena, each device must be served
 * from its own arena).
 *
 *   multi_gpu all    both devices, from one process
 *   multi_gpu rank   one device, LOCAL_RANK (else RANK, else 0), as one rank of
 *                    a job with one process per GPU; no peer traffic
 *
 * Prints, per device used, "device D meminfo above start N" (cudaMemGetInfo's
 * used bytes when everything is live, minus before the first allocation), then
 * "checksum X" (FNV-1a of the data that went around) and "pid P". Exit 0, or 1
 * with the failing call on stderr. Never uses multicast objects. */
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MIB     (1024ull * 1024ull)
#define KIB     1024ull
#define NDEV    2
#define PAYLOAD (1 * MIB)

#define RT_OK(call)  rt_check((call), #call, __LINE__)
#define DRV_OK(call) drv_check((call), #call, __LINE__)

static void rt_check(cudaError_t e, const char *what, int line)
{
    if (e == cudaSuccess) return;
    fprintf(stderr, "multi_gpu:%d: %s failed: %s\n", line, what, cudaGetErrorName(e));
    exit(1);
}

static void drv_check(CUresult r, const char *what, int line)
{
    if (r == CUDA_SUCCESS) return;
    fprintf(stderr, "multi_gpu:%d: %s failed: CUresult %d\n", line, what, (int)r);
    exit(1);
}

/* ---- the driver entry points, as NCCL reaches them ---- */

typedef CUresult (*get_proc_fn)(const char *, void **, int, cuuint64_t,
                                CUdriverProcAddressQueryResult *);
typedef CUresult (*granularity_fn)(size_t *, const CUmemAllocationProp *,
                                   CUmemAllocationGranularity_flags);
typedef CUresult (*create_fn)(CUmemGenericAllocationHandle *, size_t, const CUmemAllocationProp *,
                              unsigned long long);
typedef CUresult (*release_fn)(CUmemGenericAllocationHandle);
typedef CUresult (*reserve_fn)(CUdeviceptr *, size_t, size_t, CUdeviceptr, unsigned long long);
typedef CUresult (*addr_free_fn)(CUdeviceptr, size_t);
typedef CUresult (*map_fn)(CUdeviceptr, size_t, size_t, CUmemGenericAllocationHandle,
                           unsigned long long);
typedef CUresult (*unmap_fn)(CUdeviceptr, size_t);
typedef CUresult (*set_access_fn)(CUdeviceptr, size_t, const CUmemAccessDesc *, size_t);

static struct {
    granularity_fn granularity;
    create_fn create;
    release_fn release;
    reserve_fn reserve;
    addr_free_fn addr_free;
    map_fn map;
    unmap_fn unmap;
    set_access_fn set_access;
} drv;

static void *proc(get_proc_fn get, const char *name)
{
    void *fn = NULL;
    CUdriverProcAddressQueryResult status = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    CUresult r = get(name, &fn, 12000, CU_GET_PROC_ADDRESS_DEFAULT, &status);
    if (r != CUDA_SUCCESS || fn == NULL || status != CU_GET_PROC_ADDRESS_SUCCESS) {
        fprintf(stderr, "multi_gpu: cuGetProcAddress(%s) failed: %d\n", name, (int)r);
        exit(1);
    }
    return fn;
}

static void load_driver(void)
{
    void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
    if (lib == NULL) {
        fprintf(stderr, "multi_gpu: %s\n", dlerror());
        exit(1);
    }
    get_proc_fn get = (get_proc_fn)dlsym(lib, "cuGetProcAddress_v2");
    if (get == NULL) {
        fprintf(stderr, "multi_gpu: no cuGetProcAddress_v2 in libcuda.so.1\n");
        exit(1);
    }
    drv.granularity = (granularity_fn)proc(get, "cuMemGetAllocationGranularity");
    drv.create = (create_fn)proc(get, "cuMemCreate");
    drv.release = (release_fn)proc(get, "cuMemRelease");
    drv.reserve = (reserve_fn)proc(get, "cuMemAddressReserve");
    drv.addr_free = (addr_free_fn)proc(get, "cuMemAddressFree");
    drv.map = (map_fn)proc(get, "cuMemMap");
    drv.unmap = (unmap_fn)proc(get, "cuMemUnmap");
    drv.set_access = (set_access_fn)proc(get, "cuMemSetAccess");
}

/* ---- the NCCL-like buffer: its own call site in a profiler's report ---- */

struct vmm_buf {
    CUmemGenericAllocationHandle handle;
    CUdeviceptr ptr;
    size_t size;
};

/* Physical memory on `device`, mapped at a reserved range, readable and
 * writable by each of the `naccess` devices in `access` (NCCL grants its
 * peers access to its buffers the same way). */
static __attribute__((noinline)) struct vmm_buf nccl_like_alloc(int device, size_t bytes,
                                                                const int *access, int naccess)
{
    CUmemAllocationProp prop;
    memset(&prop, 0, sizeof prop);
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = device;
    size_t gran = 0;
    DRV_OK(drv.granularity(&gran, &prop, CU_MEM_ALLOC_GRANULARITY_RECOMMENDED));
    struct vmm_buf b;
    b.size = (bytes + gran - 1) / gran * gran;
    DRV_OK(drv.create(&b.handle, b.size, &prop, 0));
    DRV_OK(drv.reserve(&b.ptr, b.size, gran, 0, 0));
    DRV_OK(drv.map(b.ptr, b.size, 0, b.handle, 0));
    CUmemAccessDesc desc[NDEV];
    memset(desc, 0, sizeof desc);
    for (int i = 0; i < naccess; i++) {
        desc[i].location.type = CU_MEM_LOCATION_TYPE_DEVICE;
        desc[i].location.id = access[i];
        desc[i].flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    }
    DRV_OK(drv.set_access(b.ptr, b.size, desc, (size_t)naccess));
    return b;
}

static __attribute__((noinline)) void nccl_like_free(struct vmm_buf *b)
{
    DRV_OK(drv.unmap(b->ptr, b->size));
    DRV_OK(drv.release(b->handle));
    DRV_OK(drv.addr_free(b->ptr, b->size));
}

/* ---- one device's memory ---- */

struct device_mem {
    int device;
    cudaStream_t stream;
    void *raw, *raw_small, *pooled, *pooled_small;
    struct vmm_buf vmm;
    size_t used_before;
};

static void use_device(int device)
{
    RT_OK(cudaSetDevice(device));
    int now = -1;
    RT_OK(cudaGetDevice(&now));
    if (now != device) {
        fprintf(stderr, "multi_gpu: cudaGetDevice says %d after cudaSetDevice(%d)\n", now, device);
        exit(1);
    }
}

static void expect_device(const void *p, int device, const char *what)
{
    struct cudaPointerAttributes attr;
    memset(&attr, 0, sizeof attr);
    RT_OK(cudaPointerGetAttributes(&attr, p));
    if (attr.type != cudaMemoryTypeDevice || attr.device != device) {
        fprintf(stderr, "multi_gpu: %s is on device %d (type %d), want device %d\n", what,
                attr.device, (int)attr.type, device);
        exit(1);
    }
}

static size_t used_now(int device)
{
    use_device(device);
    size_t free_b = 0, total = 0;
    RT_OK(cudaMemGetInfo(&free_b, &total));
    return total - free_b;
}

static void open_device(struct device_mem *m, int device)
{
    memset(m, 0, sizeof *m);
    m->device = device;
    use_device(device);
    RT_OK(cudaStreamCreateWithFlags(&m->stream, cudaStreamNonBlocking));
    RT_OK(cudaStreamSynchronize(m->stream));
    m->used_before = used_now(device);
}

/* Raw blocks: 3 MiB + 256 KiB on device 0, 5 MiB + 512 KiB on device 1. */
static void alloc_raw(struct device_mem *m)
{
    use_device(m->device);
    RT_OK(cudaMalloc(&m->raw, (3 + 2 * (size_t)m->device) * MIB));
    RT_OK(cudaMalloc(&m->raw_small, (256 * KIB) << m->device));
    expect_device(m->raw, m->device, "cudaMalloc block");
    expect_device(m->raw_small, m->device, "small cudaMalloc block");
}

/* Default pool: 3 MiB + 64 KiB on device 0, 5 MiB + 128 KiB on device 1. */
static void alloc_pooled(struct device_mem *m)
{
    use_device(m->device);
    RT_OK(cudaMallocAsync(&m->pooled, (3 + 2 * (size_t)m->device) * MIB, m->stream));
    RT_OK(cudaMallocAsync(&m->pooled_small, (64 * KIB) << m->device, m->stream));
    expect_device(m->pooled, m->device, "cudaMallocAsync block");
    expect_device(m->pooled_small, m->device, "small cudaMallocAsync block");
}

/* NCCL-like: 2 MiB on device 0, 4 MiB on device 1. */
static void alloc_vmm(struct device_mem *m, const int *access, int naccess)
{
    use_device(m->device);
    m->vmm = nccl_like_alloc(m->device, (2 + 2 * (size_t)m->device) * MIB, access, naccess);
    expect_device((void *)(uintptr_t)m->vmm.ptr, m->device, "NCCL-like buffer");
}

static void free_all(struct device_mem *m)
{
    use_device(m->device);
    RT_OK(cudaFreeAsync(m->pooled_small, m->stream));
    RT_OK(cudaFreeAsync(m->pooled, m->stream));
    RT_OK(cudaStreamSynchronize(m->stream));
    RT_OK(cudaFree(m->raw_small));
    RT_OK(cudaFree(m->raw));
    nccl_like_free(&m->vmm);
    RT_OK(cudaStreamDestroy(m->stream));
}

static uint64_t fnv1a(const unsigned char *p, size_t len)
{
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < len; i++) {
        h ^= p[i];
        h *= 0x100000001b3ull;
    }
    return h;
}

/* The payload: byte i is i * mul + add + (i >> shift), truncated. */
static unsigned char pattern(size_t i, unsigned mul, unsigned add, unsigned shift)
{
    return (unsigned char)(i * mul + add + (i >> shift));
}

static void fill(unsigned char *host, unsigned mul, unsigned add, unsigned shift)
{
    for (size_t i = 0; i < PAYLOAD; i++)
        host[i] = pattern(i, mul, add, shift);
}

/* The data came back whole from its trip through the devices. */
static void expect_data(const unsigned char *host, unsigned mul, unsigned add, unsigned shift)
{
    for (size_t i = 0; i < PAYLOAD; i++)
        if (host[i] != pattern(i, mul, add, shift)) {
            fprintf(stderr, "multi_gpu: byte %zu came back as %u, want %u\n", i, host[i],
                    pattern(i, mul, add, shift));
            exit(1);
        }
}

static void print_meminfo(const struct device_mem *m)
{
    size_t used = used_now(m->device);
    printf("device %d meminfo above start %llu\n", m->device,
           (unsigned long long)(used > m->used_before ? used - m->used_before : 0));
}

/* Host -> device 0 -> (peer) device 1 -> device 1's pool -> device 0's
 * NCCL-like buffer (mapped for device 1 too) -> (peer, async) device 1's
 * NCCL-like buffer -> device 0's pool -> host, each hop at a different offset; the data
 * must come back unchanged. */
static uint64_t move_data(struct device_mem *m, unsigned char *host)
{
    fill(host, 7, 0, 11);
    void *v0 = (void *)(uintptr_t)m[0].vmm.ptr, *v1 = (void *)(uintptr_t)m[1].vmm.ptr;
    use_device(0);
    RT_OK(cudaMemcpy(m[0].raw, host, PAYLOAD, cudaMemcpyHostToDevice));
    RT_OK(cudaMemcpyPeer((char *)m[1].raw + 4096, 1, m[0].raw, 0, PAYLOAD));
    use_device(1);
    RT_OK(cudaMemcpyAsync(m[1].pooled, (char *)m[1].raw + 4096, PAYLOAD, cudaMemcpyDeviceToDevice,
                          m[1].stream));
    RT_OK(cudaMemcpyAsync((char *)v0 + 512, m[1].pooled, PAYLOAD, cudaMemcpyDefault, m[1].stream));
    RT_OK(cudaStreamSynchronize(m[1].stream));
    use_device(0);
    RT_OK(cudaMemcpyPeerAsync((char *)v1 + 8192, 1, (char *)v0 + 512, 0, PAYLOAD, m[0].stream));
    RT_OK(cudaMemcpyAsync(m[0].pooled, (char *)v1 + 8192, PAYLOAD, cudaMemcpyDefault, m[0].stream));
    RT_OK(cudaStreamSynchronize(m[0].stream));
    memset(host, 0, PAYLOAD);
    RT_OK(cudaMemcpy(host, m[0].pooled, PAYLOAD, cudaMemcpyDeviceToHost));
    expect_data(host, 7, 0, 11);
    return fnv1a(host, PAYLOAD);
}

/* One device: host -> raw -> pool -> NCCL-like buffer -> host. */
static uint64_t move_data_one(struct device_mem *m, unsigned char *host)
{
    fill(host, 13, (unsigned)m->device, 9);
    void *v = (void *)(uintptr_t)m->vmm.ptr;
    use_device(m->device);
    RT_OK(cudaMemcpy(m->raw, host, PAYLOAD, cudaMemcpyHostToDevice));
    RT_OK(cudaMemcpyAsync(m->pooled, m->raw, PAYLOAD, cudaMemcpyDeviceToDevice, m->stream));
    RT_OK(
        cudaMemcpyAsync((char *)v + 1024, m->pooled, PAYLOAD, cudaMemcpyDeviceToDevice, m->stream));
    RT_OK(cudaStreamSynchronize(m->stream));
    memset(host, 0, PAYLOAD);
    RT_OK(cudaMemcpy(host, (char *)v + 1024, PAYLOAD, cudaMemcpyDeviceToHost));
    expect_data(host, 13, (unsigned)m->device, 9);
    return fnv1a(host, PAYLOAD);
}

static void enable_peers(void)
{
    for (int d = 0; d < NDEV; d++) {
        int can = 0, peer = 1 - d;
        RT_OK(cudaDeviceCanAccessPeer(&can, d, peer));
        if (!can) {
            fprintf(stderr, "multi_gpu: device %d cannot access device %d\n", d, peer);
            exit(1);
        }
        use_device(d);
        RT_OK(cudaDeviceEnablePeerAccess(peer, 0));
    }
}

static int run_all(unsigned char *host)
{
    static const int both[NDEV] = {0, 1};
    struct device_mem m[NDEV];
    int count = 0;
    RT_OK(cudaGetDeviceCount(&count));
    if (count < NDEV) {
        fprintf(stderr, "multi_gpu: %d device(s), need %d\n", count, NDEV);
        return 1;
    }
    for (int d = 0; d < NDEV; d++)
        open_device(&m[d], d);
    enable_peers();
    /* The current device changes at every step. */
    for (int d = 0; d < NDEV; d++)
        alloc_raw(&m[d]);
    for (int d = 0; d < NDEV; d++)
        alloc_pooled(&m[d]);
    for (int d = 0; d < NDEV; d++)
        alloc_vmm(&m[d], both, NDEV);
    for (int d = 0; d < NDEV; d++)
        print_meminfo(&m[d]);
    uint64_t sum = move_data(m, host);
    for (int d = 0; d < NDEV; d++)
        free_all(&m[d]);
    printf("checksum %016llx\n", (unsigned long long)sum);
    return 0;
}

static int rank_device(void)
{
    const char *v = getenv("LOCAL_RANK");
    if (v == NULL || *v == '\0') v = getenv("RANK");
    return v && *v ? atoi(v) : 0;
}

static int run_rank(unsigned char *host)
{
    int device = rank_device(), count = 0;
    RT_OK(cudaGetDeviceCount(&count));
    if (device < 0 || device >= count || device >= NDEV) {
        fprintf(stderr, "multi_gpu: rank device %d, but %d device(s)\n", device, count);
        return 1;
    }
    struct device_mem m;
    open_device(&m, device);
    alloc_raw(&m);
    alloc_pooled(&m);
    alloc_vmm(&m, &device, 1);
    print_meminfo(&m);
    uint64_t sum = move_data_one(&m, host);
    free_all(&m);
    printf("checksum %016llx\n", (unsigned long long)sum);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc != 2 || (strcmp(argv[1], "all") != 0 && strcmp(argv[1], "rank") != 0)) {
        fprintf(stderr, "usage: %s all|rank\n", argv[0]);
        return 2;
    }
    unsigned char *host = (unsigned char *)malloc(PAYLOAD);
    if (host == NULL) return 1;
    load_driver();
    int rc = strcmp(argv[1], "all") == 0 ? run_all(host) : run_rank(host);
    free(host);
    printf("pid %ld\n", (long)getpid());
    return rc;
}
