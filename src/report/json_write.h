/* The one JSON writer: JSON on one line into a cf_buf, the commas placed by the
 * writer; compact, or spaced after commas and colons (", " and ": ", the
 * replay and advise documents). Every value function takes a key: inside an
 * object the key is written first; NULL writes a bare value (an array's element,
 * or the document itself). Strings are escaped and kept valid UTF-8; numbers
 * that are not finite become null, as JSON has no NaN. */
#ifndef CF_REPORT_JSON_WRITE_H
#define CF_REPORT_JSON_WRITE_H

#include <stdbool.h>
#include <stdint.h>

#include "report/strbuf.h"

struct cf_jw {
    struct cf_buf *b;
    bool first;  /* nothing written yet in the open object or array */
    bool spaced; /* ", " and ": " */
};

static inline struct cf_jw cf_jw_start(struct cf_buf *b)
{
    return (struct cf_jw){.b = b, .first = true};
}

static inline struct cf_jw cf_jw_start_spaced(struct cf_buf *b)
{
    return (struct cf_jw){.b = b, .first = true, .spaced = true};
}

/* The comma, then "k": when k is set: for a value written by hand after it. */
void cf_jw_key(struct cf_jw *j, const char *k);

void cf_jw_obj(struct cf_jw *j, const char *k);
void cf_jw_obj_end(struct cf_jw *j);
void cf_jw_arr(struct cf_jw *j, const char *k);
void cf_jw_arr_end(struct cf_jw *j);

void cf_jw_str(struct cf_jw *j, const char *k, const char *v); /* v NULL: null */
void cf_jw_u64(struct cf_jw *j, const char *k, uint64_t v);
void cf_jw_i64(struct cf_jw *j, const char *k, int64_t v);
void cf_jw_bool(struct cf_jw *j, const char *k, bool v);
void cf_jw_null(struct cf_jw *j, const char *k);
/* A count that is not known (a partial report, a failed model): null. */
void cf_jw_known(struct cf_jw *j, const char *k, uint64_t v, bool known);
/* A whole number as an integer, any other as %.6g. */
void cf_jw_num(struct cf_jw *j, const char *k, double v);
/* With a fixed number of decimals ("%.3f"): for ratios and seconds that are
 * compared as text. */
void cf_jw_fixed(struct cf_jw *j, const char *k, double v, int decimals);

/* The literals alone, for a value written without a cf_jw. */
void cf_jw_string(struct cf_buf *b, const char *s);
void cf_jw_number(struct cf_buf *b, double v);

#endif
