/* The SIMCUDA_* knobs, read once at cuInit. A bad value is ignored with one
 * line on stderr naming the variable and what it accepts, so that a typo in a
 * test's environment shows instead of silently running another device. */
#include "sim.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DEFAULT_CAPACITY ((size_t)16 << 30)

static int parse_size(const char *s, size_t *out)
{
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (end == s || errno || s[0] == '-') return -1;
    unsigned shift = 0;
    switch (*end) {
    case 'k':
    case 'K':
        shift = 10;
        end++;
        break;
    case 'm':
    case 'M':
        shift = 20;
        end++;
        break;
    case 'g':
    case 'G':
        shift = 30;
        end++;
        break;
    case 't':
    case 'T':
        shift = 40;
        end++;
        break;
    default:
        break;
    }
    if (*end == 'i' && end[1] == 'B')
        end += 2;
    else if (*end == 'B')
        end++;
    if (*end != '\0' || v == 0 || v > (4ULL << 40) >> shift) return -1;
    v <<= shift;
    if (v < SIM_PAGE || v > (4ULL << 40)) return -1;
    *out = (size_t)(v / SIM_PAGE * SIM_PAGE);
    return 0;
}

void sim_read_knobs(void)
{
    const char *mem = getenv("SIMCUDA_MEM");
    sim.capacity = DEFAULT_CAPACITY;
    if (mem && *mem && parse_size(mem, &sim.capacity) != 0) {
        fprintf(stderr,
                "simcuda: ignoring SIMCUDA_MEM=%s: expected a size from 2M to 4T (digits with an "
                "optional K, M, G or T suffix); using 16G\n",
                mem);
        sim.capacity = DEFAULT_CAPACITY;
    }
    const char *devs = getenv("SIMCUDA_DEVICES");
    sim.ndevices = 1;
    if (devs && *devs) {
        char *end;
        long n = strtol(devs, &end, 10);
        if (*end != '\0' || n < 1 || n > SIM_MAX_DEVICES)
            fprintf(stderr,
                    "simcuda: ignoring SIMCUDA_DEVICES=%s: expected a number from 1 to %d; "
                    "using 1\n",
                    devs, SIM_MAX_DEVICES);
        else
            sim.ndevices = (int)n;
    }
    /* Tools that cannot map terabytes (valgrind) need a smaller range. */
    const char *va = getenv("SIMCUDA_VA");
    sim.va_size = 0;
    if (va && *va && parse_size(va, &sim.va_size) != 0) {
        fprintf(stderr,
                "simcuda: ignoring SIMCUDA_VA=%s: expected a size from 2M to 4T (digits with an "
                "optional K, M, G or T suffix); using the automatic size\n",
                va);
        sim.va_size = 0;
    }
    const char *phys = getenv("SIMCUDA_PHYS");
    sim.contiguous = 0;
    if (phys && *phys) {
        if (strcmp(phys, "contiguous") == 0)
            sim.contiguous = 1;
        else if (strcmp(phys, "paged") != 0)
            fprintf(stderr,
                    "simcuda: ignoring SIMCUDA_PHYS=%s: expected paged or contiguous; using "
                    "paged\n",
                    phys);
    }
}
