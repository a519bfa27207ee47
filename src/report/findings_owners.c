/* The library-memory finding: a CUDA library the program called (NCCL, cuBLAS,
 * cuDNN, the other CUDA libraries) owns a large part of the peak -- memory the
 * program's own numbers and its framework's never show (owners.c says who owns
 * what). */
#include "report/findings_rules.h"

#include <stdio.h>
#include <stdlib.h>

static const char *const advice_of[CF_OWNER_COUNT] = {
    [CF_OWNER_NCCL] =
        "NCCL's buffers grow with its channels and peers: lower NCCL_BUFFSIZE (4 MiB per "
        "channel and peer by default) or NCCL_MAX_NCHANNELS, set NCCL_NVLS_ENABLE=0 where "
        "NVLink SHARP is not needed, and destroy the communicators no longer used "
        "(ncclCommDestroy; in PyTorch, torch.distributed.destroy_process_group or fewer "
        "process groups)",
    [CF_OWNER_CUBLAS] =
        "cuBLAS keeps a workspace per handle and stream: CUBLAS_WORKSPACE_CONFIG=:4096:2 (or "
        ":16:8) limits it, cublasSetWorkspace gives it memory of your own; in PyTorch "
        "CUBLASLT_WORKSPACE_SIZE (KiB) sizes cuBLASLt's, and fewer streams hold fewer",
    [CF_OWNER_CUDNN] =
        "cuDNN's workspaces follow the algorithms it picks: cap them with "
        "CUDNN_CONV_WSCAP_DBG (MiB); in PyTorch, torch.backends.cudnn.benchmark = False picks "
        "without trying the memory-hungry ones",
    [CF_OWNER_CUDA_LIBS] =
        "destroy the plans and handles no longer needed (cufftDestroy, cusparseDestroy, "
        "cusolverDnDestroy, ...), give cuFFT a work area of your own (cufftSetAutoAllocation "
        "off, cufftSetWorkArea); in PyTorch bound torch.backends.cuda.cufft_plan_cache.max_size",
};

static const char *const name_of[CF_OWNER_COUNT] = {
    [CF_OWNER_NCCL] = "NCCL",
    [CF_OWNER_CUBLAS] = "cuBLAS",
    [CF_OWNER_CUDNN] = "cuDNN",
    [CF_OWNER_CUDA_LIBS] = "the other CUDA libraries (cuFFT, cuSOLVER, cuSPARSE, ...)",
};

static void library_note(const struct cf_snap *s, struct cf_finding_site *e)
{
    snprintf(e->note, sizeof e->note, "peak live %s in %llu allocation%s", B((uint64_t)e->value),
             (unsigned long long)e->count, e->count == 1 ? "" : "s");
}

static void library_finding(struct cf_snap *s, enum cf_owner o)
{
    const struct cf_owner_view *v = &s->owners[o];
    struct cf_cover c = {0};
    for (unsigned i = 0; i < s->nsites; i++)
        if (cf_snap_site_owner(s, (int)i) == o && s->sites[i].peak_live_bytes)
            cf_cover_add(s, &c, (int)i, (double)s->sites[i].peak_live_bytes, s->sites[i].calls);
    struct cf_finding *f = cf_finding_add(
        s, "library-memory", v->share >= CF_LIBRARY_MEDIUM_SHARE ? "medium" : "low", "bytes");
    if (f == NULL) {
        free(c.p);
        return;
    }
    cf_cover_finish(s, f, &c, library_note);
    cf_finding_num(f, "peak_live_bytes", (double)v->peak_live);
    cf_finding_num(f, "share_of_peak", v->share);
    cf_finding_num(f, "live_bytes", (double)v->live);
    cf_finding_num(f, "sites", v->sites);
    char w[512];
    cf_finding_title(f, "%s (owner %s) held %s at its peak, %.1f%% of the peak live memory (%s)",
                     name_of[o], cf_owner_info[o].key, B(v->peak_live), 100 * v->share,
                     cf_finding_where(s, f, w, sizeof w));
    cf_finding_advice(f, "%s", advice_of[o]);
}

void cf_library_memory_rule(struct cf_snap *s)
{
    for (int o = 0; o < CF_OWNER_COUNT; o++)
        if (cf_owner_info[o].library && s->owners[o].share >= CF_LIBRARY_SHARE &&
            s->owners[o].peak_live >= CF_LIBRARY_MIN_BYTES)
            library_finding(s, (enum cf_owner)o);
}
