/* Integers: BININT1/BININT2/BININT for what fits in 31 bits, LONG1 (little-
 * endian two's complement, at most 8 bytes) above. Strings: BINUNICODE (UTF-8,
 * 4-byte length). Memo: LONG_BINPUT/LONG_BINGET. */
#include "cli/pickle_write.h"

#include <string.h>

#include "cli/utf8.h"

static void op(struct cf_pkw *p, uint8_t c)
{
    fputc(c, p->f);
}

static void u32le(struct cf_pkw *p, uint32_t v)
{
    uint8_t b[4] = {(uint8_t)v, (uint8_t)(v >> 8), (uint8_t)(v >> 16), (uint8_t)(v >> 24)};
    fwrite(b, 1, 4, p->f);
}

void cf_pkw_start(struct cf_pkw *p)
{
    op(p, 0x80);
    op(p, 2);
}

void cf_pkw_stop(struct cf_pkw *p)
{
    op(p, '.');
}

void cf_pkw_dict(struct cf_pkw *p)
{
    op(p, '}');
}

void cf_pkw_list(struct cf_pkw *p)
{
    op(p, ']');
}

void cf_pkw_mark(struct cf_pkw *p)
{
    op(p, '(');
}

void cf_pkw_setitems(struct cf_pkw *p)
{
    op(p, 'u');
}

void cf_pkw_appends(struct cf_pkw *p)
{
    op(p, 'e');
}

void cf_pkw_none(struct cf_pkw *p)
{
    op(p, 'N');
}

void cf_pkw_bool(struct cf_pkw *p, bool v)
{
    op(p, v ? 0x88 : 0x89);
}

void cf_pkw_int(struct cf_pkw *p, int64_t v)
{
    if (v >= 0 && v < 256) {
        op(p, 'K');
        op(p, (uint8_t)v);
    } else if (v >= 0 && v < 65536) {
        op(p, 'M');
        op(p, (uint8_t)v);
        op(p, (uint8_t)(v >> 8));
    } else if (v >= INT32_MIN && v <= INT32_MAX) {
        op(p, 'J');
        u32le(p, (uint32_t)v);
    } else {
        /* LONG1: the fewest bytes whose top bit still gives the sign. */
        uint8_t b[8];
        int n = 0;
        uint64_t u = (uint64_t)v;
        do {
            b[n++] = (uint8_t)u;
            u = (uint64_t)((int64_t)u >> 8);
        } while (n < 8 &&
                 !((u == 0 && !(b[n - 1] & 0x80)) || (u == UINT64_MAX && (b[n - 1] & 0x80))));
        op(p, 0x8a);
        op(p, (uint8_t)n);
        fwrite(b, 1, (size_t)n, p->f);
    }
}

void cf_pkw_uint(struct cf_pkw *p, uint64_t v)
{
    if (v > CF_PKW_MAX_INT) {
        p->capped++;
        v = CF_PKW_MAX_INT;
    }
    cf_pkw_int(p, (int64_t)v);
}

/* Python decodes BINUNICODE strictly: names from binaries need not be UTF-8. */
void cf_pkw_str(struct cf_pkw *p, const char *raw)
{
    char s[4096];
    cf_utf8_clean(raw, s, sizeof s);
    size_t n = strlen(s);
    op(p, 'X');
    u32le(p, (uint32_t)n);
    fwrite(s, 1, n, p->f);
}

uint32_t cf_pkw_put(struct cf_pkw *p)
{
    op(p, 'r');
    u32le(p, p->memo);
    return p->memo++;
}

void cf_pkw_get(struct cf_pkw *p, uint32_t idx)
{
    op(p, 'j');
    u32le(p, idx);
}

void cf_pkw_kstr(struct cf_pkw *p, const char *k, const char *v)
{
    cf_pkw_str(p, k);
    cf_pkw_str(p, v);
}

void cf_pkw_kuint(struct cf_pkw *p, const char *k, uint64_t v)
{
    cf_pkw_str(p, k);
    cf_pkw_uint(p, v);
}
