#include "report/format.h"

#include <stdio.h>

const char *cf_fmt_bytes(uint64_t bytes, char *out, size_t n)
{
    static const char *const unit[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
    double v = (double)bytes;
    unsigned u = 0;
    while (v >= 1024.0 && u < 5) {
        v /= 1024.0;
        u++;
    }
    if (u == 0)
        snprintf(out, n, "%llu B", (unsigned long long)bytes);
    else
        snprintf(out, n, "%.*f %s", v < 10 ? 2 : v < 100 ? 1 : 0, v, unit[u]);
    return out;
}

const char *cf_fmt_free_of(uint64_t free_bytes, uint64_t total, char *out, size_t n)
{
    char f[32], t[32];
    if (total)
        snprintf(out, n, "free %s of %s", cf_fmt_bytes(free_bytes, f, sizeof f),
                 cf_fmt_bytes(total, t, sizeof t));
    else if (free_bytes)
        snprintf(out, n, "free %s of an unknown total", cf_fmt_bytes(free_bytes, f, sizeof f));
    else
        snprintf(out, n, "free memory unknown");
    return out;
}

const char *cf_fmt_secs(double s, char *out, size_t n)
{
    if (s != s)
        snprintf(out, n, "-");
    else if (s < 1e-6)
        snprintf(out, n, "%.0f ns", s * 1e9);
    else if (s < 1e-3)
        snprintf(out, n, "%.1f us", s * 1e6);
    else if (s < 1.0)
        snprintf(out, n, "%.2f ms", s * 1e3);
    else
        snprintf(out, n, "%.2f s", s);
    return out;
}
