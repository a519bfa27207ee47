/* `cudafrag report [--json] TRACE` on the input: load, both passes of the replay
 * through the record and report code, the snapshot, findings and rendering.
 * The record keeps its tables from one input to the next (it has no reset, as a
 * process records once): a crash input is re-run alone to confirm it. */
#include "cli/replay.h"
#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static FILE *sink;
    if (sink == NULL) sink = fopen("/dev/null", "w");
    const char *path = fuzz_file(data, size);
    cf_replay_dwarf = false;
    fuzz_quiet();
    cf_replay_report(path, size > 0 && (data[size - 1] & 1), sink);
    fuzz_loud();
    return 0;
}
