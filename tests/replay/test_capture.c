/* Trace events into per-device allocation streams: only device memory the
 * process really got, each free matched to the allocation it ends (pointers
 * and VMM handles apart), times from the trace's start. */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "record/event.h"
#include "record/record.h"
#include "replay/stream.h"

#define START 1000000u

static struct cf_rp_capture cap;
static uint64_t seq;

static void alloc(enum cf_api api, uint64_t addr, uint64_t size, int device, uint8_t flags,
                  int result)
{
    struct cf_event e = {.type = CF_EV_ALLOC,
                         .api = (uint8_t)api,
                         .flags = flags,
                         .device = device,
                         .result = result,
                         .seq = ++seq,
                         .t_ns = START + seq * 10,
                         .addr = addr,
                         .size = size,
                         .stream = 0x50 + seq};
    cf_rp_capture_event(&cap, &e);
}

static void release(enum cf_api api, uint64_t addr, int result)
{
    struct cf_event e = {.type = CF_EV_FREE,
                         .api = (uint8_t)api,
                         .result = result,
                         .seq = ++seq,
                         .t_ns = START + seq * 10,
                         .addr = addr};
    cf_rp_capture_event(&cap, &e);
}

int main(void)
{
    const uint64_t A = 0x7f0000000000, B = A + 0x200000, C = A + 0x400000;
    cf_rp_capture_init(&cap, START);
    alloc(CF_API_cudaMalloc, A, 100, 0, 0, 0);                    /* id 0, raw */
    alloc(CF_API_cuMemCreate, A, 2 << 20, 0, 0, 0);               /* id 1, a handle equal to A */
    alloc(CF_API_cudaMallocAsync, B, 300, 0, 0, 0);               /* id 2, pool */
    alloc(CF_API_cudaMalloc, C, 400, 0, CF_EVF_ARENA, 0);         /* id 3, the arena's */
    alloc(CF_API_cudaMallocHost, A + 1, 10, 0, 0, 0);             /* host memory: not replayed */
    alloc(CF_API_cudaMallocManaged, A + 2, 10, 0, 0, 0);          /* managed: not replayed */
    alloc(CF_API_cudaMallocAsync, A + 3, 10, 0, CF_EVF_GRAPH, 0); /* a graph node */
    alloc(CF_API_cudaMalloc, 0, 10, 0, CF_EVF_OOM, 2);            /* failed */
    alloc(CF_API_cudaMalloc, 0, 0, 0, 0, 0);                      /* zero bytes */
    alloc(CF_API_cudaMalloc, A + 4, 500, 1, 0, 0);                /* device 1, id 0 there */
    alloc(CF_API_cudaMalloc, A + 5, 600, -1, 0, 0);               /* device unknown: device 0 */
    release(CF_API_cudaFree, A, 1);                               /* failed: nothing changes */
    release(CF_API_cudaFreeHost, B, 0);                           /* not a device free */
    release(CF_API_cudaFree, 0xdead, 0);                          /* unknown address */
    release(CF_API_cuMemRelease, A, 0);                           /* the handle, not the pointer */
    release(CF_API_cudaFree, A, 0);                               /* now the pointer */
    release(CF_API_cudaFreeAsync, C, 0);                          /* the arena's block */
    alloc(CF_API_cudaMallocAsync, B, 700, 0, 0, 0); /* B came back: its free was missed */
    CHECK(!cap.failed);
    CHECK_EQ(cap.skipped, 3);
    CHECK_EQ(cap.replaced, 1);

    const struct cf_rp_stream *s = cap.dev[0];
    CHECK(s != NULL);
    CHECK_EQ(s->nallocs, 6);
    CHECK_EQ(s->nfrees, 4);
    CHECK_EQ(s->nops, 10);
    static const struct {
        bool free;
        uint8_t src;
        uint32_t id;
        uint64_t size;
    } want[] = {{false, CF_RP_RAW, 0, 100},  {false, CF_RP_VMM, 1, 2 << 20},
                {false, CF_RP_POOL, 2, 300}, {false, CF_RP_ARENA, 3, 400},
                {false, CF_RP_RAW, 4, 600},  {true, CF_RP_VMM, 1, 2 << 20},
                {true, CF_RP_RAW, 0, 100},   {true, CF_RP_ARENA, 3, 400},
                {true, CF_RP_POOL, 2, 300},  {false, CF_RP_POOL, 5, 700}};
    for (unsigned i = 0; i < 10; i++) {
        CHECK_EQ(s->ops[i].free, want[i].free);
        CHECK_EQ(s->ops[i].src, want[i].src);
        CHECK_EQ(s->ops[i].id, want[i].id);
        CHECK_EQ(s->ops[i].size, want[i].size);
        CHECK_LT(s->ops[i].t_ns, 1000); /* from the trace's start */
    }
    CHECK_EQ(s->ops[0].addr, A);
    CHECK_EQ(s->ops[6].addr, A); /* a free carries its allocation's address and size */
    CHECK_EQ(s->ops[2].strm, 0x53);
    CHECK_EQ(s->peak_live, 100 + (2 << 20) + 300 + 400 + 600);
    CHECK_EQ(s->live, 600 + 700);

    s = cap.dev[1];
    CHECK(s != NULL);
    CHECK_EQ(s->nallocs, 1);
    CHECK_EQ(s->ops[0].size, 500);
    for (int d = 2; d < CF_RP_MAX_DEVICES; d++)
        CHECK(cap.dev[d] == NULL);
    cf_rp_capture_fini(&cap);
    printf("replay capture: all checks passed\n");
    return 0;
}
