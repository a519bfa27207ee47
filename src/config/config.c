#include "config/config.h"

#include "base/log.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

const struct cf_option cf_options[CF_OPT_COUNT] = {
#define CF_OPT_ROW(id, name, type, def, lo, hi, doc) [CF_OPT_##id] = {name, type, def, lo, hi, doc},
    CF_OPTIONS(CF_OPT_ROW)
#undef CF_OPT_ROW
};

union cf_opt_value cf_opt_values[CF_OPT_COUNT];
int cf_config_loaded;

int cf_parse_bool(const char *s, bool *out)
{
    static const char *yes[] = {"1", "yes", "on", "true"}, *no[] = {"0", "no", "off", "false"};
    for (unsigned i = 0; i < 4; i++) {
        if (strcasecmp(s, yes[i]) == 0) return *out = true, 0;
        if (strcasecmp(s, no[i]) == 0) return *out = false, 0;
    }
    return -1;
}

int cf_parse_int(const char *s, int64_t lo, int64_t hi, int64_t *out)
{
    char *end;
    errno = 0;
    while (isspace((unsigned char)*s))
        s++;
    if (*s == '\0') return -1;
    long long v = strtoll(s, &end, 10);
    while (isspace((unsigned char)*end))
        end++;
    if (errno || *end != '\0' || v < lo || v > hi) return -1;
    *out = v;
    return 0;
}

int cf_parse_size(const char *s, uint64_t lo, uint64_t hi, uint64_t *out)
{
    char *end;
    while (isspace((unsigned char)*s))
        s++;
    if (*s == '\0' || *s == '-' || !isdigit((unsigned char)*s)) return -1;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno) return -1;
    unsigned shift = 0;
    switch (toupper((unsigned char)*end)) {
    case 'K':
        shift = 10;
        break;
    case 'M':
        shift = 20;
        break;
    case 'G':
        shift = 30;
        break;
    case 'T':
        shift = 40;
        break;
    default:
        break;
    }
    if (shift) {
        end++;
        if (toupper((unsigned char)*end) == 'I') end++;
        if (toupper((unsigned char)*end) == 'B') end++;
        if (v > (UINT64_MAX >> shift)) return -1;
        v <<= shift;
    } else if (toupper((unsigned char)*end) == 'B') {
        end++;
    }
    while (isspace((unsigned char)*end))
        end++;
    if (*end != '\0' || v < lo || v > hi) return -1;
    *out = v;
    return 0;
}

int cf_parse_choice(const char *s, const char *words, int64_t *out)
{
    size_t n = strlen(s);
    int64_t i = 0;
    for (const char *w = words; *w; i++) {
        size_t len = strcspn(w, "|");
        if (len == n && n > 0 && strncasecmp(s, w, n) == 0) return *out = i, 0;
        w += len + (w[len] == '|');
    }
    return -1;
}

const char *cf_opt_choices(enum cf_opt_id id)
{
    switch (id) {
#define CF_CHOICE_CASE(oid, words)                                                                 \
    case CF_OPT_##oid:                                                                             \
        return words;
        CF_CHOICES(CF_CHOICE_CASE)
#undef CF_CHOICE_CASE
    default:
        return NULL;
    }
}

/* "one of off, report, trace" */
static const char *one_of(const char *words, char *buf, size_t n)
{
    size_t len = (size_t)snprintf(buf, n, "one of ");
    for (const char *w = words; *w && len < n;) {
        size_t k = strcspn(w, "|");
        len += (size_t)snprintf(buf + len, n - len, "%s%.*s", w == words ? "" : ", ", (int)k, w);
        w += k + (w[k] == '|');
    }
    return buf;
}

static const char *accepted(const struct cf_option *o, char *buf, size_t n)
{
    switch (o->type) {
    case CF_BOOL:
        return "1/yes/on/true or 0/no/off/false";
    case CF_INT:
        snprintf(buf, n, "an integer from %llu to %llu", (unsigned long long)o->lo,
                 (unsigned long long)o->hi);
        return buf;
    case CF_SIZE:
        return "a byte count with an optional K, M, G or T suffix";
    case CF_CHOICE:
        return one_of(cf_opt_choices((enum cf_opt_id)(o - cf_options)), buf, n);
    default:
        return "any text";
    }
}

static int parse_one(const struct cf_option *o, const char *s, int idx)
{
    switch (o->type) {
    case CF_BOOL:
        return cf_parse_bool(s, &cf_opt_values[idx].b);
    case CF_INT:
        return cf_parse_int(s, (int64_t)o->lo, (int64_t)o->hi, &cf_opt_values[idx].i);
    case CF_SIZE:
        return cf_parse_size(s, o->lo, o->hi, &cf_opt_values[idx].z);
    case CF_STRING:
        cf_opt_values[idx].s = s;
        return 0;
    case CF_CHOICE:
        return cf_parse_choice(s, cf_opt_choices((enum cf_opt_id)idx), &cf_opt_values[idx].i);
    }
    return -1;
}

static void warn_ignored(const struct cf_option *o, const char *value, const char *instead)
{
    char buf[96];
    cf_log("ignoring %s=\"%.64s\": expected %s; using %s", o->name, value,
           accepted(o, buf, sizeof buf), instead);
}

static void load_all(void)
{
    for (int i = 0; i < CF_OPT_COUNT; i++) {
        const struct cf_option *o = &cf_options[i];
        parse_one(o, o->def, i);
        const char *env = getenv(o->name);
        if (env == NULL || parse_one(o, env, i) == 0) continue;
        char instead[96];
        snprintf(instead, sizeof instead, "the default %s", o->def);
        warn_ignored(o, env, instead);
        parse_one(o, o->def, i);
    }
}

void cf_config_load(void)
{
    int expect = 0;
    if (__atomic_load_n(&cf_config_loaded, __ATOMIC_ACQUIRE) == 2) return;
    if (__atomic_compare_exchange_n(&cf_config_loaded, &expect, 1, false, __ATOMIC_ACQ_REL,
                                    __ATOMIC_ACQUIRE)) {
        load_all();
        __atomic_store_n(&cf_config_loaded, 2, __ATOMIC_RELEASE);
        return;
    }
    /* Another thread is parsing: parsing is short and never blocks, so wait for it. */
    while (__atomic_load_n(&cf_config_loaded, __ATOMIC_ACQUIRE) != 2)
        __builtin_ia32_pause();
}

void cf_config_reload(void)
{
    __atomic_store_n(&cf_config_loaded, 0, __ATOMIC_RELEASE);
    cf_config_load();
}

void cf_config_defaults(void)
{
    for (int i = 0; i < CF_OPT_COUNT; i++)
        parse_one(&cf_options[i], cf_options[i].def, i);
    __atomic_store_n(&cf_config_loaded, 2, __ATOMIC_RELEASE);
}

/* Strings cf_opt_set copied: kept, and reachable from here, for the life of the
 * process (a saved value may still point at one). */
struct kept_text {
    struct kept_text *next;
    char text[];
};
static struct kept_text *kept;

static const char *keep(const char *value)
{
    size_t n = strlen(value) + 1;
    struct kept_text *k = malloc(sizeof *k + n);
    if (k == NULL) return NULL;
    memcpy(k->text, value, n);
    k->next = kept;
    kept = k;
    return k->text;
}

int cf_opt_set(const char *name, const char *value)
{
    cf_config_load();
    for (int i = 0; i < CF_OPT_COUNT; i++) {
        const struct cf_option *o = &cf_options[i];
        if (strcmp(o->name, name) != 0) continue;
        union cf_opt_value was = cf_opt_values[i];
        const char *text = o->type == CF_STRING ? keep(value) : value;
        if (text != NULL && parse_one(o, text, i) == 0) return 0;
        cf_opt_values[i] = was;
        if (text != NULL) warn_ignored(o, value, "the value it had");
        return -1;
    }
    return -2;
}

struct cf_config_saved {
    union cf_opt_value values[CF_OPT_COUNT];
};

struct cf_config_saved *cf_config_save(void)
{
    cf_config_load();
    struct cf_config_saved *s = malloc(sizeof *s);
    if (s) memcpy(s->values, cf_opt_values, sizeof s->values);
    return s;
}

void cf_config_restore(struct cf_config_saved *saved)
{
    if (saved == NULL) return;
    memcpy(cf_opt_values, saved->values, sizeof saved->values);
    free(saved);
}

int64_t cf_opt_int(enum cf_opt_id id)
{
    cf_config_load();
    return cf_opt_values[id].i;
}
int cf_opt_choice(enum cf_opt_id id)
{
    cf_config_load();
    return (int)cf_opt_values[id].i;
}
uint64_t cf_opt_size(enum cf_opt_id id)
{
    cf_config_load();
    return cf_opt_values[id].z;
}
const char *cf_opt_str(enum cf_opt_id id)
{
    cf_config_load();
    return cf_opt_values[id].s;
}

const char *cf_opt_item(const char *p, char *item, size_t n)
{
    if (p == NULL) return NULL;
    p += strspn(p, "; ");
    if (*p == '\0') return NULL;
    size_t len = strcspn(p, ";");
    const char *next = p + len;
    while (len && p[len - 1] == ' ')
        len--;
    snprintf(item, n, "%.*s", (int)len, p);
    return next;
}
