/* The record's state: the one struct the tables fill and the report reads, and
 * the constant tables of APIs and kinds. Data only, so that every file of the
 * record may use it without calling up. */
#include "record/internal.h"

/* Aligned so that device 0's hot fields take two cache lines (record.h). */
struct cf_record cf_rec __attribute__((aligned(64)));

const struct cf_api_info cf_api_info[CF_API_COUNT] = {
#define CF_API_ROW(id, kind, role) [CF_API_##id] = {#id, CF_KIND_##kind, #role[0]},
    CF_APIS(CF_API_ROW)
#undef CF_API_ROW
};

const char *const cf_kind_name[CF_KIND_COUNT] = {
#define CF_KIND_ROW(id, str) [CF_KIND_##id] = str,
    CF_KINDS(CF_KIND_ROW)
#undef CF_KIND_ROW
};
