/* Events to bytes and back: LEB128 varints, seq/time/address as zigzag deltas
 * from the previous event of the same chunk (a chunk holds one thread's events,
 * so consecutive ones are close). Used by the in-process writer and by the
 * `cudafrag` command's reader; docs/trace-format.md describes the same layout. */
#include <string.h>

#include "record/trace_format.h"

struct out {
    uint8_t *p, *end;
    bool overflow;
};

static void put_u8(struct out *o, uint8_t v)
{
    if (o->p >= o->end) {
        o->overflow = true;
        return;
    }
    *o->p++ = v;
}

static void put(struct out *o, uint64_t v)
{
    while (v >= 0x80) {
        put_u8(o, (uint8_t)(v | 0x80));
        v >>= 7;
    }
    put_u8(o, (uint8_t)v);
}

static void put_zz(struct out *o, int64_t v)
{
    put(o, ((uint64_t)v << 1) ^ (uint64_t)(v >> 63));
}

static void put_bytes(struct out *o, const char *s, uint32_t n)
{
    put(o, n);
    if ((size_t)(o->end - o->p) < n) {
        o->overflow = true;
        return;
    }
    memcpy(o->p, s, n);
    o->p += n;
}

static void encode_body(struct out *o, const struct cf_event *e, struct cf_enc *enc)
{
    switch (e->type) {
    case CF_EV_ALLOC:
        put_u8(o, e->api);
        put_u8(o, e->flags);
        put(o, (uint64_t)(e->device + 1));
        put_zz(o, (int64_t)(e->addr - enc->prev_addr));
        enc->prev_addr = e->addr;
        put(o, e->size);
        put(o, e->granted);
        put(o, e->stream);
        put(o, e->pool);
        put(o, e->site);
        put_zz(o, e->result);
        put(o, e->ns);
        if (e->flags & CF_EVF_OOM) {
            put(o, e->v[0]);
            put(o, e->v[1]);
        }
        break;
    case CF_EV_FREE:
    case CF_EV_GRAPH_NODE:
        put_u8(o, e->api);
        put_zz(o, (int64_t)(e->addr - enc->prev_addr));
        enc->prev_addr = e->addr;
        put_zz(o, e->result);
        put(o, e->ns);
        break;
    case CF_EV_CALL:
        put_u8(o, e->api);
        put_zz(o, e->result);
        put(o, e->ns);
        break;
    case CF_EV_POOL:
        put_u8(o, e->op);
        put_u8(o, e->flags);
        put(o, e->pool);
        put(o, (uint64_t)(e->device + 1));
        for (unsigned i = 0; i < 5; i++)
            put(o, e->v[i]);
        break;
    case CF_EV_SERIES:
    case CF_EV_MEMINFO:
    case CF_EV_GRAPH_HIGH:
        put_u8(o, e->op);
        put(o, (uint64_t)(e->device + 1));
        put(o, e->v[0]);
        put(o, e->v[1]);
        break;
    case CF_EV_SITE:
        put(o, e->site);
        put(o, e->addr); /* the stack hash */
        put_u8(o, e->api);
        put(o, e->nframes);
        for (uint32_t i = 0; i < e->nframes; i++)
            put(o, e->frames[i]);
        break;
    case CF_EV_MODULE:
        put(o, e->site); /* the module id */
        put(o, e->addr); /* load bias */
        put_bytes(o, e->str, e->len);
        put_bytes(o, e->str2, e->len2);
        break;
    case CF_EV_MARK:
        put_bytes(o, e->str, e->len);
        break;
    case CF_EV_PYFRAME:
        put(o, e->site); /* the frame's id */
        put(o, e->v[0]); /* line */
        put_bytes(o, e->str, e->len);
        put_bytes(o, e->str2, e->len2);
        break;
    case CF_EV_END:
        for (unsigned i = 0; i < 8; i++)
            put(o, e->v[i]);
        put_bytes(o, e->str, e->len);
        break;
    default:
        o->overflow = true;
    }
}

/* The checked encoder above handles every event in any buffer. The events of
 * intercepted calls (ALLOC, FREE, CALL), most of a trace, are encoded (by the
 * writer thread) almost always with plenty of room left in the buffer: they are
 * written here without a bound check per byte, into a local pointer, in the same
 * layout (the codec test compares both encoders byte for byte). */
#define HOT_MAX_BYTES (3u + 14u * 10u) /* 3 single bytes and at most 14 varints */

static inline uint8_t *fast_put(uint8_t *p, uint64_t v)
{
    while (v >= 0x80) {
        *p++ = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    *p++ = (uint8_t)v;
    return p;
}

static inline uint8_t *fast_put_zz(uint8_t *p, int64_t v)
{
    return fast_put(p, ((uint64_t)v << 1) ^ (uint64_t)(v >> 63));
}

static uint8_t *encode_hot(uint8_t *p, const struct cf_event *e, struct cf_enc *enc)
{
    *p++ = e->type;
    p = fast_put_zz(p, (int64_t)(e->seq - enc->prev_seq));
    p = fast_put_zz(p, (int64_t)(e->t_ns - enc->prev_t));
    *p++ = e->api;
    if (e->type == CF_EV_CALL) {
        p = fast_put_zz(p, e->result);
        return fast_put(p, e->ns);
    }
    if (e->type == CF_EV_ALLOC) {
        *p++ = e->flags;
        p = fast_put(p, (uint64_t)(e->device + 1));
    }
    p = fast_put_zz(p, (int64_t)(e->addr - enc->prev_addr));
    enc->prev_addr = e->addr;
    if (e->type == CF_EV_FREE) {
        p = fast_put_zz(p, e->result);
        return fast_put(p, e->ns);
    }
    p = fast_put(p, e->size);
    p = fast_put(p, e->granted);
    p = fast_put(p, e->stream);
    p = fast_put(p, e->pool);
    p = fast_put(p, e->site);
    p = fast_put_zz(p, e->result);
    p = fast_put(p, e->ns);
    if (e->flags & CF_EVF_OOM) {
        p = fast_put(p, e->v[0]);
        p = fast_put(p, e->v[1]);
    }
    return p;
}

static bool hot(const struct cf_event *e)
{
    return e->type == CF_EV_ALLOC || e->type == CF_EV_FREE || e->type == CF_EV_CALL;
}

static bool encode_checked(struct cf_enc *enc, const struct cf_event *e)
{
    struct out o = {.p = enc->buf + enc->len, .end = enc->buf + enc->cap};
    struct cf_enc saved = *enc;
    put_u8(&o, e->type);
    put_zz(&o, (int64_t)(e->seq - enc->prev_seq));
    put_zz(&o, (int64_t)(e->t_ns - enc->prev_t));
    encode_body(&o, e, enc);
    if (o.overflow) {
        *enc = saved;
        return false;
    }
    enc->prev_seq = e->seq;
    enc->prev_t = e->t_ns;
    enc->len = (uint32_t)(o.p - enc->buf);
    return true;
}

bool cf_ev_encode_checked(struct cf_enc *enc, const struct cf_event *e)
{
    return encode_checked(enc, e);
}

bool cf_ev_encode(struct cf_enc *enc, const struct cf_event *e)
{
    if (!hot(e) || enc->cap - enc->len < HOT_MAX_BYTES) return encode_checked(enc, e);
    uint8_t *end = encode_hot(enc->buf + enc->len, e, enc);
    enc->prev_seq = e->seq;
    enc->prev_t = e->t_ns;
    enc->len = (uint32_t)(end - enc->buf);
    return true;
}

/* ---- decoding: every read is bounds-checked; the input may be truncated ---- */

struct in {
    const uint8_t *p, *end;
    bool bad;
};

static uint8_t get_u8(struct in *in)
{
    if (in->p >= in->end) {
        in->bad = true;
        return 0;
    }
    return *in->p++;
}

static uint64_t get(struct in *in)
{
    uint64_t v = 0;
    for (unsigned shift = 0; shift < 64; shift += 7) {
        uint8_t b = get_u8(in);
        v |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80)) return v;
    }
    in->bad = true;
    return 0;
}

static int64_t get_zz(struct in *in)
{
    uint64_t v = get(in);
    return (int64_t)(v >> 1) ^ -(int64_t)(v & 1);
}

static const char *get_bytes(struct in *in, uint32_t *len)
{
    uint64_t n = get(in);
    if (n > CF_EV_STR_MAX || (uint64_t)(in->end - in->p) < n) {
        in->bad = true;
        *len = 0;
        return "";
    }
    const char *s = (const char *)in->p;
    in->p += n;
    *len = (uint32_t)n;
    return s;
}

/* Devices are stored plus one (no device, -1, as 0). Wrapped in unsigned: a damaged
 * value must not overflow a signed subtraction. */
static int32_t get_device(struct in *in)
{
    return (int32_t)(uint32_t)(get(in) - 1);
}

static void decode_alloc(struct in *in, struct cf_event *e, struct cf_dec *dec)
{
    e->api = get_u8(in);
    e->flags = get_u8(in);
    e->device = get_device(in);
    dec->prev_addr += (uint64_t)get_zz(in);
    e->addr = dec->prev_addr;
    e->size = get(in);
    e->granted = get(in);
    e->stream = get(in);
    e->pool = get(in);
    e->site = (uint32_t)get(in);
    e->result = (int32_t)get_zz(in);
    e->ns = get(in);
    if (e->flags & CF_EVF_OOM) {
        e->v[0] = get(in);
        e->v[1] = get(in);
    }
}

static void decode_site(struct in *in, struct cf_event *e, struct cf_dec *dec)
{
    e->site = (uint32_t)get(in);
    e->addr = get(in);
    e->api = get_u8(in);
    uint64_t n = get(in);
    if (n > 64) {
        in->bad = true;
        return;
    }
    for (uint64_t i = 0; i < n; i++)
        dec->frames[i] = get(in);
    e->nframes = (uint32_t)n;
    e->frames = dec->frames;
}

static void decode_body(struct in *in, struct cf_event *e, struct cf_dec *dec)
{
    switch (e->type) {
    case CF_EV_ALLOC:
        decode_alloc(in, e, dec);
        break;
    case CF_EV_FREE:
    case CF_EV_GRAPH_NODE:
        e->api = get_u8(in);
        dec->prev_addr += (uint64_t)get_zz(in);
        e->addr = dec->prev_addr;
        e->result = (int32_t)get_zz(in);
        e->ns = get(in);
        break;
    case CF_EV_CALL:
        e->api = get_u8(in);
        e->result = (int32_t)get_zz(in);
        e->ns = get(in);
        break;
    case CF_EV_POOL:
        e->op = get_u8(in);
        e->flags = get_u8(in);
        e->pool = get(in);
        e->device = get_device(in);
        for (unsigned i = 0; i < 5; i++)
            e->v[i] = get(in);
        break;
    case CF_EV_SERIES:
    case CF_EV_MEMINFO:
    case CF_EV_GRAPH_HIGH:
        e->op = get_u8(in);
        e->device = get_device(in);
        e->v[0] = get(in);
        e->v[1] = get(in);
        break;
    case CF_EV_SITE:
        decode_site(in, e, dec);
        break;
    case CF_EV_MODULE:
        e->site = (uint32_t)get(in);
        e->addr = get(in);
        e->str = get_bytes(in, &e->len);
        e->str2 = get_bytes(in, &e->len2);
        break;
    case CF_EV_MARK:
        e->str = get_bytes(in, &e->len);
        break;
    case CF_EV_PYFRAME:
        e->site = (uint32_t)get(in);
        e->v[0] = get(in);
        e->str = get_bytes(in, &e->len);
        e->str2 = get_bytes(in, &e->len2);
        break;
    case CF_EV_END:
        for (unsigned i = 0; i < 8; i++)
            e->v[i] = get(in);
        e->str = get_bytes(in, &e->len);
        break;
    default:
        in->bad = true;
    }
}

int cf_ev_decode(struct cf_dec *dec, struct cf_event *e)
{
    if (dec->p >= dec->end) return 0;
    struct in in = {.p = dec->p, .end = dec->end};
    memset(e, 0, sizeof *e);
    e->type = get_u8(&in);
    dec->prev_seq += (uint64_t)get_zz(&in);
    dec->prev_t += (uint64_t)get_zz(&in);
    e->seq = dec->prev_seq;
    e->t_ns = dec->prev_t;
    decode_body(&in, e, dec);
    if (in.bad) return -1;
    dec->p = in.p;
    return 1;
}
