/* The JSON report parses (python3 -m json.tool) and holds the documented keys. */
#include <limits.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "config/config.h"
#include "report/report.h"
#include "report_fill.h"

extern char **environ;

static int run_json_tool(const char *path)
{
    char *argv[] = {"python3", "-m", "json.tool", (char *)path, NULL};
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", 01 /* O_WRONLY */, 0);
    pid_t pid;
    int rc = posix_spawnp(&pid, "python3", &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    if (rc != 0) return -1;
    int status;
    CHECK_EQ(waitpid(pid, &status, 0), pid);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

int main(void)
{
    cf_config_reload();
    fill_hot_loop();
    fill_many_sizes();
    fill_oom_with_free_memory();

    /* Quotes and a tab in the path, "%%" for one percent sign. */
    const char *dir = temp_dir();
    char pattern[PATH_MAX], path[PATH_MAX];
    snprintf(pattern, sizeof pattern, "%s/weird \"name\"\t%%%%", dir);
    snprintf(path, sizeof path, "%s/weird \"name\"\t%%.json", dir);
    CHECK_EQ(cf_report_write(pattern, false, true, 0, "quote \" backslash \\ newline \n end"), 0);
    char *j = slurp(path);
    CHECK(j != NULL);
    CHECK_STR(j, "\"schema_version\":3");
    CHECK_STR(j, "\"reason\":\"quote \\\" backslash \\\\ newline \\n end\"");
    CHECK_STR(j, "\"summary\":{\"allocs\":2040,\"frees\":2000");
    CHECK_STR(j, "\"name\":\"cudaMalloc\",\"kind\":\"device\",\"calls\":2041");
    CHECK_STR(j, "\"id\":\"alloc-rate\",\"severity\":\"high\"");
    /* The sites a finding covers, with their share; a rate only over a second. */
    CHECK_STR(j, "\"measure\":\"calls\",\"site_count\":1,\"sites\":[{\"site\":{\"id\":");
    CHECK_STR(j, "\"stacks\":1,\"value\":2000,\"share\":1,\"note\":\"2000 calls within ");
    CHECK_STR(j, "\"numbers\":{\"calls\":2000,\"bytes\":2097152000,\"sites\":1,\"rate_per_s\":"
                 "null,\"span_s\":");
    CHECK_STR(j, "\"rate_per_s\":null,\"active_s\":");
    /* Full stacks, the shown frame marked; no Python in this process. */
    CHECK_STR(j, "\"shown_frame\":0,\"python_frames\":null,\"frames\":[{\"address\":\"0x");
    CHECK_STR(j, "\"function\":\"main\"");
    CHECK_STR(j, "\"function\":\"fill_hot_loop\"");
    CHECK_STR(j, "\"id\":\"oom-with-free-memory\"");
    CHECK_STR(j, "\"enough_free\":true");
    CHECK_STR(j, "\"failures\":1,\"errors\":[{\"code\":2,\"name\":\"cudaErrorMemoryAllocation\","
                 "\"count\":1}]");
    CHECK_STR(j, "\"id\":\"allocation-failures\",\"severity\":\"medium\"");
    /* The many-sizes site counted its sizes up to its limit, the hot loop one exactly. */
    CHECK_STR(j, "\"distinct_sizes\":9,\"distinct_sizes_capped\":true");
    CHECK_STR(j, "\"distinct_sizes\":1,\"distinct_sizes_capped\":false");
    CHECK_STR(j, "\"arena_vs_native\":{\"arena\":{\"active\":");
    free(j);

    int rc = run_json_tool(path);
    if (rc < 0) {
        fprintf(stderr, "python3 not found: JSON parse check skipped\n");
        return 77;
    }
    CHECK_EQ(rc, 0);
    return 0;
}
