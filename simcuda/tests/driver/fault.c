/* SIMCUDA_FAULT: driver calls fail by count, by name (or prefix) and at random
 * with a seed, with the default or a chosen code; only the outermost entry point
 * of a call counts; bad rules are refused with one message. The rules are read
 * once per process, so each case runs in a child of its own. */
#include "simtest.h"

#include <dlfcn.h>
#include <sys/wait.h>
#include <unistd.h>

#define RANDOM_CALLS 64

typedef void (*scenario)(void);

static void run(const char *rules, const char *seed, scenario fn)
{
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        setenv("SIMCUDA_FAULT", rules, 1);
        if (seed) setenv("SIMCUDA_FAULT_SEED", seed, 1);
        fn();
        _exit(0);
    }
    int status;
    CHECK_EQ(waitpid(pid, &status, 0), pid);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        fprintf(stderr, "case SIMCUDA_FAULT=%s failed\n", rules);
        exit(1);
    }
}

static void nth_call(void)
{
    sim_setup(0);
    CUdeviceptr p;
    CHECK_CU(cuMemAlloc(&p, 4096));
    CHECK_EQ(cuMemAlloc(&p, 4096), CUDA_ERROR_OUT_OF_MEMORY); /* an allocation: OOM */
    CHECK_CU(cuMemAlloc(&p, 4096));
    CHECK_EQ(simcudaFaultCount(), 1);
    CHECK_EQ(sim_stats(0).alloc_calls, 2); /* the failed call did nothing */
}

static void onward_with_code(void)
{
    sim_setup(0);
    CUdeviceptr p;
    CHECK_CU(cuMemAlloc(&p, 4096));
    for (int i = 0; i < 3; i++)
        CHECK_EQ(cuMemAlloc(&p, 4096), CUDA_ERROR_INVALID_VALUE);
    CHECK_EQ(simcudaFaultCount(), 3);
}

static void prefix(void)
{
    sim_setup(0);
    CUdeviceptr p;
    CHECK_CU(cuMemAlloc(&p, 4096));
    CHECK_EQ(cuMemsetD8(p, 0, 16), CUDA_ERROR_UNKNOWN); /* not an allocation */
    CHECK_EQ(cuMemsetD8Async(p, 0, 16, NULL), CUDA_ERROR_UNKNOWN);
    CHECK_CU(cuMemsetD16(p, 0, 8));
}

static void any_call(void)
{
    CUcontext ctx;
    CHECK_CU(cuInit(0));
    CHECK_CU(cuDevicePrimaryCtxRetain(&ctx, 0));
    CHECK_EQ(cuCtxSetCurrent(ctx), CUDA_ERROR_UNKNOWN);
    CHECK_CU(cuCtxSetCurrent(ctx));
}

static void outermost_only(void)
{
    /* cuDeviceGetUuid_v2 calls cuDeviceGetUuid inside the driver. (cuda.h renames
     * cuDeviceGetUuid to the _v2 form: the old one is reached by its symbol.) */
    CUresult (*old)(CUuuid *, CUdevice) =
        (CUresult(*)(CUuuid *, CUdevice))dlsym(RTLD_DEFAULT, "cuDeviceGetUuid");
    CHECK(old != NULL);
    CUuuid u;
    CHECK_CU(cuInit(0));
    CHECK_CU(cuDeviceGetUuid_v2(&u, 0));
    CHECK_EQ(old(&u, 0), CUDA_ERROR_UNKNOWN);
}

/* The pattern of failed calls, one bit per call; other entry points called in
 * between (as a profiler's queries would be) must not change it. */
static uint64_t random_pattern(int queries)
{
    sim_setup(0);
    uint64_t bits = 0;
    for (int i = 0; i < RANDOM_CALLS; i++) {
        CUdeviceptr p;
        CUresult rc = cuMemAlloc(&p, 4096);
        if (rc == CUDA_SUCCESS)
            CHECK_CU(cuMemFree(p));
        else
            bits |= 1ull << i;
        for (int q = 0; q < queries; q++) {
            size_t f, t;
            CHECK_CU(cuMemGetInfo(&f, &t));
        }
    }
    return bits;
}

static int pattern_fd = -1;

static void record_pattern(int queries)
{
    uint64_t bits = random_pattern(queries);
    CHECK_EQ(write(pattern_fd, &bits, sizeof bits), (long)sizeof bits);
}

static void random_plain(void)
{
    record_pattern(0);
}

static void random_with_queries(void)
{
    record_pattern(3);
}

static uint64_t pattern(const char *rules, const char *seed, scenario fn)
{
    int fds[2];
    CHECK_EQ(pipe(fds), 0);
    pattern_fd = fds[1];
    run(rules, seed, fn);
    uint64_t bits = 0;
    CHECK_EQ(read(fds[0], &bits, sizeof bits), (long)sizeof bits);
    close(fds[0]);
    close(fds[1]);
    return bits;
}

static void logged(void)
{
    sim_setup(0);
    CUdeviceptr p;
    CHECK_EQ(cuMemAlloc(&p, 4096), CUDA_ERROR_OUT_OF_MEMORY);
    CHECK_EQ(cuMemAlloc(&p, 4096), CUDA_ERROR_OUT_OF_MEMORY);
}

static char text[4096];

static void bad_rules(void)
{
    char path[] = "/tmp/simcuda-fault-XXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    unlink(path);
    int saved = dup(2);
    dup2(fd, 2);
    sim_setup(0);
    dup2(saved, 2);
    CHECK(pread(fd, text, sizeof text - 1, 0) > 0);
    CHECK_STR(text, "simcuda: ignoring SIMCUDA_FAULT=");
    CHECK_STR(text, "no fault is injected\n");
    CHECK_STR(text,
              "simcuda: ignoring SIMCUDA_FAULT_SEED=x: expected an unsigned integer; using 1\n");
    CUdeviceptr p;
    CHECK_CU(cuMemAlloc(&p, 4096));
    CHECK_EQ(simcudaFaultCount(), 0);
}

int main(void)
{
    run("cuMemAlloc_v2@2", NULL, nth_call);
    run("cuMemAlloc_v2@2+=1", NULL, onward_with_code);
    run("cuMemsetD8*", NULL, prefix);
    run("*@3", NULL, any_call);
    run("cuDeviceGetUuid", NULL, outermost_only);

    uint64_t a = pattern("random:0.5:cuMemAlloc_v2", "42", random_plain);
    uint64_t b = pattern("random:0.5:cuMemAlloc_v2", "42", random_with_queries);
    uint64_t c = pattern("random:0.5:cuMemAlloc_v2", "43", random_plain);
    CHECK(a == b); /* the seed decides, not the calls around */
    CHECK(a != c);
    int failed = __builtin_popcountll(a);
    CHECK(failed > RANDOM_CALLS / 4 && failed < RANDOM_CALLS * 3 / 4);
    CHECK_EQ(pattern("random:1:cuMemAlloc*", "5", random_plain), ~0ull);

    char log[] = "/tmp/simcuda-faultlog-XXXXXX";
    int fd = mkstemp(log);
    CHECK(fd >= 0);
    setenv("SIMCUDA_FAULT_LOG", log, 1);
    run("cuMemAlloc*", NULL, logged);
    unsetenv("SIMCUDA_FAULT_LOG");
    CHECK(pread(fd, text, sizeof text - 1, 0) > 0);
    unlink(log);
    CHECK(strcmp(text, "cuMemAlloc_v2 2\ncuMemAlloc_v2 2\n") == 0);

    static const char *const bad[] = {"cuMemAlloc_v2@0", "random:2", "random:0.1:x-y",
                                      "a@1,b@2=0",       "@3",       "cuMemFree_v2@x"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        run(bad[i], "x", bad_rules);
    return 0;
}
