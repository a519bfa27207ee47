#include "cli/utf8.h"

#include <string.h>

size_t cf_utf8_seq(const unsigned char *s, size_t n, uint32_t *cp)
{
    static const uint32_t min[5] = {0, 0, 0x80, 0x800, 0x10000};
    if (n == 0) return 0;
    size_t len = s[0] < 0x80         ? 1
                 : (s[0] >> 5) == 6  ? 2
                 : (s[0] >> 4) == 14 ? 3
                 : (s[0] >> 3) == 30 ? 4
                                     : 0;
    if (len == 0 || len > n) return 0;
    uint32_t c = len == 1 ? s[0] : s[0] & (0x7fu >> len);
    for (size_t i = 1; i < len; i++) {
        if ((s[i] & 0xc0) != 0x80) return 0;
        c = c << 6 | (s[i] & 0x3f);
    }
    if (c < min[len] || c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff)) return 0;
    *cp = c;
    return len;
}

char *cf_utf8_clean(const char *s, char *out, size_t n)
{
    size_t len = strlen(s), o = 0;
    const unsigned char *u = (const unsigned char *)s;
    if (n == 0) return out;
    for (size_t i = 0; i < len;) {
        uint32_t cp;
        size_t k = cf_utf8_seq(u + i, len - i, &cp);
        if (o + (k ? k : 1) >= n) break;
        if (k == 0) {
            out[o++] = '?';
            i++;
            continue;
        }
        memcpy(out + o, u + i, k);
        o += k;
        i += k;
    }
    out[o] = '\0';
    return out;
}
