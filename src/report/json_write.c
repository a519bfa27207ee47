/* The comma is placed before a key or an element, never after: "first" says
 * whether the open object or array has one yet. */
#include "report/json_write.h"

#include <math.h> /* isfinite: a macro, no libm needed */
#include <stdio.h>

void cf_jw_key(struct cf_jw *j, const char *k)
{
    if (!j->first) cf_buf_put(j->b, ", ", j->spaced ? 2 : 1);
    j->first = false;
    if (k == NULL) return;
    cf_jw_string(j->b, k);
    cf_buf_put(j->b, ": ", j->spaced ? 2 : 1);
}

void cf_jw_obj(struct cf_jw *j, const char *k)
{
    cf_jw_key(j, k);
    cf_buf_put(j->b, "{", 1);
    j->first = true;
}

void cf_jw_obj_end(struct cf_jw *j)
{
    cf_buf_put(j->b, "}", 1);
    j->first = false;
}

void cf_jw_arr(struct cf_jw *j, const char *k)
{
    cf_jw_key(j, k);
    cf_buf_put(j->b, "[", 1);
    j->first = true;
}

void cf_jw_arr_end(struct cf_jw *j)
{
    cf_buf_put(j->b, "]", 1);
    j->first = false;
}

void cf_jw_str(struct cf_jw *j, const char *k, const char *v)
{
    cf_jw_key(j, k);
    cf_jw_string(j->b, v);
}

/* Decimal digits without printf: integers are most of a report's values. */
static void put_u64(struct cf_buf *b, uint64_t v, bool negative)
{
    char digits[24], *p = digits + sizeof digits;
    do {
        *--p = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    if (negative) *--p = '-';
    cf_buf_put(b, p, (size_t)(digits + sizeof digits - p));
}

void cf_jw_u64(struct cf_jw *j, const char *k, uint64_t v)
{
    cf_jw_key(j, k);
    put_u64(j->b, v, false);
}

void cf_jw_i64(struct cf_jw *j, const char *k, int64_t v)
{
    cf_jw_key(j, k);
    /* The magnitude in unsigned arithmetic: -INT64_MIN does not fit an int64_t. */
    put_u64(j->b, v < 0 ? 0 - (uint64_t)v : (uint64_t)v, v < 0);
}

void cf_jw_bool(struct cf_jw *j, const char *k, bool v)
{
    cf_jw_key(j, k);
    cf_buf_puts(j->b, v ? "true" : "false");
}

void cf_jw_null(struct cf_jw *j, const char *k)
{
    cf_jw_key(j, k);
    cf_buf_puts(j->b, "null");
}

void cf_jw_known(struct cf_jw *j, const char *k, uint64_t v, bool known)
{
    if (known)
        cf_jw_u64(j, k, v);
    else
        cf_jw_null(j, k);
}

void cf_jw_num(struct cf_jw *j, const char *k, double v)
{
    cf_jw_key(j, k);
    cf_jw_number(j->b, v);
}

void cf_jw_fixed(struct cf_jw *j, const char *k, double v, int decimals)
{
    cf_jw_key(j, k);
    if (isfinite(v))
        cf_buf_printf(j->b, "%.*f", decimals, v);
    else
        cf_buf_puts(j->b, "null");
}

/* Control characters are escaped; bytes >= 0x80 pass through when they are
 * valid UTF-8, and any other (a file name, say) becomes U+FFFD so that the
 * document stays valid. */
static const unsigned char *put_char(struct cf_buf *b, const unsigned char *p)
{
    static const char *const esc[0x20] = {['\n'] = "\\n", ['\r'] = "\\r", ['\t'] = "\\t"};
    if (*p == '"' || *p == '\\') {
        char two[2] = {'\\', (char)*p};
        cf_buf_put(b, two, 2);
    } else if (*p < 0x20) {
        if (esc[*p])
            cf_buf_put(b, esc[*p], 2);
        else
            cf_buf_printf(b, "\\u%04x", *p);
    } else if (*p < 0x80) {
        cf_buf_put(b, (const char *)p, 1);
    } else {
        int len = (*p & 0xE0) == 0xC0 ? 2 : (*p & 0xF0) == 0xE0 ? 3 : (*p & 0xF8) == 0xF0 ? 4 : 0;
        bool ok = len > 0;
        for (int i = 1; ok && i < len; i++)
            ok = (p[i] & 0xC0) == 0x80;
        if (!ok) {
            cf_buf_puts(b, "\\ufffd");
            return p;
        }
        cf_buf_put(b, (const char *)p, (size_t)len);
        p += len - 1;
    }
    return p;
}

void cf_jw_string(struct cf_buf *b, const char *s)
{
    if (s == NULL) {
        cf_buf_puts(b, "null");
        return;
    }
    cf_buf_put(b, "\"", 1);
    const unsigned char *p = (const unsigned char *)s;
    while (*p) {
        /* A run of printable ASCII goes in whole: most strings are nothing else,
         * and a byte at a time was the largest item in a large view's profile. */
        const unsigned char *run = p;
        while (*p >= 0x20 && *p < 0x80 && *p != '"' && *p != '\\')
            p++;
        if (p > run) cf_buf_put(b, (const char *)run, (size_t)(p - run));
        if (*p) p = put_char(b, p) + 1;
    }
    cf_buf_put(b, "\"", 1);
}

void cf_jw_number(struct cf_buf *b, double v)
{
    if (!isfinite(v)) {
        cf_buf_puts(b, "null");
        return;
    }
    /* The range test first: converting a double beyond long long is undefined. */
    if (v < 9e15 && v > -9e15 && v == (double)(long long)v)
        cf_buf_printf(b, "%lld", (long long)v);
    else
        cf_buf_printf(b, "%.6g", v);
}
