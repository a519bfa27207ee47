/* `cudafrag import SNAPSHOT.pickle`: the pickle reader, the snapshot's
 * conversion to events, and the trace written from them. */
#include "cli/pickle.h"
#include "cli/snapshot_import.h"
#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct cf_pk_doc doc;
    if (cf_pk_parse(data, size, &doc) == 0) {
        const struct cf_pk *traces = cf_pk_get(doc.root, "device_traces");
        (void)cf_pk_get(doc.root, "segments");
        (void)cf_pk_is_str(traces, "x");
    }
    cf_pk_free(&doc);
    char *argv[] = {"import", "--output", "/dev/null", (char *)fuzz_file(data, size), NULL};
    fuzz_quiet();
    cf_cmd_import(4, argv);
    fuzz_loud();
    return 0;
}
