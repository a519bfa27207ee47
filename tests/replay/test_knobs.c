/* Model specifications: knobs by type and range, labels, errors that name
 * the model, the knob and what it accepts; the best setting of a sweep. */
#include <string.h>

#include "check.h"
#include "replay/model.h"
#include "replay/table.h"

static struct cf_rp_config c;
static char err[256];

static void ok(const char *spec, const char *label)
{
    if (cf_rp_config_parse(spec, &c, err, sizeof err) != 0) {
        fprintf(stderr, "%s: %s\n", spec, err);
        exit(1);
    }
    CHECK_STR(c.label, label);
    CHECK_EQ(strlen(c.label), strlen(label));
}

static void bad(const char *spec, const char *message)
{
    CHECK_EQ(cf_rp_config_parse(spec, &c, err, sizeof err), -1);
    CHECK_STR(err, message);
}

int main(void)
{
    ok("pytorch", "pytorch");
    CHECK_EQ(c.val[0].u, UINT64_MAX); /* max_split_size_mb default: max */
    CHECK_EQ(c.val[1].u, 20);
    ok("pytorch:expandable_segments=True,max_split_size_mb=128",
       "pytorch:max_split_size_mb=128,expandable_segments=True"); /* in the model's order */
    CHECK_EQ(c.val[0].u, 128);
    CHECK_EQ(c.val[5].u, 1);
    ok("pytorch:roundup_power2_divisions=8", "pytorch:roundup_power2_divisions=8");
    ok("pytorch:garbage_collection_threshold=0.8,memory_fraction=1",
       "pytorch:garbage_collection_threshold=0.8,memory_fraction=1");
    CHECK(c.val[3].d > 0.79 && c.val[3].d < 0.81);
    ok("async-pool:release_threshold=64M", "async-pool:release_threshold=64M");
    CHECK_EQ(c.val[0].u, (uint64_t)64 << 20);
    ok("async-pool:release_threshold=max", "async-pool:release_threshold=max");
    CHECK_EQ(c.val[0].u, UINT64_MAX);
    ok("driver:placement=model", "driver:placement=model");
    CHECK_EQ(c.val[0].u, 1);
    ok("arena:slack=0", "arena:slack=0");

    bad("tcmalloc", "unknown model \"tcmalloc\"");
    bad("pytorch:max_split_size_mb=19", "expected a number of MiB from 20");
    bad("pytorch:roundup_power2_divisions=3", "0 or a power of two");
    bad("pytorch:garbage_collection_threshold=1", "a number from 0 to");
    bad("pytorch:expandable_segments=maybe", "True or False");
    bad("pytorch:nope=1", "model pytorch has no knob \"nope\"");
    bad("pytorch:max_split_size_mb", "expected KNOB=VALUE");
    bad("pytorch:", "expected KNOB=VALUE");
    bad("driver:placement=random", "one of trace|model");
    bad("async-pool:release_threshold=-1", "expected a size");
    bad("lower-bound:x=1", "has no knob");

    /* The best of a sweep: no out of memory first, then the lowest peak, then
     * the fewest driver calls, then the first. */
    struct cf_rp_result r[5] = {0};
    r[0].peak_footprint = 10, r[0].oom = true;
    r[1].peak_footprint = 30, r[1].driver_calls = 9;
    r[2].peak_footprint = 30, r[2].driver_calls = 5;
    r[3].peak_footprint = 20, r[3].driver_calls = 5;
    snprintf(r[3].error, sizeof r[3].error, "did not run");
    r[4].peak_footprint = 30, r[4].driver_calls = 5;
    CHECK_EQ(cf_rp_sweep_best(r, 0, 5), 2);
    CHECK_EQ(cf_rp_sweep_best(r, 0, 1), 0); /* out of memory, but the only one */
    CHECK_EQ(cf_rp_sweep_best(r, 3, 1), -1);
    printf("replay knobs: all checks passed\n");
    return 0;
}
