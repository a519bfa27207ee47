/* What only the report knows of the trace: where it goes (CUDAFRAG_OUTPUT, the
 * rank), when it starts and ends, and whether a forked child traces. Its header,
 * events and END event are written by record/trace_*.c. */
#include "report/trace_out.h"

#include <limits.h>
#include <string.h>

#include "config/config.h"
#include "record/record.h"
#include "record/trace_end.h"
#include "record/trace_write.h"
#include "report/outpath.h"
#include "base/log.h"

void cf_report_trace_open(void)
{
    if (!cf_trace_on()) return;
    char path[PATH_MAX], err[PATH_MAX + 128];
    const char *pattern = cf_opt_str(CF_OPT_OUTPUT);
    if (pattern == NULL || pattern[0] == '\0') {
        cf_log("CUDAFRAG_TRACE=1 needs an output path (CUDAFRAG_OUTPUT is empty); tracing is off");
        cf_trace_finish(NULL);
        return;
    }
    if (cf_output_expand(pattern, ".cftrace", path, sizeof path, err, sizeof err) != 0) {
        cf_log("%s; tracing is off", err);
        cf_trace_finish(NULL);
        return;
    }
    static char header[16384];
    size_t len = cf_trace_header(header, sizeof header, cf_output_rank(), cf_rec.start_ns);
    cf_trace_open(path, header, (uint32_t)len);
}

enum cf_child_trace cf_report_trace_open_in_child(void)
{
    if (strstr(cf_opt_str(CF_OPT_OUTPUT), "%p") == NULL) {
        cf_trace_finish(NULL);
        return CF_CHILD_SAME_NAME;
    }
    cf_report_trace_open();
    return CF_CHILD_TRACED;
}

void cf_report_trace_end_in_child(void)
{
    cf_trace_finish(NULL);
}

void cf_report_trace_end(struct cf_snap *s)
{
    cf_trace_end(&s->arena, s->reason ? s->reason : "exit", s->now_ns, &s->trace);
}
