/* The record's read API (read.c): what the report consumes. */
#ifndef CF_RECORD_READ_H
#define CF_RECORD_READ_H

#include "record/record.h"

/* Live allocations of one call site and kind, at the time of the copy. */
struct cf_live_group {
    int site; /* index into the copy's sites, -1 when the allocation had no site */
    enum cf_kind kind;
    uint64_t bytes, count;
    uint64_t requested, granted; /* only allocations whose granted size is known */
};

/* The name of a Python frame some copied site has: CF_FRAME(CF_PY_MODULE, id). */
struct cf_rec_pyname {
    uint32_t id;
    struct cf_pyframe frame; /* its strings live as long as the process */
};

struct cf_rec_read {
    uint64_t now_ns;       /* when the copy was taken */
    struct cf_record rec;  /* the scalars; its hash heads are NULL */
    struct cf_site *sites; /* sorted by hash */
    unsigned nsites;
    struct cf_pool *pools;
    unsigned npools;
    struct cf_live_group *live; /* by bytes, largest first */
    unsigned nlive;
    uint64_t live_bytes, live_count;
    unsigned held;                 /* CF_REC_HELD_*: the tables copied; the others are empty */
    struct cf_rec_pyname *pynames; /* by id: every Python frame of the sites known */
    unsigned npynames;
};

/* 0, or -1 when memory ran out (nothing to free then). */
int cf_rec_read(struct cf_rec_read *r);
/* The same, for a report that may run while a thread that will never release it
 * holds a record lock (exit() from a signal handler): each lock is waited for
 * until deadline at most, and what it guards is left out when it is not had. */
int cf_rec_read_until(struct cf_rec_read *r, const struct timespec *deadline);
void cf_rec_read_free(struct cf_rec_read *r);
/* A copy of the allocation live at addr (its site a pointer into the record's
 * own table); false when addr is not live. Takes one slot's lock at a time. */
bool cf_rec_live_at(uint64_t addr, struct cf_alloc *out);

#endif
