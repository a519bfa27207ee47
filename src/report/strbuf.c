#include "report/strbuf.h"

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

void cf_buf_free(struct cf_buf *b)
{
    free(b->data);
    b->data = NULL;
    b->len = b->cap = 0;
    b->failed = false;
}
