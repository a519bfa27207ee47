/* Which frames are allocator or framework plumbing: a call site is shown at its
 * first frame that is not. Built-in patterns name the CUDA runtime, the CPython
 * call machinery and the allocators of common frameworks (docs/report.md lists
 * them); CUDAFRAG_SKIP_FRAMES adds the program's own. */
#include "report/fold.h"

#include <string.h>

#include "config/config.h"

// clang-format off
static const char builtin[] =
    /* the CUDA runtime and driver */
    "libcudart.so*,libcuda.so*,cudart::*,__cudart*,"
    "cudaMalloc*,cudaHostAlloc*,cudaHostRegister*,cudaGraphAddMemAllocNode*,"
    /* process start-up; CPython's own call machinery, ctypes and libffi */
    "libc.so*,_start,libpython3*,python3*,_ctypes*,libffi.so*,pybind11::*,"
    /* PyTorch: the caching allocator, storage, tensor creation, the dispatcher */
    "c10::cuda::CUDACachingAllocator::*,c10::StorageImpl::*,c10::impl::*,c10::Dispatcher::*,"
    "c10::KernelFunction::*,at::detail::*,at::*empty*,"
    /* CuPy's memory pool and runtime wrappers (Cython names) */
    "*4cupy_4cuda_6memory*,*13cupy_backends_4cuda_3api_7runtime*,"
    /* XLA / JAX */
    "tsl::*Allocator*,tensorflow::*Allocator*,stream_executor::*,xla::*Allocator*,"
    /* thrust / CUB temporary storage, RAPIDS RMM */
    "thrust::*,cub::*,cuda::mr::*,rmm::*";

/* The frameworks as a whole: folded so that a site is shown where the program
 * called in, but, unlike the plumbing above, still shown when a stack holds
 * nothing else (an autograd thread's: torch::autograd::Node::operator()). */
static const char builtin_framework[] = "libtorch*.so*,libc10*.so*";

/* Python frames of the frameworks' own packages: a PyTorch program's allocations are
 * made under torch/nn/modules, torch/_tensor.py, torch/optim, ...; the line to show
 * is the program's own that called into them. Matched against the file. */
static const char builtin_python[] =
    "*/site-packages/torch/*,*/dist-packages/torch/*,"
    "*/site-packages/cupy/*,*/site-packages/cupyx/*,*/dist-packages/cupy/*,"
    "*/site-packages/jax/*,*/site-packages/jaxlib/*,*/dist-packages/jax/*,"
    "*/site-packages/flax/*,*/site-packages/triton/*";
// clang-format on

const char *cf_fold_builtin(void)
{
    return builtin;
}

/* '*' matches any run of characters; everything else itself. p..pend is one
 * pattern of a comma-separated list. */
static bool glob(const char *p, const char *pend, const char *s)
{
    const char *star = NULL, *resume = NULL;
    while (*s) {
        if (p < pend && *p == '*') {
            star = p++;
            resume = s;
        } else if (p < pend && *p == *s) {
            p++;
            s++;
        } else if (star) {
            p = star + 1;
            s = ++resume;
        } else {
            return false;
        }
    }
    while (p < pend && *p == '*')
        p++;
    return p == pend;
}

static bool any_matches(const char *list, const char *const *names, unsigned nnames)
{
    for (const char *p = list; p && *p;) {
        size_t len = strcspn(p, ",");
        const char *end = p + len;
        while (p < end && *p == ' ')
            p++;
        for (unsigned i = 0; p < end && i < nnames; i++)
            if (names[i][0] && glob(p, end, names[i])) return true;
        p = *end ? end + 1 : end;
    }
    return false;
}

/* Native frames by function (the one the code belongs to, as the symbol table
 * names it), module and module path; Python frames by function and file, and
 * by the frameworks' package folders and the program's patterns. */
static bool plumbing(const struct cf_sym *s)
{
    const char *base = strrchr(s->file, '/');
    const char *names[3] = {s->symbol[0] ? s->symbol : s->function, s->module, s->path};
    if (s->python) {
        names[1] = s->file;
        names[2] = base ? base + 1 : s->file;
    }
    return (!s->python && any_matches(builtin, names, 3)) ||
           any_matches(cf_opt_str(CF_OPT_SKIP_FRAMES), names, 3);
}

static bool framework(const struct cf_sym *s)
{
    const char *file = s->file;
    const char *names[2] = {s->module, s->path};
    return s->python ? any_matches(builtin_python, &file, 1)
                     : any_matches(builtin_framework, names, 2);
}

bool cf_fold_match(const char *list, const char *name)
{
    return any_matches(list, &name, 1);
}

bool cf_fold_frame(const struct cf_sym *s)
{
    return plumbing(s) || framework(s);
}

bool cf_fold_framework_only(const struct cf_sym *s)
{
    return framework(s) && !plumbing(s);
}
