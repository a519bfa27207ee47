/* The JSON writer: commas and nesting, escaping, numbers, the spaced layout.
 * Each document is compared whole, byte for byte: the reports, the replay table
 * and the commands' --json outputs are compared as text downstream. */
#include <math.h>
#include <stdint.h>

#include "check.h"
#include "report/json_write.h"

/* The buffer's text equals want exactly. */
static void check_doc(struct cf_buf *b, const char *want)
{
    CHECK(!b->failed);
    if (b->data == NULL || strcmp(b->data, want) != 0) {
        fprintf(stderr, "got:  %s\nwant: %s\n", b->data ? b->data : "(nothing)", want);
        exit(1);
    }
    cf_buf_free(b);
}

static void nesting(void)
{
    struct cf_buf b = {0};
    struct cf_jw j = cf_jw_start(&b);
    cf_jw_obj(&j, NULL);
    cf_jw_arr(&j, "empty");
    cf_jw_arr_end(&j);
    cf_jw_obj(&j, "o");
    cf_jw_obj_end(&j);
    cf_jw_arr(&j, "a");
    cf_jw_obj(&j, NULL);
    cf_jw_u64(&j, "x", 1);
    cf_jw_arr(&j, "pairs");
    for (uint64_t i = 0; i < 2; i++) {
        cf_jw_arr(&j, NULL);
        cf_jw_u64(&j, NULL, i);
        cf_jw_str(&j, NULL, "s");
        cf_jw_arr_end(&j);
    }
    cf_jw_arr_end(&j);
    cf_jw_obj_end(&j);
    cf_jw_null(&j, NULL);
    cf_jw_bool(&j, NULL, false);
    cf_jw_arr_end(&j);
    cf_jw_bool(&j, "t", true);
    cf_jw_obj_end(&j);
    check_doc(&b, "{\"empty\":[],\"o\":{},\"a\":[{\"x\":1,\"pairs\":[[0,\"s\"],[1,\"s\"]]},null,"
                  "false],\"t\":true}");
}

static void escaping(void)
{
    struct cf_buf b = {0};
    struct cf_jw j = cf_jw_start(&b);
    cf_jw_obj(&j, NULL);
    cf_jw_str(&j, "q", "quote \" backslash \\ slash /");
    cf_jw_str(&j, "ws", "a\nb\rc\td");
    cf_jw_str(&j, "ctl", "\x01\x1f");
    cf_jw_str(&j, "del",
              "a\x7f"
              "b");
    /* Valid UTF-8 passes through; a stray byte becomes U+FFFD, a cut sequence too. */
    cf_jw_str(&j, "utf8", "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80");
    cf_jw_str(&j, "bad",
              "a\xff"
              "b\xc3");
    cf_jw_str(&j, "none", NULL);
    cf_jw_str(&j, "key \"k\"", "");
    cf_jw_obj_end(&j);
    check_doc(&b, "{\"q\":\"quote \\\" backslash \\\\ slash /\",\"ws\":\"a\\nb\\rc\\td\","
                  "\"ctl\":\"\\u0001\\u001f\",\"del\":\"a\x7f"
                  "b\",\"utf8\":\"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80\","
                  "\"bad\":\"a\\ufffdb\\ufffd\",\"none\":null,\"key \\\"k\\\"\":\"\"}");
}

static void numbers(void)
{
    struct cf_buf b = {0};
    struct cf_jw j = cf_jw_start(&b);
    cf_jw_arr(&j, NULL);
    cf_jw_u64(&j, NULL, UINT64_MAX);
    cf_jw_i64(&j, NULL, INT64_MIN);
    cf_jw_u64(&j, NULL, 0);
    cf_jw_i64(&j, NULL, 0);
    cf_jw_i64(&j, NULL, -1);
    cf_jw_i64(&j, NULL, INT64_MAX);
    cf_jw_num(&j, NULL, 3);
    cf_jw_num(&j, NULL, -0.5);
    cf_jw_num(&j, NULL, 1.0 / 3);
    cf_jw_num(&j, NULL, 1e300);
    cf_jw_num(&j, NULL, NAN);
    cf_jw_num(&j, NULL, INFINITY);
    cf_jw_fixed(&j, NULL, 0.1234567, 6);
    cf_jw_fixed(&j, NULL, 2, 2);
    cf_jw_fixed(&j, NULL, -INFINITY, 3);
    cf_jw_known(&j, NULL, 7, true);
    cf_jw_known(&j, NULL, 7, false);
    cf_jw_arr_end(&j);
    check_doc(&b, "[18446744073709551615,-9223372036854775808,0,0,-1,9223372036854775807,3,-0.5,0."
                  "333333,1e+300,null,null,"
                  "0.123457,2.00,null,7,null]");
}

/* The replay and advise documents: ", " and ": ", never a space elsewhere. */
static void spaced(void)
{
    struct cf_buf b = {0};
    struct cf_jw j = cf_jw_start_spaced(&b);
    cf_jw_obj(&j, NULL);
    cf_jw_str(&j, "a", "x, y: z");
    cf_jw_arr(&j, "l");
    cf_jw_u64(&j, NULL, 1);
    cf_jw_u64(&j, NULL, 2);
    cf_jw_arr_end(&j);
    cf_jw_obj(&j, "o");
    cf_jw_null(&j, "n");
    cf_jw_obj_end(&j);
    cf_jw_obj_end(&j);
    check_doc(&b, "{\"a\": \"x, y: z\", \"l\": [1, 2], \"o\": {\"n\": null}}");
}

/* A key written alone, its value by hand (a number with its own format). */
static void by_hand(void)
{
    struct cf_buf b = {0};
    struct cf_jw j = cf_jw_start(&b);
    cf_jw_obj(&j, NULL);
    cf_jw_u64(&j, "n", 1);
    cf_jw_key(&j, "ts");
    cf_buf_puts(j.b, "12.345");
    cf_jw_obj_end(&j);
    cf_jw_string(&b, "\t");
    cf_jw_number(&b, 0.25);
    check_doc(&b, "{\"n\":1,\"ts\":12.345}\"\\t\"0.25");
}

int main(void)
{
    nesting();
    escaping();
    numbers();
    spaced();
    by_hand();
    return 0;
}
