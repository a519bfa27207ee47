#include "workload.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *g_name = "workload";

void wl_set_name(const char *name)
{
    g_name = name;
}

const char *wl_name(void)
{
    return g_name;
}

void wl_cuda_check(cudaError_t err, const char *what, const char *file, int line)
{
    if (err == cudaSuccess) return;
    fprintf(stderr, "%s: %s failed: %s (%s:%d)\n", g_name, what, cudaGetErrorName(err), file, line);
    printf("%s: CUDA error %s\n", g_name, cudaGetErrorName(err));
    exit(WL_EXIT_CUDA);
}

void wl_usage_error(const char *usage)
{
    fprintf(stderr, "usage: %s %s\n", g_name, usage);
    exit(2);
}

static void bad_value(const char *arg, const char *option)
{
    fprintf(stderr, "%s: bad value '%s' for %s\n", g_name, arg, option);
    exit(2);
}

uint64_t wl_parse_size(const char *arg, const char *option)
{
    char *end = NULL;
    errno = 0;
    unsigned long long v = strtoull(arg, &end, 10);
    if (errno || end == arg || arg[0] == '-') bad_value(arg, option);
    unsigned shift = 0;
    switch (*end) {
    case '\0':
        break;
    case 'k':
    case 'K':
        shift = 10;
        break;
    case 'm':
    case 'M':
        shift = 20;
        break;
    case 'g':
    case 'G':
        shift = 30;
        break;
    default:
        bad_value(arg, option);
    }
    if (*end && end[1] != '\0') bad_value(arg, option);
    if (shift && v > (UINT64_MAX >> shift)) bad_value(arg, option);
    return (uint64_t)v << shift;
}

long wl_parse_count(const char *arg, const char *option, long lo, long hi)
{
    char *end = NULL;
    errno = 0;
    long v = strtol(arg, &end, 10);
    if (errno || end == arg || *end != '\0' || v < lo || v > hi) bad_value(arg, option);
    return v;
}

#define FNV_OFFSET 0xcbf29ce484222325ULL
#define FNV_PRIME  0x100000001b3ULL

void wl_hash_init(struct wl_hash *h)
{
    h->state = FNV_OFFSET;
}

void wl_hash_bytes(struct wl_hash *h, const void *data, size_t len)
{
    const unsigned char *p = data;
    uint64_t s = h->state;
    for (size_t i = 0; i < len; i++) {
        s ^= p[i];
        s *= FNV_PRIME;
    }
    h->state = s;
}

/* Hashed byte by byte from the least significant end so the checksum does not
 * depend on the host's byte order. */
void wl_hash_u64(struct wl_hash *h, uint64_t v)
{
    unsigned char b[8];
    for (int i = 0; i < 8; i++)
        b[i] = (unsigned char)(v >> (8 * i));
    wl_hash_bytes(h, b, sizeof b);
}

void wl_print_checksum(const struct wl_hash *h)
{
    printf("checksum %016llx\n", (unsigned long long)h->state);
}

void wl_rng_seed(struct wl_rng *r, uint64_t seed)
{
    /* xorshift must never hold zero. */
    r->state = seed * 0x9e3779b97f4a7c15ULL + 0x2545f4914f6cdd1dULL;
    if (r->state == 0) r->state = 1;
}

uint64_t wl_rng_next(struct wl_rng *r)
{
    uint64_t x = r->state;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    r->state = x;
    return x * 0x2545f4914f6cdd1dULL;
}

uint64_t wl_rng_range(struct wl_rng *r, uint64_t lo, uint64_t hi)
{
    return lo + wl_rng_next(r) % (hi - lo + 1);
}

void wl_rng_fill(struct wl_rng *r, void *buf, size_t len)
{
    unsigned char *p = buf;
    size_t i = 0;
    while (i < len) {
        uint64_t v = wl_rng_next(r);
        for (int k = 0; k < 8 && i < len; k++, i++)
            p[i] = (unsigned char)(v >> (8 * k));
    }
}
