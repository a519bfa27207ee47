/* Model specifications from the command line: "NAME[:KNOB=VALUE,...]", each
 * value checked against the knob's type and range, and the label the table
 * prints for the result. */
#include "replay/model.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config/config.h"

int cf_rp_knob_index(const struct cf_rp_model_def *def, const char *name, size_t len)
{
    for (unsigned i = 0; i < def->nknobs; i++)
        if (strlen(def->knobs[i].name) == len && strncmp(def->knobs[i].name, name, len) == 0)
            return (int)i;
    return -1;
}

static int parse_bool(const char *s, uint64_t *out)
{
    static const char *const yes[] = {"True", "true", "1", "yes", "on"};
    static const char *const no[] = {"False", "false", "0", "no", "off"};
    for (unsigned i = 0; i < 5; i++) {
        if (strcmp(s, yes[i]) == 0) return *out = 1, 0;
        if (strcmp(s, no[i]) == 0) return *out = 0, 0;
    }
    return -1;
}

static int parse_choice(const char *s, const char *choices, uint64_t *out)
{
    uint64_t i = 0;
    for (const char *c = choices; *c; i++) {
        size_t len = strcspn(c, "|");
        if (strlen(s) == len && strncmp(s, c, len) == 0) return *out = i, 0;
        c += len;
        if (*c) c++;
    }
    return -1;
}

static int parse_value(const struct cf_rp_knob_def *k, const char *s, struct cf_rp_knob_val *v)
{
    char *end;
    int64_t i;
    *v = (struct cf_rp_knob_val){0};
    switch (k->type) {
    case CF_RP_KNOB_SIZE:
        if (strcmp(s, "max") == 0) return v->u = UINT64_MAX, 0;
        return cf_parse_size(s, 0, UINT64_MAX - 1, &v->u);
    case CF_RP_KNOB_MIB:
        if (strcmp(s, "max") == 0) return v->u = UINT64_MAX, 0;
        /* fall through */
    case CF_RP_KNOB_INT:
    case CF_RP_KNOB_POW2:
        if (cf_parse_int(s, (int64_t)k->lo, (int64_t)k->hi, &i) != 0) return -1;
        if (k->type == CF_RP_KNOB_POW2 && (i & (i - 1)) != 0) return -1;
        v->u = (uint64_t)i;
        v->d = (double)i;
        return 0;
    case CF_RP_KNOB_REAL:
        errno = 0;
        v->d = strtod(s, &end);
        if (*s == '\0' || *end != '\0' || errno != 0 || !isfinite(v->d) || v->d < k->lo ||
            v->d > k->hi)
            return -1;
        return 0;
    case CF_RP_KNOB_BOOL:
        return parse_bool(s, &v->u);
    case CF_RP_KNOB_CHOICE:
        return parse_choice(s, k->choices, &v->u);
    }
    return -1;
}

static const char *expected(const struct cf_rp_knob_def *k, char *buf, size_t n)
{
    switch (k->type) {
    case CF_RP_KNOB_SIZE:
        return "a size (digits with an optional K, M, G or T suffix) or max";
    case CF_RP_KNOB_MIB:
        snprintf(buf, n, "a number of MiB from %.0f to %.0f, or max", k->lo, k->hi);
        return buf;
    case CF_RP_KNOB_INT:
        snprintf(buf, n, "an integer from %.0f to %.0f", k->lo, k->hi);
        return buf;
    case CF_RP_KNOB_POW2:
        snprintf(buf, n, "0 or a power of two up to %.0f", k->hi);
        return buf;
    case CF_RP_KNOB_REAL:
        snprintf(buf, n, "a number from %g to %g", k->lo, k->hi);
        return buf;
    case CF_RP_KNOB_BOOL:
        return "True or False";
    case CF_RP_KNOB_CHOICE:
        snprintf(buf, n, "one of %s", k->choices);
        return buf;
    }
    return "?";
}

static void make_label(struct cf_rp_config *c)
{
    size_t len = (size_t)snprintf(c->label, sizeof c->label, "%s", c->def->name);
    char sep = ':';
    for (unsigned i = 0; i < c->def->nknobs && len < sizeof c->label; i++) {
        if (!c->set[i]) continue;
        len += (size_t)snprintf(c->label + len, sizeof c->label - len, "%c%s=%s", sep,
                                c->def->knobs[i].name, c->text[i]);
        sep = ',';
    }
}

void cf_rp_config_default(struct cf_rp_config *c, const struct cf_rp_model_def *def)
{
    memset(c, 0, sizeof *c);
    c->def = def;
    for (unsigned i = 0; i < def->nknobs; i++)
        if (parse_value(&def->knobs[i], def->knobs[i].def, &c->val[i]) != 0) abort();
    make_label(c);
}

int cf_rp_config_set(struct cf_rp_config *c, const char *knob, size_t knob_len, const char *value,
                     size_t value_len, char *err, size_t n)
{
    int i = cf_rp_knob_index(c->def, knob, knob_len);
    char text[32], why[96];
    if (i < 0) {
        snprintf(err, n, "model %s has no knob \"%.*s\"", c->def->name, (int)knob_len, knob);
        return -1;
    }
    const struct cf_rp_knob_def *k = &c->def->knobs[i];
    if (value_len == 0 || value_len >= sizeof text) {
        snprintf(err, n, "%s:%s: expected %s", c->def->name, k->name, expected(k, why, sizeof why));
        return -1;
    }
    memcpy(text, value, value_len);
    text[value_len] = '\0';
    if (parse_value(k, text, &c->val[i]) != 0) {
        snprintf(err, n, "%s:%s=%s: expected %s", c->def->name, k->name, text,
                 expected(k, why, sizeof why));
        return -1;
    }
    c->set[i] = true;
    memcpy(c->text[i], text, value_len + 1);
    make_label(c);
    return 0;
}

int cf_rp_config_parse(const char *spec, struct cf_rp_config *c, char *err, size_t n)
{
    size_t name_len = strcspn(spec, ":");
    const struct cf_rp_model_def *def = cf_rp_model_find(spec, name_len);
    if (def == NULL) {
        snprintf(err, n, "unknown model \"%.*s\" (cudafrag replay --models lists them)",
                 (int)name_len, spec);
        return -1;
    }
    cf_rp_config_default(c, def);
    const char *p = spec + name_len;
    if (*p == '\0') return 0;
    for (p++;;) {
        size_t len = strcspn(p, ","), key_len = strcspn(p, "=");
        if (key_len >= len) {
            snprintf(err, n, "%s: expected KNOB=VALUE, got \"%.*s\"", def->name, (int)len, p);
            return -1;
        }
        if (cf_rp_config_set(c, p, key_len, p + key_len + 1, len - key_len - 1, err, n) != 0)
            return -1;
        if (p[len] == '\0') return 0;
        p += len + 1;
    }
}
