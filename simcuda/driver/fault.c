/* Fault injection: SIMCUDA_FAULT makes chosen driver calls fail, so that tests
 * can see what a program -- and a profiler inside it -- does when the driver
 * refuses. Rules (comma-separated):
 *
 *   NAME            every call of the entry point NAME (as exported: cuMemAlloc_v2)
 *   NAME@N          its Nth call (from 1), counted over the whole process
 *   NAME@N+         its Nth call and every later one
 *   random:P:NAME   each call with probability P (0 < P <= 1), SIMCUDA_FAULT_SEED
 *   ...=CODE        the CUresult to return (default: CUDA_ERROR_OUT_OF_MEMORY for
 *                   entry points that allocate, CUDA_ERROR_UNKNOWN otherwise)
 *
 * NAME may end in '*' (a prefix: cuMemcpy*) or be '*' alone (every entry point;
 * '*@N' is the Nth driver call of any name). A random decision depends only on
 * the seed, the entry point and how many times the calling thread has called it
 * before: calls of other entry points -- a profiler's own queries -- do not shift
 * which of the program's calls fail.
 *
 * Only the outermost entry point of a call is considered: an entry point the
 * driver calls internally never fails on its own. SIMCUDA_FAULT_LOG=FILE appends
 * one line per injected failure ("NAME CODE"). */
#include "sim.h"
#include "simcuda.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAX_RULES 16
#define NAME_LEN  64

struct rule {
    char name[NAME_LEN]; /* without the trailing '*' */
    int prefix;          /* name ended in '*' (or was '*': matches everything) */
    int random;
    double prob;
    unsigned long long nth;  /* count rules: the call that fails first (1-based) */
    int onward;              /* ... and every later one */
    int code;                /* 0: the default for the entry point */
    unsigned long long seen; /* calls matched so far (count rules) */
};

static struct rule rules[MAX_RULES];
static int nrules;
static unsigned long long seed = 1;
static const char *log_path;
static int log_fd = -1;
static unsigned long long injected;
static pthread_once_t once = PTHREAD_ONCE_INIT;
static __thread int depth;

static int parse_ull(const char *s, const char *end, unsigned long long *out)
{
    if (s == end) return -1;
    unsigned long long v = 0;
    for (const char *p = s; p < end; p++) {
        if (*p < '0' || *p > '9' || v > (~0ull - 9) / 10) return -1;
        v = v * 10 + (unsigned)(*p - '0');
    }
    *out = v;
    return 0;
}

static int parse_target(struct rule *r, const char *s, const char *end)
{
    size_t n = (size_t)(end - s);
    if (n == 0 || n >= NAME_LEN) return -1;
    if (s[n - 1] == '*') {
        r->prefix = 1;
        n--;
    }
    for (size_t i = 0; i < n; i++)
        if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z') ||
              (s[i] >= '0' && s[i] <= '9') || s[i] == '_'))
            return -1;
    memcpy(r->name, s, n);
    r->name[n] = '\0';
    return 0;
}

static int parse_rule(struct rule *r, const char *s, const char *end)
{
    memset(r, 0, sizeof *r);
    const char *eq = memchr(s, '=', (size_t)(end - s));
    if (eq) {
        unsigned long long code;
        if (parse_ull(eq + 1, end, &code) != 0 || code == 0 || code > 100000) return -1;
        r->code = (int)code;
        end = eq;
    }
    if ((size_t)(end - s) > 7 && strncmp(s, "random:", 7) == 0) {
        r->random = 1;
        s += 7;
        const char *colon = memchr(s, ':', (size_t)(end - s));
        const char *pend = colon ? colon : end;
        char num[32];
        if (pend == s || (size_t)(pend - s) >= sizeof num) return -1;
        memcpy(num, s, (size_t)(pend - s));
        num[pend - s] = '\0';
        char *stop;
        errno = 0;
        r->prob = strtod(num, &stop);
        if (*stop || errno || !(r->prob > 0 && r->prob <= 1)) return -1;
        static const char any[] = "*";
        if (colon == NULL) return parse_target(r, any, any + 1);
        return parse_target(r, colon + 1, end);
    }
    const char *at = memchr(s, '@', (size_t)(end - s));
    if (at == NULL) {
        r->nth = 1;
        r->onward = 1;
        return parse_target(r, s, end);
    }
    const char *nend = end;
    if (nend > at + 1 && nend[-1] == '+') {
        r->onward = 1;
        nend--;
    }
    if (parse_ull(at + 1, nend, &r->nth) != 0 || r->nth == 0) return -1;
    return parse_target(r, s, at);
}

static void configure(void)
{
    const char *v = getenv("SIMCUDA_FAULT");
    if (v && *v) {
        int n = 0, bad = 0;
        for (const char *s = v; *s && !bad;) {
            const char *end = strchr(s, ',');
            if (end == NULL) end = s + strlen(s);
            if (n == MAX_RULES || parse_rule(&rules[n], s, end) != 0) bad = 1;
            n++;
            s = *end ? end + 1 : end;
        }
        if (bad)
            fprintf(stderr,
                    "simcuda: ignoring SIMCUDA_FAULT=%s: expected up to %d comma-separated rules "
                    "NAME, NAME@N, NAME@N+ or random:P:NAME (NAME an entry point, a prefix ending "
                    "in '*', or '*'; 0 < P <= 1), each optionally =CODE; no fault is injected\n",
                    v, MAX_RULES);
        else
            nrules = n;
    }
    const char *s = getenv("SIMCUDA_FAULT_SEED");
    if (s && *s && parse_ull(s, s + strlen(s), &seed) != 0) {
        fprintf(stderr,
                "simcuda: ignoring SIMCUDA_FAULT_SEED=%s: expected an unsigned integer; using 1\n",
                s);
        seed = 1;
    }
    log_path = getenv("SIMCUDA_FAULT_LOG");
}

static int matches(const struct rule *r, const char *name)
{
    return r->prefix ? strncmp(name, r->name, strlen(r->name)) == 0 : strcmp(name, r->name) == 0;
}

static uint64_t mix64(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

static uint64_t name_hash(const char *s)
{
    uint64_t h = 0xcbf29ce484222325ull;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 0x100000001b3ull;
    return h;
}

/* How many times this thread called `name` before, keyed by the address of the
 * entry point's __func__ (one per entry point). */
#define THREAD_SLOTS 512
static __thread struct {
    const char *name;
    unsigned long long calls;
} thread_calls[THREAD_SLOTS];

static unsigned long long thread_call_index(const char *name)
{
    uintptr_t h = ((uintptr_t)name >> 3) * 0x9e3779b97f4a7c15ull;
    for (unsigned i = 0; i < THREAD_SLOTS; i++) {
        unsigned k = (unsigned)((h + i) % THREAD_SLOTS);
        if (thread_calls[k].name == NULL) thread_calls[k].name = name;
        if (thread_calls[k].name == name) return thread_calls[k].calls++;
    }
    return 0;
}

static int allocates(const char *name)
{
    static const char *const exact[] = {
        "cuMemCreate",      "cuMemAddressReserve", "cuMemPoolCreate",   "cuArrayCreate",
        "cuArrayCreate_v2", "cuArray3DCreate",     "cuArray3DCreate_v2"};
    if (strstr(name, "Alloc") != NULL || strncmp(name, "cuMemHostRegister", 17) == 0) return 1;
    for (size_t i = 0; i < sizeof exact / sizeof exact[0]; i++)
        if (strcmp(name, exact[i]) == 0) return 1;
    return 0;
}

static void log_fault(const char *name, int code)
{
    if (log_path == NULL || *log_path == '\0') return;
    if (log_fd < 0) log_fd = open(log_path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
    if (log_fd < 0) return;
    char line[NAME_LEN + 32];
    int n = snprintf(line, sizeof line, "%s %d\n", name, code);
    if (n > 0 && write(log_fd, line, (size_t)n) != n) {
        /* A lost log line must not change what the program sees. */
    }
}

int sim_fault_enter(const char *name, CUresult *rc)
{
    if (depth++ != 0) return 0;
    pthread_once(&once, configure);
    if (nrules == 0) return 0;
    unsigned long long index = thread_call_index(name);
    /* Every rule counts the calls it matches, whichever rule fires; the first
     * that fires gives the code. */
    int code = 0;
    for (int i = 0; i < nrules; i++) {
        struct rule *r = &rules[i];
        if (!matches(r, name)) continue;
        int fire;
        if (r->random) {
            uint64_t x = mix64(seed ^ mix64(name_hash(name) ^ mix64(index + (uint64_t)i)));
            fire = r->prob >= 1 || (double)x < r->prob * 18446744073709551616.0;
        } else {
            unsigned long long n = __atomic_add_fetch(&r->seen, 1, __ATOMIC_RELAXED);
            fire = r->onward ? n >= r->nth : n == r->nth;
        }
        if (fire && code == 0)
            code = r->code           ? r->code
                   : allocates(name) ? CUDA_ERROR_OUT_OF_MEMORY
                                     : CUDA_ERROR_UNKNOWN;
    }
    if (code == 0) return 0;
    __atomic_add_fetch(&injected, 1, __ATOMIC_RELAXED);
    log_fault(name, code);
    *rc = (CUresult)code;
    return 1;
}

void sim_fault_leave(int *hit)
{
    (void)hit;
    depth--;
}

SIM_API unsigned long long simcudaFaultCount(void)
{
    return __atomic_load_n(&injected, __ATOMIC_RELAXED);
}
