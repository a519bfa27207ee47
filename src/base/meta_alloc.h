/* cudafrag's own memory for its tables and nodes: mmap-backed size classes, so
 * that recording never calls malloc (the hooks may run inside the application's
 * malloc, a signal handler's caller, or while we hold a record lock). */
#ifndef CF_BASE_META_ALLOC_H
#define CF_BASE_META_ALLOC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

void *cf_meta_alloc(size_t size);
void cf_meta_free(void *p, size_t size);

/* Requests above this go straight to mmap/munmap (uthash bucket arrays of big tables). */
#define CF_META_MAX_CLASS 65536

struct cf_meta_stats {
    uint64_t mapped; /* bytes obtained from mmap (slabs and large blocks) */
    uint64_t in_use; /* bytes handed out (rounded to their class) */
};
void cf_meta_get_stats(struct cf_meta_stats *out);
/* The size a request really occupies (its class, or whole pages when large). */
size_t cf_meta_class_size(size_t size);

/* Fork handlers: hold every class lock across fork (taken after the record locks). */
void cf_meta_lock_all(void);
void cf_meta_unlock_all(void);

#endif
