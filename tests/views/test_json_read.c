/* The JSON reader accepts what RFC 8259 allows and rejects the rest with the
 * place of the error: reports are read back from files anyone can edit. */
#include <math.h>

#include "check.h"
#include "cli/json_read.h"

static struct cf_json j;

static void ok(const char *text)
{
    if (cf_json_parse(&j, text, strlen(text)) != 0) {
        fprintf(stderr, "rejected valid JSON %s: %s\n", text, j.error);
        exit(1);
    }
}

static void bad(const char *text, const char *why)
{
    if (cf_json_parse(&j, text, strlen(text)) == 0) {
        fprintf(stderr, "accepted invalid JSON %s\n", text);
        exit(1);
    }
    if (strstr(j.error, why) == NULL) {
        fprintf(stderr, "%s: error \"%s\", expected \"%s\"\n", text, j.error, why);
        exit(1);
    }
    cf_json_free(&j);
}

static void values(void)
{
    ok(" {\"a\": [1, -2.5e3, true, false, null, \"x\\u00e9\\ud83d\\ude00\\n\"], \"b\": {}} ");
    const struct cf_jnode *a = cf_json_get(&j, cf_json_root(&j), "a");
    CHECK_EQ(a->count, 6);
    const struct cf_jnode *n = cf_json_first(&j, a);
    uint64_t u = 0;
    CHECK(cf_json_u64(n, &u) && u == 1);
    n = cf_json_next(&j, n);
    CHECK(cf_json_num(n, 0) == -2500.0 && !cf_json_u64(n, &u));
    CHECK_EQ(cf_json_next(&j, n)->type, CF_J_TRUE);
    n = cf_json_next(&j, cf_json_next(&j, cf_json_next(&j, cf_json_next(&j, n))));
    CHECK(strcmp(cf_json_str(&j, n), "x\xc3\xa9\xf0\x9f\x98\x80\n") == 0);
    CHECK(cf_json_get(&j, cf_json_root(&j), "b")->type == CF_J_OBJ);
    CHECK(cf_json_get(&j, cf_json_root(&j), "c") == NULL);
    CHECK(isnan(cf_json_num(cf_json_get(&j, cf_json_root(&j), "c"), NAN)));
    cf_json_free(&j);
    /* Exact 64-bit integers: byte counts above 2^53 survive. */
    ok("18446744073709551615");
    CHECK(cf_json_u64(cf_json_root(&j), &u) && u == UINT64_MAX);
    cf_json_free(&j);
    ok("18446744073709551616"); /* valid JSON, a double only */
    CHECK(!cf_json_u64(cf_json_root(&j), &u));
    cf_json_free(&j);
    ok("\"\"");
    CHECK(strcmp(cf_json_str(&j, cf_json_root(&j)), "") == 0);
    cf_json_free(&j);
}

static void grammar(void)
{
    bad("", "unexpected end");
    bad("{\"a\":1,}", "expected a key");
    bad("[1,]", "unexpected character");
    bad("[1 2]", "expected ','");
    bad("01", "malformed number");
    bad("-", "malformed number");
    bad("1.", "malformed number");
    bad("1e", "malformed number");
    bad(".5", "unexpected character");
    bad("NaN", "unexpected character");
    bad("1e999", "out of range");
    bad("{\"a\":1} x", "text after the value");
    bad("/* c */ 1", "unexpected character");
    bad("{a:1}", "expected a key");
    bad("{\"a\" 1}", "expected ':'");
    bad("tru", "unexpected character");
    bad("{\"k\":1,\"k\":2}", "duplicate key \"k\"");
    bad("[\"a\nb\"]", "control character");
    bad("\"\\x\"", "unknown escape");
    bad("\"\\u12\"", "four hex digits");
    bad("\"\\ud800\"", "lone high surrogate");
    bad("\"\\udc00\"", "lone low surrogate");
    bad("\"\\u0000\"", "NUL");
    bad("\"\xc0\xaf\"", "malformed UTF-8");     /* overlong '/' */
    bad("\"\xed\xa0\x80\"", "malformed UTF-8"); /* a surrogate in UTF-8 */
    bad("\"\xe2\x82\"", "malformed UTF-8");     /* cut short */
    bad("\"abc", "not closed");
    bad("[1,\n  2,\n  x]", "line 3, column 3");
}

static void limits(void)
{
    char deep[2 * CF_JSON_MAX_DEPTH + 8], *p = deep;
    for (int i = 0; i < CF_JSON_MAX_DEPTH; i++)
        *p++ = '[';
    for (int i = 0; i < CF_JSON_MAX_DEPTH; i++)
        *p++ = ']';
    *p = '\0';
    ok(deep);
    cf_json_free(&j);
    memmove(deep + 1, deep, strlen(deep) + 1);
    deep[0] = '[';
    strcat(deep, "]");
    bad(deep, "nested deeper than 64");
    char num[CF_JSON_MAX_NUMBER + 2];
    memset(num, '1', sizeof num - 1);
    num[sizeof num - 1] = '\0';
    bad(num, "longer than");
    /* A larger-than-allowed text is refused before it is read. */
    CHECK(cf_json_parse(&j, "1", (size_t)CF_JSON_MAX_BYTES + 1) != 0);
    CHECK_STR(j.error, "larger than");
}

int main(void)
{
    values();
    grammar();
    limits();
    puts("ok");
    return 0;
}
