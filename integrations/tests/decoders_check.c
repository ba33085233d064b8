/*
 * SPDX-License-Identifier: Apache-2.0
 * The helpers' decoders on their own: integrations/common/strict_json.c and integration_record.c,
 * compiled in (test_decoders.py builds and runs this). Prints "decoders_check: N checks, F failures".
 */
#include <stdio.h>
#include <string.h>
#include <sodium.h>

#include "integration_record.h"
#include "strict_json.h"

static int checks, failures;
#define CHECK(condition, what) do { checks++; if (!(condition)) { failures++; printf("FAIL %s:%d %s\n", __FILE__, __LINE__, what); } } while (0)

static int read_json(const char *text, json_member *members, size_t count) {
    static uint8_t scratch[1 << 16];
    return json_read_object((const uint8_t *)text, strlen(text), members, count, scratch, sizeof scratch);
}

static int member_is(const json_member *member, const char *bytes, size_t length) {
    return member->present && member->length == length && memcmp(member->value, bytes, length) == 0;
}

/* {"c": [[...]]} with `levels` arrays. */
static int nested(int levels) {
    char text[256] = "{\"c\":";
    for (int i = 0; i < levels; i++) strcat(text, "[");
    for (int i = 0; i < levels; i++) strcat(text, "]");
    strcat(text, "}");
    json_member m = {"a", 0, NULL, 0};
    return read_json(text, &m, 1);
}

static void json_reading(void) {
    json_member m[2] = {{"a", 0, NULL, 0}, {"b", 0, NULL, 0}};
    CHECK(read_json(" {\"a\" : \"x\\u00e9\\ud83d\\ude00\\n\\u0000\" , \"b\":\"\"}\r\n", m, 2) == 0, "escapes");
    CHECK(member_is(&m[0], "x\xc3\xa9\xf0\x9f\x98\x80\n\0", 9), "a decoded");
    CHECK(member_is(&m[1], "", 0), "b empty and present");
    CHECK(read_json("{}", m, 2) == 0 && !m[0].present && !m[1].present, "empty object");
    CHECK(read_json("{\"c\":{\"d\":[1,2.5e-3,-0,true,false,null,\"\\\"\",[],{}]},\"a\":\"1\"}", m, 2) == 0 && member_is(&m[0], "1", 1),
          "nested members skipped");
    /* keybay_status_json's shape: what helper_store.c reads "state" from. */
    json_member state = {"state", 0, NULL, 0};
    CHECK(read_json("{\"state\":\"absent\",\"storePath\":\"/x\",\"methods\":[],\"backupExclusion\":{\"storeDirectory\":[\"a\"]}}", &state, 1) == 0
          && member_is(&state, "absent", 6), "status JSON");
    const char *refused[] = {
        "", " ", "[]", "\"a\"", "1", "{", "}", "{\"a\"}", "{\"a\":}", "{\"a\":\"x\",}", "{,}", "{\"a\":\"x\"}{}",
        "{\"a\":\"x\" \"b\":\"y\"}", "{\"a\":1}", "{\"a\":null}", "{\"a\":[\"x\"]}", "{\"a\":\"x\",\"a\":\"x\"}",
        "{\"a\":\"\\ud800\"}", "{\"a\":\"\\udfff\"}", "{\"a\":\"\\ud800\\ud800\"}", "{\"a\":\"\\ud800x\"}", "{\"a\":\"\\u00g0\"}",
        "{\"a\":\"\\'\"}", "{\"a\":\"\x01\"}", "{\"a\":\"\x1f\"}", "{\"a\":\"\xc3\"}", "{\"a\":\"\xe0\x80\x80\"}",
        "{\"a\":\"\xf8\x88\x80\x80\x80\"}", "{\"a\":\"\x80\"}", "{\"c\":01}", "{\"c\":-}", "{\"c\":.5}", "{\"c\":1e}",
        "{\"c\":+1}", "{\"c\":NaN}", "{\"c\":nul}", "{\"c\":[1,]}", "{\"c\":[1 2]}", "{\"c\":{\"d\"}}", "{'a':'x'}",
        "{\"a\":\"x\"\x00}", "{\"\xff\":\"x\"}", "{\"a\":\"unterminated}",
    };
    for (size_t i = 0; i < sizeof refused / sizeof *refused; i++) {
        char what[160];
        snprintf(what, sizeof what, "refused #%zu", i);
        CHECK(read_json(refused[i], m, 2) != 0, what);
    }
    /* The embedded NUL case needs its length. */
    static const uint8_t with_nul[] = "{\"a\":\"x\"}\0";
    uint8_t scratch[64];
    CHECK(json_read_object(with_nul, sizeof with_nul - 1, m, 2, scratch, sizeof scratch) != 0, "a NUL after the object");
    CHECK(nested(64) != 0, "nesting past 64 refused");
    CHECK(nested(63) == 0, "nesting of 63 arrays under the object read");
}

static void json_writing(void) {
    uint8_t out[128];
    const char text[] = "q\"b\\n\n\x01\x7f\xc3\xa9/";
    size_t n = json_write_string(out, sizeof out, (const uint8_t *)text, sizeof text - 1);
    const char want[] = "\"q\\\"b\\\\n\\n\\u0001\\u007f\xc3\xa9/\"";
    CHECK(n == sizeof want - 1 && memcmp(out, want, n) == 0, "escapes written");
    CHECK(json_write_string(out, sizeof out, (const uint8_t *)"\xff", 1) == 0, "invalid UTF-8 not written");
    CHECK(json_write_string(out, 3, (const uint8_t *)"ab", 2) == 0, "no room is 0");
    CHECK(json_write_string(out, 4, (const uint8_t *)"ab", 2) == 4, "exact room");
    /* What it writes reads back. */
    uint8_t all[256];
    for (int i = 0; i < 128; i++) all[i] = (uint8_t)i;
    uint8_t object[1024], scratch[1024];
    size_t at = 0;
    memcpy(object, "{\"a\":", 5); at = 5;
    at += json_write_string(object + at, sizeof object - at, all, 128);
    object[at++] = '}';
    json_member a = {"a", 0, NULL, 0};
    CHECK(json_read_object(object, at, &a, 1, scratch, sizeof scratch) == 0 && a.length == 128 && memcmp(a.value, all, 128) == 0,
          "every ASCII byte round-trips");
}

static void records(void) {
    integration_record r = {.kind = RECORD_KIND_GIT};
    r.fields[1] = (record_field){1, (const uint8_t *)"https", 5};
    r.fields[4] = (record_field){1, (const uint8_t *)"", 0};
    r.fields[5] = (record_field){1, (const uint8_t *)"p\0w", 3};
    uint8_t value[128];
    size_t n = record_encode(&r, value, sizeof value);
    static const uint8_t want[] = {'K', 'B', 'I', 'R', 1, 1, 1, 0, 0, 0, 5, 'h', 't', 't', 'p', 's', 4, 0, 0, 0, 0, 5, 0, 0, 0, 3, 'p', 0, 'w'};
    CHECK(n == sizeof want && memcmp(value, want, n) == 0, "encoding as documented");
    CHECK(n == record_encoded_length(&r), "encoded length");
    CHECK(record_encode(&r, value, n - 1) == 0, "no room is 0");
    integration_record back;
    CHECK(record_decode(value, n, RECORD_KIND_GIT, 7, &back) == 0 && record_field_equal(&back.fields[5], &r.fields[5])
          && back.fields[4].present && !back.fields[2].present, "decodes back");
    CHECK(record_decode(value, n, RECORD_KIND_DOCKER, 7, &back) != 0, "another kind refused");
    CHECK(record_decode(value, n, RECORD_KIND_GIT, 4, &back) != 0, "a tag past the kind's refused");
    for (size_t cut = 0; cut < n; cut++) {
        int ok = record_decode(value, cut, RECORD_KIND_GIT, 7, &back) == 0;
        /* Only the cuts at field boundaries are whole records (with fewer fields). */
        CHECK(ok == (cut == 6 || cut == 16 || cut == 21), "truncation");
    }
    uint8_t changed[128];
    memcpy(changed, value, n);
    changed[4] = 2;
    CHECK(record_decode(changed, n, RECORD_KIND_GIT, 7, &back) != 0, "version 2 refused");
    memcpy(changed, value, n);
    changed[16] = 1;  /* the second field's tag repeats the first */
    CHECK(record_decode(changed, n, RECORD_KIND_GIT, 7, &back) != 0, "a repeated tag refused");
    memcpy(changed, value, n);
    changed[10] = 6;  /* the first field's length past its bytes */
    CHECK(record_decode(changed, n, RECORD_KIND_GIT, 7, &back) != 0, "an overlong field refused");
    memcpy(changed, value, n);
    changed[n] = 0;
    CHECK(record_decode(changed, n + 1, RECORD_KIND_GIT, 7, &back) != 0, "a byte after the last field refused");
    memcpy(changed, value, n);
    changed[21] = 0;  /* tag 0 */
    CHECK(record_decode(changed, n, RECORD_KIND_GIT, 7, &back) != 0, "tag 0 refused");

    /* Digests: absent and empty differ, and the kind separates domains. */
    char a[65], b[65];
    const uint8_t tags[] = {1, 2, 3, 4};
    record_digest_hex(&r, RECORD_ROLE_IDENTITY, tags, 4, 32, a);
    integration_record absent = r;
    absent.fields[4].present = 0;
    record_digest_hex(&absent, RECORD_ROLE_IDENTITY, tags, 4, 32, b);
    CHECK(strlen(a) == 64 && strcmp(a, b) != 0, "an empty username is not an absent one");
    integration_record other = r;
    other.kind = RECORD_KIND_DOCKER;
    record_digest_hex(&other, RECORD_ROLE_IDENTITY, tags, 4, 32, b);
    CHECK(strcmp(a, b) != 0, "kinds differ");
    record_digest_hex(&r, RECORD_ROLE_GROUP, tags, 4, 32, b);
    CHECK(strcmp(a, b) != 0, "roles differ");
    /* One worked digest, the same as docs/integrations.md's example. */
    integration_record example = {.kind = RECORD_KIND_DOCKER};
    example.fields[1] = (record_field){1, (const uint8_t *)"https://index.docker.io/v1/", 27};
    const uint8_t url_tag[] = {1};
    record_digest_hex(&example, RECORD_ROLE_IDENTITY, url_tag, 1, 32, a);
    CHECK(strcmp(a, "42a206d3b33adbafa154d7e2121cfd1b4805aff08be4ef809b835f8a1f7bd219") == 0, "the documented example");
}

int main(void) {
    if (sodium_init() < 0) return 2;
    json_reading();
    json_writing();
    records();
    printf("decoders_check: %d checks, %d failures\n", checks, failures);
    return failures ? 1 : 0;
}
