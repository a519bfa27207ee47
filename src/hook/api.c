/* The public API, all of it (include/cudafrag/cudafrag.h): the version, a report on
 * demand, the counters a program can read, markers for the trace, regions. */
#include "cudafrag/cudafrag.h"

#include "record/record.h"
#include "report/report.h"
#include "base/export.h"

#include <string.h>

#include "cudafrag_build.h"

/* Exported names count under their API: cuMemAlloc_v2 and cuMemAllocAsync_ptsz
 * are cuMemAlloc and cuMemAllocAsync. */
static size_t base_length(const char *name)
{
    size_t n = strlen(name);
    static const char *const suffixes[] = {"_ptsz", "_v2"};
    for (size_t i = 0; i < sizeof suffixes / sizeof suffixes[0]; i++) {
        size_t k = strlen(suffixes[i]);
        if (n > k && strcmp(name + n - k, suffixes[i]) == 0) n -= k;
    }
    return n;
}

CF_EXPORT long long cudafrag_api_calls(const char *api)
{
    if (api == NULL) return -1;
    size_t n = base_length(api);
    for (int i = 0; i < CF_API_COUNT; i++)
        if (strncmp(cf_api_info[i].name, api, n) == 0 && cf_api_info[i].name[n] == '\0')
            return (long long)cf_rec_api_calls((enum cf_api)i);
    return -1;
}

CF_EXPORT long long cudafrag_live_bytes(int device)
{
    if (device < 0 || device >= CF_MAX_DEVICES) return -1;
    return (long long)__atomic_load_n(&cf_rec.dev[device].live_bytes, __ATOMIC_RELAXED);
}

CF_EXPORT int cudafrag_mark(const char *label)
{
    if (label == NULL) return -1;
    cf_rec_mark(label);
    return 0;
}

CF_EXPORT int cudafrag_region_push(const char *name)
{
    return cf_rec_region_push(name);
}

CF_EXPORT int cudafrag_region_pop(void)
{
    return cf_rec_region_pop();
}

CF_EXPORT int cudafrag_region_peak(int device, unsigned long long *peak_live,
                                   unsigned long long *peak_footprint)
{
    uint64_t live, footprint;
    if (cf_rec_region_peak(device, &live, &footprint) != 0) return -1;
    if (peak_live) *peak_live = live;
    if (peak_footprint) *peak_footprint = footprint;
    return 0;
}

CF_EXPORT const char *cudafrag_version(void)
{
    return CUDAFRAG_VERSION;
}

CF_EXPORT int cudafrag_report_now(void)
{
    return cf_report_interim("cudafrag_report_now");
}
