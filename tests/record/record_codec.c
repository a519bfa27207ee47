/* The trace codec: the hook path's unchecked encoder of ALLOC, FREE and CALL
 * events against the checked one, byte for byte, over random events of every
 * type (values of every varint length, deltas of both signs); a buffer just large
 * enough, and one byte short; and every event decoded back to the fields it had. */
#include "check.h"
#include "record/trace_format.h"

#include <string.h>

#define EVENTS 20000
#define BUF    (1u << 22)

static uint64_t rnd(void)
{
    static uint64_t x = 0x2545f4914f6cdd1dull;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return x;
}

/* A value of a random length: 0, small, or up to the full 64 bits. */
static uint64_t any(void)
{
    unsigned bits = (unsigned)(rnd() % 65);
    return bits == 64 ? rnd() : rnd() & ((1ull << bits) - 1);
}

static const uint8_t types[] = {CF_EV_ALLOC, CF_EV_FREE,   CF_EV_CALL,   CF_EV_GRAPH_NODE,
                                CF_EV_POOL,  CF_EV_SERIES, CF_EV_MEMINFO};

static void random_event(struct cf_event *e, uint64_t *seq, uint64_t *t)
{
    memset(e, 0, sizeof *e);
    e->type = types[rnd() % sizeof types];
    /* Mostly increasing, sometimes far back or far ahead (another thread's seq). */
    *seq += rnd() % 8 == 0 ? any() : rnd() % 4;
    *t += rnd() % 8 == 0 ? any() : rnd() % 5000;
    e->seq = *seq;
    e->t_ns = *t;
    e->api = (uint8_t)(rnd() % 40);
    e->flags = (uint8_t)(rnd() % 64);
    e->op = (uint8_t)(rnd() % 8);
    e->device = (int32_t)(rnd() % 9) - 1;
    e->result = rnd() % 4 == 0 ? (int32_t)(uint32_t)any() : 0;
    e->site = (uint32_t)any();
    e->addr = rnd() % 3 == 0 ? any() : 0x7f0000000000ull + (rnd() % 4096) * 256;
    e->size = any();
    e->granted = any();
    e->stream = any();
    e->pool = any();
    e->ns = any();
    for (unsigned i = 0; i < 5; i++)
        e->v[i] = any();
}

/* The fields type's encoding carries. */
static void check_same(const struct cf_event *a, const struct cf_event *b)
{
    CHECK_EQ(a->type, b->type);
    CHECK_EQ(a->seq, b->seq);
    CHECK_EQ(a->t_ns, b->t_ns);
    switch (a->type) {
    case CF_EV_ALLOC:
        CHECK_EQ(a->flags, b->flags);
        CHECK_EQ(a->device, b->device);
        CHECK_EQ(a->size, b->size);
        CHECK_EQ(a->granted, b->granted);
        CHECK_EQ(a->stream, b->stream);
        CHECK_EQ(a->pool, b->pool);
        CHECK_EQ(a->site, b->site);
        if (a->flags & CF_EVF_OOM) {
            CHECK_EQ(a->v[0], b->v[0]);
            CHECK_EQ(a->v[1], b->v[1]);
        }
        /* fall through */
    case CF_EV_FREE:
    case CF_EV_GRAPH_NODE:
        CHECK_EQ(a->addr, b->addr);
        /* fall through */
    case CF_EV_CALL:
        CHECK_EQ(a->api, b->api);
        CHECK_EQ(a->result, b->result);
        CHECK_EQ(a->ns, b->ns);
        break;
    default:
        CHECK_EQ(a->op, b->op);
        CHECK_EQ(a->device, b->device);
        CHECK_EQ(a->v[0], b->v[0]);
        CHECK_EQ(a->v[1], b->v[1]);
        break;
    }
}

static struct cf_event events[EVENTS];
static uint8_t fast_buf[BUF], checked_buf[BUF], tight_buf[256];

int main(void)
{
    uint64_t seq = 1, t = 1000000;
    struct cf_enc fast = {.buf = fast_buf, .cap = BUF}, checked = {.buf = checked_buf, .cap = BUF};
    unsigned tight_checked = 0;
    for (unsigned i = 0; i < EVENTS; i++) {
        random_event(&events[i], &seq, &t);
        uint32_t before = fast.len;
        struct cf_enc start = fast; /* the deltas' state before this event */
        CHECK(cf_ev_encode(&fast, &events[i]));
        CHECK(cf_ev_encode_checked(&checked, &events[i]));
        CHECK_EQ(fast.len, checked.len);
        CHECK_EQ(fast.prev_addr, checked.prev_addr);
        CHECK(memcmp(fast_buf + before, checked_buf + before, fast.len - before) == 0);
        /* The same event in a buffer with no byte to spare, then one byte short:
         * cf_ev_encode takes its checked path, and fails without a trace. */
        uint32_t n = fast.len - before;
        CHECK_LE(n, sizeof tight_buf);
        struct cf_enc tight = start;
        tight.buf = tight_buf;
        tight.len = 0;
        tight.cap = n;
        CHECK(cf_ev_encode(&tight, &events[i]));
        CHECK_EQ(tight.len, n);
        CHECK(memcmp(tight_buf, fast_buf + before, n) == 0);
        tight = start;
        tight.buf = tight_buf;
        tight.len = 0;
        tight.cap = n - 1;
        CHECK(!cf_ev_encode(&tight, &events[i]));
        CHECK_EQ(tight.len, 0);
        CHECK_EQ(tight.prev_seq, start.prev_seq);
        CHECK_EQ(tight.prev_t, start.prev_t);
        CHECK_EQ(tight.prev_addr, start.prev_addr);
        tight_checked++;
    }
    struct cf_dec dec = {.p = fast_buf, .end = fast_buf + fast.len};
    struct cf_event e;
    for (unsigned i = 0; i < EVENTS; i++) {
        CHECK_EQ(cf_ev_decode(&dec, &e), 1);
        check_same(&events[i], &e);
    }
    CHECK_EQ(cf_ev_decode(&dec, &e), 0);
    printf("%u events: both encoders agree; %u encoded without a byte to spare\n", EVENTS,
           tight_checked);
    return 0;
}
