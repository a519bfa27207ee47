/* Named regions of a program (cudafrag_region_push/pop): the highest live bytes
 * and footprint of each device while the region was open. An allocation adds
 * nothing for them but a read of window_open on the device's first line
 * (footprint.c raises the window peaks only while one is open); the work is
 * here, at push and pop, under each device's slot lock in turn.
 *
 * Nested regions share one window per device: push saves the outer one and
 * starts the inner at the current figures; pop takes the inner's peaks and
 * gives the outer the higher of both, so the outer still sees what happened
 * inside. Regions are the process's (device memory is): threads' regions nest
 * in the order they are pushed and popped. */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "record/internal.h"

struct window {
    bool open;
    uint64_t live, footprint;
};

struct level {
    char name[64];
    struct window outer[CF_MAX_DEVICES]; /* each device's window before the push */
};

/* Taken before any record lock, never inside one. */
static pthread_mutex_t region_lock = PTHREAD_MUTEX_INITIALIZER;
static struct level stack[CF_REGION_DEPTH];
static int depth;

static void open_window(int device, struct window *saved)
{
    struct cf_device_stats *d = &cf_rec.dev[device];
    cf_slot_lock(device + 1);
    *saved = (struct window){d->window_open, d->window_live, d->window_footprint};
    d->window_live = d->live_bytes;
    d->window_footprint = d->footprint;
    d->window_open = true;
    cf_slot_unlock(device + 1);
}

/* The inner window's peaks into *inner; the outer window resumes with them. */
static void close_window(int device, const struct window *saved, struct window *inner)
{
    struct cf_device_stats *d = &cf_rec.dev[device];
    cf_slot_lock(device + 1);
    *inner = (struct window){d->seen, d->window_live, d->window_footprint};
    d->window_open = saved->open;
    if (saved->open) {
        if (saved->live > d->window_live) d->window_live = saved->live;
        if (saved->footprint > d->window_footprint) d->window_footprint = saved->footprint;
    }
    cf_slot_unlock(device + 1);
}

static struct cf_region *row_of(const char *name, int device)
{
    for (uint32_t i = 0; i < cf_rec.nregions; i++)
        if (cf_rec.regions[i].device == device && strcmp(cf_rec.regions[i].name, name) == 0)
            return &cf_rec.regions[i];
    if (cf_rec.nregions == CF_MAX_REGIONS) return NULL;
    struct cf_region *r = &cf_rec.regions[cf_rec.nregions++];
    memset(r, 0, sizeof *r);
    snprintf(r->name, sizeof r->name, "%s", name);
    r->device = device;
    return r;
}

/* Under the apply lock, as the report reads the rows. */
static void record_run(const char *name, int device, const struct window *w)
{
    cf_apply_lock();
    struct cf_region *r = row_of(name, device);
    if (r == NULL) {
        cf_rec.regions_dropped++;
    } else {
        r->runs++;
        if (w->live > r->peak_live) r->peak_live = w->live;
        if (w->footprint > r->peak_footprint) r->peak_footprint = w->footprint;
    }
    cf_apply_unlock();
}

/* 18874368 -> "18.0 MiB": the marker must be short (the report keeps 63 bytes). */
static void short_size(uint64_t v, char *out, size_t n)
{
    static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    double x = (double)v;
    unsigned u = 0;
    while (x >= 1024 && u < 4) {
        x /= 1024;
        u++;
    }
    snprintf(out, n, u ? "%.1f %s" : "%.0f %s", x, units[u]);
}

/* The trace keeps each run's figures as a marker (read by `cudafrag report` and
 * the exports as any other marker), the name last: a long one is what is cut. */
static void trace_run(const char *name, int device, const struct window *w)
{
    char text[256], live[32], footprint[32];
    short_size(w->live, live, sizeof live);
    short_size(w->footprint, footprint, sizeof footprint);
    int n = snprintf(text, sizeof text, "region: device %d peak live %s, footprint %s: %.63s",
                     device, live, footprint, name);
    struct cf_event e = {.type = CF_EV_MARK, .t_ns = cf_now_ns(), .str = text, .len = (uint32_t)n};
    cf_emit(&e);
}

int cf_region_push(const char *name)
{
    if (name == NULL) return -1;
    pthread_mutex_lock(&region_lock);
    int rc = -1;
    if (depth < CF_REGION_DEPTH) {
        struct level *l = &stack[depth++];
        snprintf(l->name, sizeof l->name, "%s", name);
        for (int d = 0; d < CF_MAX_DEVICES; d++)
            open_window(d, &l->outer[d]);
        rc = 0;
    }
    pthread_mutex_unlock(&region_lock);
    return rc;
}

int cf_region_peak(int device, uint64_t *live, uint64_t *footprint)
{
    if (device < 0 || device >= CF_MAX_DEVICES || live == NULL || footprint == NULL) return -1;
    pthread_mutex_lock(&region_lock);
    int rc = -1;
    if (depth > 0) {
        const struct cf_device_stats *d = &cf_rec.dev[device];
        cf_slot_lock(device + 1);
        *live = d->window_live;
        *footprint = d->window_footprint;
        cf_slot_unlock(device + 1);
        rc = 0;
    }
    pthread_mutex_unlock(&region_lock);
    return rc;
}

int cf_region_pop(void)
{
    pthread_mutex_lock(&region_lock);
    int rc = -1;
    if (depth > 0) {
        struct level *l = &stack[--depth];
        for (int d = 0; d < CF_MAX_DEVICES; d++) {
            struct window inner;
            close_window(d, &l->outer[d], &inner);
            if (!inner.open) continue; /* the device was never used: no row */
            record_run(l->name, d, &inner);
            trace_run(l->name, d, &inner);
        }
        rc = 0;
    }
    pthread_mutex_unlock(&region_lock);
    return rc;
}
