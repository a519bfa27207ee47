/* The CUDAFRAG_* values cudafrag reads from the environment: the input's first
 * byte picks the variable, the rest (up to a NUL) is its value. Besides the
 * table's parsers, the value is also used as CUDAFRAG_OUTPUT (expanded as a report
 * path) and as CUDAFRAG_SKIP_FRAMES (matched against a frame). */
#include <stdlib.h>
#include <string.h>

#include "config/config.h"
#include "fuzz_common.h"
#include "report/fold.h"
#include "report/outpath.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0) return 0;
    char value[4096];
    size_t n = size - 1 < sizeof value - 1 ? size - 1 : sizeof value - 1;
    memcpy(value, data + 1, n);
    value[n] = '\0';
    const struct cf_option *o = &cf_options[data[0] % CF_OPT_COUNT];
    fuzz_quiet();
    setenv(o->name, value, 1);
    cf_config_reload();
    (void)cf_opt_bool(CF_OPT_STDERR);
    (void)cf_opt_int(CF_OPT_TOP);
    (void)cf_opt_size(CF_OPT_ARENA_RESERVE);
    char path[4096], err[4096 + 128];
    cf_output_expand(value, ".txt", path, sizeof path, err, sizeof err);
    setenv("CUDAFRAG_SKIP_FRAMES", value, 1);
    cf_config_reload();
    struct cf_sym sym;
    memset(&sym, 0, sizeof sym);
    snprintf(sym.function, sizeof sym.function, "c10::cuda::CUDACachingAllocator::malloc");
    snprintf(sym.module, sizeof sym.module, "libc10_cuda.so");
    snprintf(sym.file, sizeof sym.file, "model.py");
    (void)cf_fold_frame(&sym);
    unsetenv(o->name);
    unsetenv("CUDAFRAG_SKIP_FRAMES");
    fuzz_loud();
    return 0;
}
