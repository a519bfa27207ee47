#include "report/strbuf.h"

#include <math.h> /* isfinite: a macro, no libm needed */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bool reserve(struct cf_buf *b, size_t extra)
{
    if (b->failed) return false;
    if (b->len + extra + 1 <= b->cap) return true;
    size_t cap = b->cap ? b->cap : 4096;
    while (cap < b->len + extra + 1)
        cap *= 2;
    char *p = realloc(b->data, cap);
    if (p == NULL) {
        b->failed = true;
        return false;
    }
    b->data = p;
    b->cap = cap;
    return true;
}

void cf_buf_put(struct cf_buf *b, const char *s, size_t n)
{
    if (!reserve(b, n)) return;
    memcpy(b->data + b->len, s, n);
    b->len += n;
    b->data[b->len] = '\0';
}

void cf_buf_puts(struct cf_buf *b, const char *s)
{
    cf_buf_put(b, s, strlen(s));
}

void cf_buf_printf(struct cf_buf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char small[256];
    int n = vsnprintf(small, sizeof small, fmt, ap);
    va_end(ap);
    if (n < 0) return;
    if ((size_t)n < sizeof small) {
        cf_buf_put(b, small, (size_t)n);
        return;
    }
    if (!reserve(b, (size_t)n)) return;
    va_start(ap, fmt);
    vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    b->len += (size_t)n;
}

void cf_buf_json_str(struct cf_buf *b, const char *s)
{
    if (s == NULL) {
        cf_buf_puts(b, "null");
        return;
    }
    cf_buf_put(b, "\"", 1);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        switch (*p) {
        case '"':
            cf_buf_put(b, "\\\"", 2);
            break;
        case '\\':
            cf_buf_put(b, "\\\\", 2);
            break;
        case '\n':
            cf_buf_put(b, "\\n", 2);
            break;
        case '\r':
            cf_buf_put(b, "\\r", 2);
            break;
        case '\t':
            cf_buf_put(b, "\\t", 2);
            break;
        default:
            /* Control characters must be escaped; bytes >= 0x80 pass through, and a
             * byte that is not valid UTF-8 (a file name, say) becomes U+FFFD so the
             * document stays valid. */
            if (*p < 0x20) {
                cf_buf_printf(b, "\\u%04x", *p);
            } else if (*p < 0x80) {
                cf_buf_put(b, (const char *)p, 1);
            } else {
                int len = (*p & 0xE0) == 0xC0   ? 2
                          : (*p & 0xF0) == 0xE0 ? 3
                          : (*p & 0xF8) == 0xF0 ? 4
                                                : 0;
                bool ok = len > 0;
                for (int i = 1; ok && i < len; i++)
                    ok = (p[i] & 0xC0) == 0x80;
                if (ok) {
                    cf_buf_put(b, (const char *)p, (size_t)len);
                    p += len - 1;
                } else {
                    cf_buf_puts(b, "\\ufffd");
                }
            }
        }
    }
    cf_buf_put(b, "\"", 1);
}

void cf_buf_json_num(struct cf_buf *b, double v)
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

void cf_buf_free(struct cf_buf *b)
{
    free(b->data);
    b->data = NULL;
    b->len = b->cap = 0;
    b->failed = false;
}
