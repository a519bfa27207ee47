/* A small pickle writer (protocol 2) for what PyTorch's memory viewer reads:
 * dicts, lists, str, int, bool and None, from the basic opcodes only, which
 * both Python's unpickler and the viewer's JavaScript one accept. */
#ifndef CF_CLI_PICKLE_WRITE_H
#define CF_CLI_PICKLE_WRITE_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#define CF_PKW_MAX_INT ((1ull << 53) - 1) /* what a JavaScript number holds exactly */
#define CF_PKW_BATCH   1000               /* items per APPENDS/SETITEMS, as Python's pickler */

struct cf_pkw {
    FILE *f;
    uint32_t memo;   /* next memo index */
    uint64_t capped; /* integers above CF_PKW_MAX_INT written as CF_PKW_MAX_INT */
};

void cf_pkw_start(struct cf_pkw *p);    /* PROTO 2 */
void cf_pkw_stop(struct cf_pkw *p);     /* STOP */
void cf_pkw_dict(struct cf_pkw *p);     /* EMPTY_DICT */
void cf_pkw_list(struct cf_pkw *p);     /* EMPTY_LIST */
void cf_pkw_mark(struct cf_pkw *p);     /* MARK */
void cf_pkw_setitems(struct cf_pkw *p); /* SETITEMS: the pairs since the mark */
void cf_pkw_appends(struct cf_pkw *p);  /* APPENDS: the items since the mark */
void cf_pkw_none(struct cf_pkw *p);
void cf_pkw_bool(struct cf_pkw *p, bool v);
void cf_pkw_int(struct cf_pkw *p, int64_t v);
void cf_pkw_uint(struct cf_pkw *p, uint64_t v);
void cf_pkw_str(struct cf_pkw *p, const char *s);
/* Remembers the object on top of the stack; returns its memo index. */
uint32_t cf_pkw_put(struct cf_pkw *p);
/* Pushes a remembered object again. */
void cf_pkw_get(struct cf_pkw *p, uint32_t idx);
/* key: value pairs inside a dict's mark. */
void cf_pkw_kstr(struct cf_pkw *p, const char *k, const char *v);
void cf_pkw_kuint(struct cf_pkw *p, const char *k, uint64_t v);

#endif
