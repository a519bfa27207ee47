/* A strict reader for the pickles PyTorch writes (memory snapshots): protocols
 * 2 to 5, and only the opcodes that build plain data -- dicts, lists, tuples,
 * strings, bytes, integers of up to 64 bits, floats, booleans, None -- with
 * their memo. Anything that would import or call (GLOBAL, REDUCE, BUILD, ...)
 * is refused, and so is anything past the limits below: a hostile file gets a
 * message, never a crash or unbounded memory. Values form a graph (the memo
 * lets a value appear twice, even inside itself): walk only the paths you
 * expect, never recursively. */
#ifndef CF_CLI_PICKLE_H
#define CF_CLI_PICKLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define CF_PK_MAX_STACK 65536      /* values on the stack at once */
#define CF_PK_MAX_MARKS 256        /* open MARKs: nesting while building */
#define CF_PK_MAX_MEMO  (1u << 24) /* memo entries */
#define CF_PK_MAX_DEPTH 64         /* containers in containers, as they are filled */

enum cf_pk_type {
    CF_PK_NONE,
    CF_PK_BOOL,
    CF_PK_INT,
    CF_PK_FLOAT,
    CF_PK_STR, /* UTF-8, not NUL-terminated: s and len */
    CF_PK_BYTES,
    CF_PK_LIST,
    CF_PK_TUPLE,
    CF_PK_DICT, /* items: key, value, key, value, ... (len items, len / 2 pairs) */
};

struct cf_pk {
    uint8_t type;
    uint32_t depth; /* containers: 1 + the deepest item when it was added */
    int64_t i;      /* BOOL, INT */
    double f;
    const char *s; /* STR, BYTES: points into the parsed data */
    uint64_t len;  /* STR, BYTES: bytes; LIST, TUPLE, DICT: items */
    struct cf_pk **items;
    uint64_t cap;
};

struct cf_pk_doc {
    struct cf_pk *root;
    struct cf_pk_block *blocks; /* every value, freed at once */
    char error[256];
};

/* Parses data[0, len) (which must outlive the document); 0, or -1 with
 * doc->error set. cf_pk_free in both cases. */
int cf_pk_parse(const uint8_t *data, size_t len, struct cf_pk_doc *doc);
void cf_pk_free(struct cf_pk_doc *doc);

/* The value of a string key in a dict, NULL when absent or v is not a dict. */
const struct cf_pk *cf_pk_get(const struct cf_pk *v, const char *key);
bool cf_pk_is_str(const struct cf_pk *v, const char *s);

#endif
