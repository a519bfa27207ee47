/* A small pickle writer (protocol 2) for what PyTorch's memory viewer reads:
 * dicts, lists, str, int, bool and None, from the basic opcodes only, which
 * both Python's unpickler and the viewer's JavaScript one accept. */
#ifndef CF_CLI_PICKLE_H
#define CF_CLI_PICKLE_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#define CF_PK_MAX_INT ((1ull << 53) - 1) /* what a JavaScript number holds exactly */
#define CF_PK_BATCH   1000               /* items per APPENDS/SETITEMS, as Python's pickler */

struct cf_pk {
    FILE *f;
    uint32_t memo;   /* next memo index */
    uint64_t capped; /* integers above CF_PK_MAX_INT written as CF_PK_MAX_INT */
};

void cf_pk_start(struct cf_pk *p);    /* PROTO 2 */
void cf_pk_stop(struct cf_pk *p);     /* STOP */
void cf_pk_dict(struct cf_pk *p);     /* EMPTY_DICT */
void cf_pk_list(struct cf_pk *p);     /* EMPTY_LIST */
void cf_pk_mark(struct cf_pk *p);     /* MARK */
void cf_pk_setitems(struct cf_pk *p); /* SETITEMS: the pairs since the mark */
void cf_pk_appends(struct cf_pk *p);  /* APPENDS: the items since the mark */
void cf_pk_none(struct cf_pk *p);
void cf_pk_bool(struct cf_pk *p, bool v);
void cf_pk_int(struct cf_pk *p, int64_t v);
void cf_pk_uint(struct cf_pk *p, uint64_t v);
void cf_pk_str(struct cf_pk *p, const char *s);
/* Remembers the object on top of the stack; returns its memo index. */
uint32_t cf_pk_put(struct cf_pk *p);
/* Pushes a remembered object again. */
void cf_pk_get(struct cf_pk *p, uint32_t idx);
/* key: value pairs inside a dict's mark. */
void cf_pk_kstr(struct cf_pk *p, const char *k, const char *v);
void cf_pk_kuint(struct cf_pk *p, const char *k, uint64_t v);

#endif
