/* Who owns the memory: each call site is given to the library that allocated
 * (NCCL, cuBLAS, cuDNN, the other CUDA libraries), a framework's cache, CUDA
 * graphs, or the program itself, from the modules of its stack. Decided at
 * report time only (never in a hook); the rule is in docs/report.md#owners. */
#ifndef CF_REPORT_OWNERS_H
#define CF_REPORT_OWNERS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* X(enum, JSON key, text label, a library the program called: not the program,
 * its framework's cache or CUDA graphs) */
// clang-format off
#define CF_OWNERS(X)                                                                               \
    X(USER, "user-code", "user code", false)                                                       \
    X(CACHE, "framework-cache", "framework cache", false)                                          \
    X(NCCL, "nccl", "nccl", true)                                                                  \
    X(CUBLAS, "cublas", "cublas", true)                                                            \
    X(CUDNN, "cudnn", "cudnn", true)                                                               \
    X(CUDA_LIBS, "cuda-libs", "cuda-libs", true)                                                   \
    X(GRAPHS, "cuda-graphs", "cuda graphs", false)                                                 \
    X(UNKNOWN, "unknown", "unknown", false)
// clang-format on

enum cf_owner {
#define CF_OWNER_ENUM(id, key, label, library) CF_OWNER_##id,
    CF_OWNERS(CF_OWNER_ENUM)
#undef CF_OWNER_ENUM
        CF_OWNER_COUNT
};

struct cf_owner_info {
    const char *key, *label;
    bool library;
};
extern const struct cf_owner_info cf_owner_info[CF_OWNER_COUNT];

/* One owner's device memory (pinned host and managed memory left out). */
struct cf_owner_view {
    /* Its call sites' own peaks, summed: the owner's peak when they peak together
     * (caches and library buffers are held for the run), above it otherwise. */
    uint64_t peak_live;
    uint64_t live;        /* live at the report */
    uint64_t allocations; /* successful allocation calls */
    uint64_t bytes;       /* allocated over the run */
    unsigned sites;
    double share; /* peak_live over the devices' summed peak live (at most 1); 0: none */
};

/* ---- the rules, by module ---- */
/* What a frame's module says: the CUDA runtime or driver, or a binding that only
 * passes the call on (look further out); an owner; or nothing (CF_OWNER_USER:
 * the program, or any library not named). path: the module's full path. */
enum cf_owner_module { CF_MODULE_PASS, CF_MODULE_OWNER, CF_MODULE_PLAIN };
enum cf_owner_module cf_owner_of_module(const char *path, enum cf_owner *owner);
/* A library's entry point that allocates for its caller (ncclMemAlloc): the
 * memory is the caller's. */
bool cf_owner_allocates_for_caller(const char *function);

/* One frame as the rules see it: path "" when the frame is in no known module. */
struct cf_owner_frame {
    char path[512];
    char function[160];
    bool python;
};
/* Fills frame i of a stack (innermost first); the function only when asked
 * (it may cost a symbol lookup). False: no such frame. */
typedef bool (*cf_owner_frame_fn)(void *ctx, unsigned i, bool want_function,
                                  struct cf_owner_frame *out);
/* The owner of one stack of n frames; graph: allocated as graph memory. */
enum cf_owner cf_owner_of_stack(unsigned n, cf_owner_frame_fn frame, void *ctx, bool graph);

/* A frame's module path: installed by the `cudafrag` command for trace frames
 * (module, offset); NULL in the profiled process (the loader is asked).
 * Returns 0, or -1 when the frame is in no known module. */
typedef int (*cf_owner_path_fn)(uint64_t frame, char *path, size_t n);
extern cf_owner_path_fn cf_owner_path_resolver;

struct cf_snap;
/* s->site_owner and s->owners, after the symbols are resolved. 0, or -1 when
 * memory ran out. */
int cf_owners_compute(struct cf_snap *s);
/* The owner of snapshot site `site` (CF_OWNER_UNKNOWN for -1). */
enum cf_owner cf_snap_site_owner(const struct cf_snap *s, int site);

#endif
