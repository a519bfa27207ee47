/* A strict, bounded JSON reader (RFC 8259) for the reports the commands read
 * back: a report is untrusted input, so sizes and nesting are limited, the
 * text must be valid UTF-8, and anything outside the grammar (comments,
 * trailing commas, leading zeros, NaN, duplicate keys, bytes after the value)
 * is an error with its line and column. */
#ifndef CF_CLI_JSON_READ_H
#define CF_CLI_JSON_READ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define CF_JSON_MAX_BYTES  (64u << 20)
#define CF_JSON_MAX_DEPTH  64
#define CF_JSON_MAX_NUMBER 64 /* characters in one number */

enum cf_jtype { CF_J_NULL, CF_J_FALSE, CF_J_TRUE, CF_J_NUM, CF_J_STR, CF_J_ARR, CF_J_OBJ };

struct cf_jnode {
    uint8_t type;
    bool is_u64;    /* a number that is an exact non-negative integer */
    uint32_t key;   /* an object member's key: offset into strings */
    uint32_t str;   /* a string's offset into strings */
    uint32_t child; /* arrays and objects: first member, 0: none */
    uint32_t next;  /* next member of the parent, 0: none */
    uint32_t count; /* arrays and objects: members */
    double num;
    uint64_t u64;
};

struct cf_json {
    struct cf_jnode *nodes; /* nodes[0] is the document's value */
    uint32_t nnodes, cap;
    char *strings; /* NUL-terminated, UTF-8 */
    size_t slen, scap;
    char error[192];
};

/* 0, or -1 with j->error set. cf_json_free in both cases. */
int cf_json_parse(struct cf_json *j, const char *text, size_t len);
int cf_json_load(struct cf_json *j, const char *path);
void cf_json_free(struct cf_json *j);

const struct cf_jnode *cf_json_root(const struct cf_json *j);
/* The member key of an object, NULL when absent or obj is not an object. */
const struct cf_jnode *cf_json_get(const struct cf_json *j, const struct cf_jnode *obj,
                                   const char *key);
/* Members of an array or object in order: first, then next until NULL. */
const struct cf_jnode *cf_json_first(const struct cf_json *j, const struct cf_jnode *n);
const struct cf_jnode *cf_json_next(const struct cf_json *j, const struct cf_jnode *n);
/* A string's text (NULL when n is not a string) and a member's key. */
const char *cf_json_str(const struct cf_json *j, const struct cf_jnode *n);
const char *cf_json_key(const struct cf_json *j, const struct cf_jnode *n);
/* A number, or dflt when n is absent or not a number (JSON null: unknown). */
double cf_json_num(const struct cf_jnode *n, double dflt);
/* An exact non-negative integer: true and *out, else false. */
bool cf_json_u64(const struct cf_jnode *n, uint64_t *out);

#endif
