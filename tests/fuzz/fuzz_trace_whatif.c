/* `cudafrag replay TRACE`: the trace's allocation stream through every
 * allocator model. */
#include "cli/replay.h"
#include "cli/whatif.h"
#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *argv[] = {"replay", "--device-memory", "1G", (char *)fuzz_file(data, size), NULL};
    cf_replay_dwarf = false;
    fuzz_quiet();
    cf_cmd_replay(4, argv);
    fuzz_loud();
    return 0;
}
