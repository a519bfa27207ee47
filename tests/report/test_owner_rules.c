/* Who owns the memory (docs/report.md#owners): the module rules, on the file
 * names and paths the libraries really have (pip wheels, the CUDA toolkit,
 * conda), and the stack rule on made-up stacks: the first frame past the CUDA
 * runtime decides, except past a library entry point that allocates for its
 * caller. */
#include <stdio.h>
#include <string.h>

#include "report/owners.h"

static int failed;

static void module_is(const char *path, enum cf_owner_module want_kind, enum cf_owner want)
{
    enum cf_owner got;
    enum cf_owner_module kind = cf_owner_of_module(path, &got);
    if (kind == want_kind && (kind != CF_MODULE_OWNER || got == want)) return;
    fprintf(stderr, "FAIL: %s: kind %d owner %s, want kind %d owner %s\n", path, kind,
            cf_owner_info[got].key, want_kind, cf_owner_info[want].key);
    failed++;
}

static void owner(const char *path, enum cf_owner want)
{
    module_is(path, CF_MODULE_OWNER, want);
}

static void passes(const char *path)
{
    module_is(path, CF_MODULE_PASS, CF_OWNER_USER);
}

static void plain(const char *path)
{
    module_is(path, CF_MODULE_PLAIN, CF_OWNER_USER);
}

/* A stack as "path:function" strings, innermost first; "py" is a Python frame,
 * "" a frame in no known module. */
struct stack {
    const char *const *frames;
    unsigned n;
};

static bool frame_of(void *ctx, unsigned i, bool want_function, struct cf_owner_frame *out)
{
    const struct stack *st = ctx;
    if (i >= st->n) return false;
    memset(out, 0, sizeof *out);
    out->python = strcmp(st->frames[i], "py") == 0;
    const char *colon = strchr(st->frames[i], ':');
    size_t len = colon ? (size_t)(colon - st->frames[i]) : strlen(st->frames[i]);
    if (!out->python) snprintf(out->path, sizeof out->path, "%.*s", (int)len, st->frames[i]);
    if (want_function && colon) snprintf(out->function, sizeof out->function, "%s", colon + 1);
    return true;
}

#define STACK_IS(want, graph, ...)                                                                 \
    do {                                                                                           \
        const char *const fr[] = {__VA_ARGS__};                                                    \
        struct stack st = {fr, sizeof fr / sizeof fr[0]};                                          \
        enum cf_owner got = cf_owner_of_stack(st.n, frame_of, &st, graph);                         \
        if (got != (want)) {                                                                       \
            fprintf(stderr, "FAIL: line %d: stack owned by %s, want %s\n", __LINE__,               \
                    cf_owner_info[got].key, cf_owner_info[want].key);                              \
            failed++;                                                                              \
        }                                                                                          \
    } while (0)

static void module_rules(void)
{
    owner("/usr/lib/x86_64-linux-gnu/libnccl.so.2", CF_OWNER_NCCL);
    owner("/venv/lib/python3.12/site-packages/nvidia/nccl/lib/libnccl.so.2", CF_OWNER_NCCL);
    owner("/opt/hpcx/nccl_rdma_sharp_plugin/lib/libnccl-net.so", CF_OWNER_NCCL);
    owner("/usr/local/cuda-12.8/lib64/libcublas.so.12", CF_OWNER_CUBLAS);
    owner("/usr/local/cuda/lib64/libcublasLt.so.12.8.4.1", CF_OWNER_CUBLAS);
    owner("/venv/site-packages/nvidia/cudnn/lib/libcudnn_engines_precompiled.so.9", CF_OWNER_CUDNN);
    owner("/usr/lib/x86_64-linux-gnu/libcudnn.so.8", CF_OWNER_CUDNN);
    owner("/usr/local/cuda/lib64/libcufft.so.11", CF_OWNER_CUDA_LIBS);
    owner("/usr/local/cuda/lib64/libcusolver.so.11", CF_OWNER_CUDA_LIBS);
    owner("/usr/local/cuda/lib64/libcusparse.so.12", CF_OWNER_CUDA_LIBS);
    owner("/usr/local/cuda/lib64/libcurand.so.10", CF_OWNER_CUDA_LIBS);
    owner("/usr/local/cuda/lib64/libnvrtc.so.12", CF_OWNER_CUDA_LIBS);
    owner("/usr/local/cuda/lib64/libnvJitLink.so.12", CF_OWNER_CUDA_LIBS);
    owner("/venv/site-packages/torch/lib/libc10_cuda.so", CF_OWNER_CACHE);
    owner("/venv/site-packages/jaxlib/xla_extension.so", CF_OWNER_CACHE);
    owner("/venv/site-packages/jaxlib/_jax.so", CF_OWNER_CACHE);
    owner("/venv/site-packages/jax_plugins/xla_cuda12/xla_cuda_plugin.so", CF_OWNER_CACHE);
    owner("/venv/site-packages/libtpu/libtpu.so", CF_OWNER_CACHE);
    owner("/venv/site-packages/cupy/cuda/memory.cpython-312-x86_64-linux-gnu.so", CF_OWNER_CACHE);
    passes("/usr/lib/x86_64-linux-gnu/libcuda.so.1");
    passes("/usr/local/cuda/lib64/libcudart.so.12.8.90");
    passes("/venv/site-packages/cupy_backends/cuda/api/runtime.cpython-312-x86_64-linux-gnu.so");
    passes("/venv/site-packages/cuda/bindings/cyruntime.cpython-312-x86_64-linux-gnu.so");
    /* The program, the rest of PyTorch, Python and everything not named. */
    plain("/home/me/app");
    plain("(program)");
    plain("/venv/site-packages/torch/lib/libtorch_cuda.so");
    plain("/usr/lib/libpython3.12.so.1.0");
    plain("/venv/site-packages/cupy/_core/core.cpython-312-x86_64-linux-gnu.so");
    plain("/home/me/libcudalike.so"); /* "libcuda" alone is not the driver */
    plain("/home/me/cuda/libmine.so");
}

static void stack_rules(void)
{
    const char *drv = "/usr/lib/libcuda.so.1:cuMemAlloc_v2";
    const char *rt = "/usr/local/cuda/lib64/libcudart.so.12:cudaMalloc";
    const char *nccl = "/usr/lib/libnccl.so.2:ncclCommInitRank";
    const char *nccl_mem = "/usr/lib/libnccl.so.2:ncclMemAlloc";
    const char *c10 = "/t/lib/libc10_cuda.so:c10::cuda::CUDACachingAllocator::Native::malloc";
    const char *app = "/home/me/app:main";
    /* NCCL's own buffers, called from the framework or the program: NCCL's. */
    STACK_IS(CF_OWNER_NCCL, false, drv, rt, nccl, "/t/lib/libtorch_cuda.so:init", app);
    STACK_IS(CF_OWNER_NCCL, false, nccl, app);
    /* ... but what ncclMemAlloc hands a cache is the cache's, the program's its own. */
    STACK_IS(CF_OWNER_CACHE, false, drv, "/usr/lib/libnccl.so.2:ncclCuMemAlloc", nccl_mem, c10,
             app);
    STACK_IS(CF_OWNER_USER, false, rt, nccl_mem, app);
    STACK_IS(CF_OWNER_NCCL, false, rt, nccl_mem); /* no caller left: NCCL's */
    /* The framework's cache, whatever called it; the cache calling cuBLAS is cuBLAS's. */
    STACK_IS(CF_OWNER_CACHE, false, rt, c10, "/usr/lib/libcublas.so.12:cublasCreate", app);
    STACK_IS(CF_OWNER_CUBLAS, false, rt, "/usr/lib/libcublasLt.so.12:x", c10, app);
    STACK_IS(CF_OWNER_USER, false, rt, app);
    STACK_IS(CF_OWNER_USER, false, rt, "py", app);
    /* A binding passes the call on: CuPy's pool past its runtime wrapper. */
    STACK_IS(CF_OWNER_CACHE, false, "/s/cupy_backends/cuda/api/runtime.so:malloc",
             "/s/cupy/cuda/memory.cpython-312-x86_64-linux-gnu.so:_malloc", "py");
    /* Nothing to go by: unknown. A graph allocation is the graphs', wherever it came from. */
    STACK_IS(CF_OWNER_UNKNOWN, false, rt, "", app);
    STACK_IS(CF_OWNER_UNKNOWN, false, drv, rt);
    STACK_IS(CF_OWNER_GRAPHS, true, rt, c10, app);
    static const char *const none[1];
    struct stack empty = {none, 0};
    if (cf_owner_of_stack(0, frame_of, &empty, false) != CF_OWNER_UNKNOWN) {
        fprintf(stderr, "FAIL: a site without frames (stacks off) is not unknown\n");
        failed++;
    }
}

int main(void)
{
    module_rules();
    stack_rules();
    if (failed) return 1;
    printf("ok\n");
    return 0;
}
