/* Many threads allocating and freeing on the arena at once (synchronous and
 * stream-ordered, on their own streams). Each block is filled with its
 * owner's tag and verified before it is freed: two threads given overlapping
 * memory would see each other's bytes. Afterwards the sub-allocator must be
 * consistent and every byte accounted for. */
#include "arena/arena.h"
#include "check.h"
#include "config/config.h"
#include "cuda_setup.h"
#include "simcuda.h"

#include <cuda.h>
#include <pthread.h>
#include <stdlib.h>

#define THREADS 16
#define OPS     600
#define HELD    24

static CUcontext ctx;

struct slot {
    CUdeviceptr p;
    uint64_t size;
    bool async;
};

static uint64_t next_rand(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

static void verify(const struct slot *sl, unsigned char tag)
{
    unsigned char v[3];
    CHECK_CU(cuMemcpyDtoH(&v[0], sl->p, 1));
    CHECK_CU(cuMemcpyDtoH(&v[1], sl->p + sl->size / 2, 1));
    CHECK_CU(cuMemcpyDtoH(&v[2], sl->p + sl->size - 1, 1));
    for (int i = 0; i < 3; i++)
        CHECK_EQ(v[i], tag);
}

static void release(struct slot *sl, CUstream s, unsigned char tag)
{
    CHECK_CU(cuStreamSynchronize(s));
    verify(sl, tag);
    CHECK_CU(cf_arena_free(sl->p, sl->async ? s : NULL, sl->async));
    sl->p = 0;
}

static void *worker(void *arg)
{
    int id = (int)(intptr_t)arg;
    unsigned char tag = (unsigned char)(id + 1);
    uint64_t rng = 0x9e3779b97f4a7c15ull * (uint64_t)(id + 1);
    struct slot held[HELD] = {{0}};
    CUstream s;
    CHECK_CU(cuCtxSetCurrent(ctx));
    CHECK_CU(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    for (int op = 0; op < OPS; op++) {
        struct slot *sl = &held[next_rand(&rng) % HELD];
        if (sl->p) {
            release(sl, s, tag);
            continue;
        }
        uint64_t r = next_rand(&rng);
        sl->size = r % 8 == 0 ? 1 + r % (6 << 20) : 1 + r % (64 << 10);
        sl->async = (r >> 8) & 1;
        CHECK_CU(cf_arena_alloc(&sl->p, sl->size, sl->async ? s : NULL, sl->async, NULL));
        CHECK_CU(cuMemsetD8Async(sl->p, tag, sl->size, s));
    }
    for (int i = 0; i < HELD; i++)
        if (held[i].p) release(&held[i], s, tag);
    CHECK_CU(cuStreamSynchronize(s));
    cf_arena_stream_destroyed(s); /* what the stream-destroy hooks do */
    CHECK_CU(cuStreamDestroy(s));
    return NULL;
}

int main(void)
{
    setenv("CUDAFRAG_ARENA", "1", 1);
    setenv("CUDAFRAG_ARENA_ASYNC", "1", 1);
    setenv("CUDAFRAG_ARENA_SLACK", "16M", 1);
    cf_config_reload();
    ctx = cf_test_primary_context(0);
    CHECK(cf_arena_enabled());
    pthread_t t[THREADS];
    for (int i = 0; i < THREADS; i++)
        CHECK_EQ(pthread_create(&t[i], NULL, worker, (void *)(intptr_t)i), 0);
    for (int i = 0; i < THREADS; i++)
        pthread_join(t[i], NULL);

    CHECK_CU(cuCtxSynchronize());
    CHECK_EQ(cf_arena_check(), 0);
    struct cf_arena_stats st;
    cf_arena_get_stats(&st, NULL);
    CHECK_EQ(st.allocs_served, st.frees_served);
    CHECK_LT(THREADS * OPS / 3, st.allocs_served);
    CHECK_EQ(st.live_now, 0);
    CHECK_LT(0, st.peak_live);
    CHECK_LE(st.peak_live, st.peak_mapped);
    CHECK_EQ(simcudaHazardCount(), 0);
    return 0;
}
