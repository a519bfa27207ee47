/* Many threads allocating through every path cudafrag hooks at once: runtime
 * (cudaMalloc), stream-ordered on per-thread streams (cudaMallocAsync), an
 * application pool (cudaMallocFromPoolAsync), the driver's virtual memory
 * management (cuMemCreate) and pinned host memory (cudaMallocHost). Each thread
 * leaves one allocation of each kind unfreed, with sizes unique to the thread.
 *
 * The program checks the counters it can see while running and prints what the
 * final report must say; threads_mixed.sh compares that with the JSON report. */
#include "intercept/intercept.h"

#include <cuda.h>
#include <cuda_runtime_api.h>
#include <pthread.h>

#define THREADS 32
#define KINDS   5 /* device, async, pool, vmm, host */

static int rounds;
static size_t granularity;
static cudaMemPool_t shared_pool;

struct leak {
    void *device, *async, *pool, *host;
    CUmemGenericAllocationHandle vmm;
};
static struct leak leaks[THREADS];

/* Sizes differ per thread and kind so a count or byte total that is off by one
 * allocation of any kind cannot match by accident. */
static size_t leak_size(int t, int kind)
{
    if (kind == 3) return (size_t)(t % 4 + 1) * granularity;
    return (size_t)(t + 1) * 1000 * (size_t)(2 * kind + 1);
}

static CUmemGenericAllocationHandle vmm_create(size_t size)
{
    CUmemAllocationProp prop = {0};
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = 0;
    CUmemGenericAllocationHandle h = 0;
    CHECK_CU(cuMemCreate(&h, size, &prop, 0));
    return h;
}

static void one_round(int i, cudaStream_t s)
{
    size_t n = 256 + (size_t)(i % 97) * 512;
    void *p;
    CHECK_CU(cudaMalloc(&p, n));
    CHECK_CU(cudaFree(p));
    CHECK_CU(cudaMallocAsync(&p, n, s));
    CHECK_CU(cudaFreeAsync(p, s));
    CHECK_CU(cudaMallocFromPoolAsync(&p, n, shared_pool, s));
    CHECK_CU(cudaFreeAsync(p, s));
    CHECK_CU(cuMemRelease(vmm_create(granularity)));
    CHECK_CU(cudaMallocHost(&p, n));
    CHECK_CU(cudaFreeHost(p));
    /* Stream-ordered frees run when someone waits: keep the queues short. */
    if (i % 64 == 63) CHECK_CU(cudaStreamSynchronize(s));
}

static void *worker(void *arg)
{
    int t = (int)(long)arg;
    cudaStream_t s;
    CHECK_CU(cudaSetDevice(0));
    CHECK_CU(cudaStreamCreate(&s));
    for (int i = 0; i < rounds; i++)
        one_round(i, s);
    struct leak *l = &leaks[t];
    CHECK_CU(cudaMalloc(&l->device, leak_size(t, 0)));
    CHECK_CU(cudaMallocAsync(&l->async, leak_size(t, 1), s));
    CHECK_CU(cudaMallocFromPoolAsync(&l->pool, leak_size(t, 2), shared_pool, s));
    l->vmm = vmm_create(leak_size(t, 3));
    CHECK_CU(cudaMallocHost(&l->host, leak_size(t, 4)));
    CHECK_CU(cudaStreamSynchronize(s));
    CHECK_CU(cudaStreamDestroy(s));
    return NULL;
}

static void setup(void)
{
    CHECK_CU(cuInit(0));
    CHECK_CU(cudaSetDevice(0));
    CUmemAllocationProp prop = {0};
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = 0;
    CHECK_CU(cuMemGetAllocationGranularity(&granularity, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
    struct cudaMemPoolProps props = {0};
    props.allocType = cudaMemAllocationTypePinned;
    props.location.type = cudaMemLocationTypeDevice;
    props.location.id = 0;
    CHECK_CU(cudaMemPoolCreate(&shared_pool, &props));
}

typedef long long (*live_fn)(int);

static void check_and_print(void)
{
    long long n = (long long)THREADS * rounds, leaked = THREADS;
    long long device_bytes = 0, host_bytes = 0;
    for (int t = 0; t < THREADS; t++) {
        for (int k = 0; k < 4; k++)
            device_bytes += (long long)leak_size(t, k);
        host_bytes += (long long)leak_size(t, 4);
    }
    static const struct {
        const char *api;
        int per_round, leaked;
    } expect[] = {
        {"cudaMalloc", 1, 1},      {"cudaFree", 1, 0},
        {"cudaMallocAsync", 1, 1}, {"cudaMallocFromPoolAsync", 1, 1},
        {"cudaFreeAsync", 2, 0},   {"cuMemCreate", 1, 1},
        {"cuMemRelease", 1, 0},    {"cudaMallocHost", 1, 1},
        {"cudaFreeHost", 1, 0},
    };
    long long ops = 0;
    for (unsigned i = 0; i < sizeof expect / sizeof expect[0]; i++) {
        long long want = n * expect[i].per_round + leaked * expect[i].leaked;
        CHECK_CALLS(expect[i].api, want);
        printf("api %s %lld\n", expect[i].api, want);
        ops += want;
    }
    /* The runtime must not have been counted again under the driver API. */
    CHECK_CALLS("cuMemAlloc", 0);
    CHECK_CALLS("cuMemAllocAsync", 0);
    live_fn live = (live_fn)dlsym(RTLD_DEFAULT, "cudafrag_live_bytes");
    CHECK(live != NULL);
    /* Compared by the script, after it has said whether frees went astray. */
    printf("seen_live_device_bytes %lld\n", live(0));
    printf("ops %lld\n", ops);
    printf("live_device_bytes %lld\n", device_bytes);
    printf("live_host_bytes %lld\n", host_bytes);
    printf("live_count %lld\n", leaked * KINDS);
}

int main(int argc, char **argv)
{
    CHECK(argc == 2);
    rounds = atoi(argv[1]);
    CHECK(rounds > 0);
    setup();
    pthread_t th[THREADS];
    for (long t = 0; t < THREADS; t++)
        CHECK_EQ(pthread_create(&th[t], NULL, worker, (void *)t), 0);
    for (int t = 0; t < THREADS; t++)
        CHECK_EQ(pthread_join(th[t], NULL), 0);
    check_and_print();
    return 0;
}
