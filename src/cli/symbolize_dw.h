/* Offline symbolization of trace frames with libdwfl: a frame is a module (the ELF
 * file's path and the build-id it had when traced) and an ELF virtual address in
 * it, so nothing of the traced process is needed, only its files. Part of the
 * cudafrag command only: the preloaded library never links libdw. */
#ifndef CF_CLI_SYMBOLIZE_DW_H
#define CF_CLI_SYMBOLIZE_DW_H

#include <stdint.h>

/* Modules opened so far, each read once however many frames it holds. */
struct cf_dw;

struct cf_dw_frame {
    char function[256]; /* demangled; "" when unknown */
    char file[512];     /* source path as compiled; "" when unknown */
    unsigned line, column;
    int inlined; /* 1: inlined into the next frame, at that frame's file:line */
    int stale;   /* 1: the file's build-id is not the traced one; nothing else is filled */
};

struct cf_dw *cf_dw_open(void);
void cf_dw_close(struct cf_dw *dw);

/* Frames for an ELF virtual address in module_path (runtime address minus the load
 * bias), innermost (deepest inlined) first. For a return address pass it minus 1,
 * so that the call is named rather than what follows it. build_id_hex (NULL or "":
 * not checked) is the module's build-id when traced. Returns how many frames were
 * filled, at most max: 0 when nothing is known, 1 with only a function name (from
 * the ELF symbol table) without debug information, 1 stale frame for a replaced
 * file, -1 when module_path cannot be read. Problems with a module are reported
 * on stderr once. */
int cf_dw_lookup(struct cf_dw *dw, const char *module_path, const char *build_id_hex,
                 uint64_t vaddr, struct cf_dw_frame *out, int max);

#endif
