// SPDX-License-Identifier: Apache-2.0
/* Check of libkeybay-passphrase.so through dlopen with a stub host: descriptor, enroll/unwrap
   against the `argon2` reference CLI (Debian's argon2 package), malformed parameters refused
   without an allocation, options, passphrase lengths, interaction, calibration. Exits 1 on any
   failed check. scripts/plugin-harness.sh builds and runs it (scripts/test.sh runs that); by hand,
   from the package root: swift build --product keybay-passphrase && cc -std=c11 -Wall -Wextra -O1 -rdynamic -I Sources/CKeybayPlugin/include -I Plugins/passphrase/include Tests/plugin-harness/passphrase_check.c -o /tmp/passphrase_check -ldl -lsodium -lpthread && /tmp/passphrase_check .build/debug/libkeybay-passphrase.so [--calibrate-1000] */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <sodium.h>

#include "keybay_passphrase.h"
#include "keybay_plugin.h"

/* ---- allocation counting: the harness replaces glibc's malloc family (and interposes
   sodium_malloc) so a malformed-params call can be shown to allocate nothing ---- */

static atomic_int counting;
static atomic_long allocations;

#ifndef NO_ALLOC_COUNT /* define it for sanitizer builds, which bring their own malloc */
extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void __libc_free(void *);

void *malloc(size_t n) {
    if (atomic_load(&counting)) atomic_fetch_add(&allocations, 1);
    return __libc_malloc(n);
}
void *calloc(size_t n, size_t size) {
    if (atomic_load(&counting)) atomic_fetch_add(&allocations, 1);
    return __libc_calloc(n, size);
}
void *realloc(void *p, size_t n) {
    if (atomic_load(&counting)) atomic_fetch_add(&allocations, 1);
    return __libc_realloc(p, n);
}
void free(void *p) { __libc_free(p); }
#endif

static void *(*real_sodium_malloc)(size_t);
void *sodium_malloc(size_t n) {
    if (atomic_load(&counting)) atomic_fetch_add(&allocations, 1);
    return real_sodium_malloc(n);
}

static void count_start(void) { atomic_store(&allocations, 0); atomic_store(&counting, 1); }
static long count_stop(void) { atomic_store(&counting, 0); return atomic_load(&allocations); }

/* ---- results ---- */

static int failures, checks;
#define CHECK(cond, ...)                                                                      \
    do {                                                                                     \
        checks++;                                                                            \
        if (!(cond)) {                                                                       \
            failures++;                                                                      \
            printf("FAIL %s:%d: ", __FILE__, __LINE__);                                      \
            printf(__VA_ARGS__);                                                             \
            printf("\n");                                                                    \
        }                                                                                    \
    } while (0)

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static void hex(const uint8_t *b, size_t n, char *out) {
    for (size_t i = 0; i < n; i++) sprintf(out + 2 * i, "%02x", b[i]);
}

/* ---- stub host ---- */

typedef struct stub {
    const uint8_t *passphrase;
    size_t passphrase_length;
    keybay_status ask_status;      /* answer this instead of a passphrase when not OK */
    keybay_status message_status;  /* what message() answers */
    int cancel_after_polls;        /* is_cancelled says 1 from this poll on; -1 never */
    int verbose;

    int ask_calls, polls, progress, info, warnings, errors;
    keybay_secret_kind last_kind;
    uint32_t last_flags;
    size_t last_capacity;
    char last_error[512];
    char last_info[512];
    char first_progress[512];
} stub;

static int leaks(const stub *s, const char *text) {
    if (s->passphrase == NULL || s->passphrase_length < 4) return 0;
    return memmem(text, strlen(text), s->passphrase, s->passphrase_length) != NULL;
}

static keybay_status stub_ask(void *ctx, keybay_secret_kind kind, uint32_t flags,
                              const char *prompt, int32_t retries_left, uint8_t *out,
                              size_t capacity, size_t *out_length) {
    stub *s = ctx;
    s->ask_calls++;
    s->last_kind = kind;
    s->last_flags = flags;
    s->last_capacity = capacity;
    CHECK(prompt != NULL && prompt[0] != '\0', "ask_secret without a prompt");
    CHECK(retries_left == -1, "retries_left %d", retries_left);
    if (s->ask_status != KEYBAY_OK) return s->ask_status;
    size_t n = s->passphrase_length < capacity ? s->passphrase_length : capacity;
    memcpy(out, s->passphrase, n);
    *out_length = n;
    return KEYBAY_OK;
}

static keybay_status stub_message(void *ctx, keybay_message_level level, const char *text) {
    stub *s = ctx;
    CHECK(!leaks(s, text), "a message contains the passphrase");
    if (level == KEYBAY_MESSAGE_PROGRESS && s->progress++ == 0)
        snprintf(s->first_progress, sizeof s->first_progress, "%s", text);
    if (level == KEYBAY_MESSAGE_INFO) {
        s->info++;
        snprintf(s->last_info, sizeof s->last_info, "%s", text);
    }
    if (level == KEYBAY_MESSAGE_WARNING) s->warnings++;
    if (s->verbose)
        printf("    [%s] %s\n",
               level == KEYBAY_MESSAGE_PROGRESS ? "progress"
               : level == KEYBAY_MESSAGE_INFO   ? "info"
                                                : "warning",
               text);
    return s->message_status;
}

static keybay_status stub_confirm(void *ctx, const char *question, int *answer) {
    (void)ctx; (void)question;
    *answer = 0;
    CHECK(0, "the passphrase plugin never confirms");
    return KEYBAY_ERR_INTERACTION_UNAVAILABLE;
}

static int stub_is_cancelled(void *ctx) {
    stub *s = ctx;
    s->polls++;
    return s->cancel_after_polls >= 0 && s->polls > s->cancel_after_polls;
}

static void stub_log(void *ctx, keybay_log_level level, const char *text) {
    stub *s = ctx;
    CHECK(!leaks(s, text), "a log line contains the passphrase");
    if (s->verbose) printf("    [log %d] %s\n", (int)level, text);
}

static void stub_set_error(void *ctx, const char *text) {
    stub *s = ctx;
    s->errors++;
    CHECK(!leaks(s, text), "an error contains the passphrase");
    snprintf(s->last_error, sizeof s->last_error, "%s", text);
}

static keybay_host make_host(stub *s) {
    keybay_host h = {
        .abi_version = KEYBAY_PLUGIN_ABI_VERSION,
        .struct_size = sizeof(keybay_host),
        .context = s,
        .ask_secret = stub_ask,
        .message = stub_message,
        .confirm = stub_confirm,
        .is_cancelled = stub_is_cancelled,
        .log = stub_log,
        .set_error = stub_set_error,
    };
    return h;
}

static stub make_stub(const char *passphrase) {
    stub s;
    memset(&s, 0, sizeof s);
    s.passphrase = (const uint8_t *)passphrase;
    s.passphrase_length = passphrase ? strlen(passphrase) : 0;
    s.cancel_after_polls = -1;
    return s;
}

/* ---- helpers over the plugin ---- */

static const keybay_plugin *P;

static void put_u32(uint8_t *p, uint32_t v) {
    p[0] = (uint8_t)(v >> 24); p[1] = (uint8_t)(v >> 16); p[2] = (uint8_t)(v >> 8); p[3] = (uint8_t)v;
}
static uint32_t get_u32(const uint8_t *p) {
    return ((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) | ((uint32_t)p[2] << 8) | p[3];
}

static void make_params(uint8_t out[KEYBAY_PASSPHRASE_PARAMS_BYTES], uint8_t format,
                        uint32_t version, uint32_t memory_kib, uint32_t iterations,
                        uint32_t lanes, const char salt[16]) {
    out[0] = format;
    put_u32(out + 1, version);
    put_u32(out + 5, memory_kib);
    put_u32(out + 9, iterations);
    put_u32(out + 13, lanes);
    memcpy(out + 17, salt, 16);
}

/* opts: "name=value" strings */
static keybay_status enroll(stub *s, const char *const *opts, size_t n, keybay_buffer *params,
                            uint8_t m[32]) {
    keybay_option options[16];
    char names[16][64];
    for (size_t i = 0; i < n; i++) {
        const char *eq = strchr(opts[i], '=');
        size_t len = eq ? (size_t)(eq - opts[i]) : strlen(opts[i]);
        snprintf(names[i], sizeof names[i], "%.*s", (int)len, opts[i]);
        options[i].name = names[i];
        options[i].value = eq ? eq + 1 : NULL;
    }
    keybay_host h = make_host(s);
    return P->enroll(&h, options, n, params, m);
}

/* verify as a host calls it: the plugin's own, or unwrap when it has none. */
static keybay_status verify(const keybay_host *h, const uint8_t *params, size_t len, uint8_t m[32]) {
    return (P->verify ? P->verify : P->unwrap)(h, params, len, m);
}

/* describe as a host calls it: describe_with_host when set, here with no host, which the plugin
   accepts although the header promises one (KEYBAY_NONNULL): so the warning is silenced. */
static keybay_status describe(const uint8_t *params, size_t len, keybay_buffer *text) {
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wnonnull"
    return P->describe_with_host ? P->describe_with_host(NULL, params, len, text) : P->describe(params, len, text);
#pragma GCC diagnostic pop
}

static keybay_status unwrap(stub *s, const uint8_t *params, size_t len, uint8_t m[32]) {
    keybay_host h = make_host(s);
    return P->unwrap(&h, params, len, m);
}

/* The independent computation: the argon2 reference CLI (Debian's `argon2` package). */
static int argon2_cli(const char *passphrase, const char *salt, uint32_t t, uint32_t m_kib,
                      uint32_t p, uint8_t out[32]) {
    char command[512];
    snprintf(command, sizeof command,
             "printf '%%s' '%s' | argon2 '%s' -id -v 13 -t %" PRIu32 " -k %" PRIu32
             " -p %" PRIu32 " -l 32 -r",
             passphrase, salt, t, m_kib, p);
    FILE *f = popen(command, "r");
    if (f == NULL) return 0;
    char line[256] = "";
    char *got = fgets(line, sizeof line, f);
    int rc = pclose(f);
    if (got == NULL || rc != 0) return 0;
    line[strcspn(line, "\r\n")] = 0;
    if (strlen(line) != 64) return 0;
    size_t bin_len = 0;
    return sodium_hex2bin(out, 32, line, 64, NULL, &bin_len, NULL) == 0 && bin_len == 32;
}

static const uint8_t sentinel = 0xA5;
static int untouched(const uint8_t m[32]) {
    for (int i = 0; i < 32; i++)
        if (m[i] != sentinel) return 0;
    return 1;
}

/* ---- tests ---- */

static void test_descriptor(void) {
    printf("descriptor\n");
    CHECK(P->abi_version == KEYBAY_PLUGIN_ABI_VERSION, "abi_version %u", P->abi_version);
    CHECK(P->struct_size == sizeof(keybay_plugin), "struct_size %u", P->struct_size);
    CHECK(strcmp(P->id, "passphrase") == 0, "id %s", P->id);
    CHECK(P->name && P->name[0] && P->version && P->version[0], "name/version");
    CHECK(P->kind == KEYBAY_KIND_METHOD, "kind %u", P->kind);
    CHECK(P->flags == (KEYBAY_FLAG_INTERACTIVE | KEYBAY_FLAG_ONE_PER_STORE | KEYBAY_FLAG_CALIBRATES), "flags %u", P->flags);
    const char *expected[] = {"memory-kib", "iterations", "lanes", "target-ms"};
    CHECK(P->option_count == 4, "option_count %zu", P->option_count);
    for (size_t i = 0; i < P->option_count && i < 4; i++) {
        CHECK(strcmp(P->options[i].name, expected[i]) == 0, "option %zu is %s", i, P->options[i].name);
        CHECK(P->options[i].help && strlen(P->options[i].help) > 10, "option %s help", expected[i]);
        printf("  --opt %s: %s\n", P->options[i].name, P->options[i].help);
    }
    CHECK(P->free_buffer && P->probe && P->enroll && P->unwrap && P->describe_with_host,
          "method operations present");
    CHECK(P->verify == NULL, "no verify of its own: the host calls unwrap");
    CHECK(!P->root_exists && !P->root_create && !P->root_seal && !P->root_open &&
              !P->root_location && !P->root_reset,
          "no root operations");
    stub s = make_stub(NULL);
    keybay_host h = make_host(&s);
    CHECK(P->probe(&h) == KEYBAY_OK, "probe");
    CHECK(s.ask_calls == 0, "probe never prompts");
}

static uint8_t M1[32];
static uint8_t PARAMS1[KEYBAY_PASSPHRASE_PARAMS_BYTES];

static void test_enroll_unwrap(void) {
    printf("enroll memory-kib=65536 iterations=4 lanes=2, unwrap, verify\n");
    const char *pass = "correct horse battery staple";
    stub s = make_stub(pass);
    s.verbose = 1;
    const char *opts[] = {"memory-kib=65536", "iterations=4", "lanes=2"};
    keybay_buffer params = {0};
    uint8_t m[32];
    memset(m, sentinel, 32);
    keybay_status st = enroll(&s, opts, 3, &params, m);
    CHECK(st == KEYBAY_OK, "enroll: %d (%s)", st, s.last_error);
    if (st != KEYBAY_OK) return;
    CHECK(params.length == KEYBAY_PASSPHRASE_PARAMS_BYTES, "params length %zu", params.length);
    CHECK(s.ask_calls == 1 && s.last_kind == KEYBAY_SECRET_PASSPHRASE && s.last_flags == KEYBAY_ASK_NEW,
          "enroll asks once for a new passphrase (calls %d kind %d flags %u)", s.ask_calls,
          s.last_kind, s.last_flags);
    CHECK(s.last_capacity > KEYBAY_PASSPHRASE_MAX_PASSPHRASE_BYTES, "capacity %zu", s.last_capacity);
    CHECK(s.progress == 0 && s.info == 1, "no calibration with explicit options (progress %d info %d)",
          s.progress, s.info);
    CHECK(params.data[0] == 1 && get_u32(params.data + 1) == 0x13 &&
              get_u32(params.data + 5) == 65536 && get_u32(params.data + 9) == 4 &&
              get_u32(params.data + 13) == 2,
          "params fields");
    char h[80];
    hex(params.data, params.length, h);
    printf("  params %s\n", h);
    memcpy(PARAMS1, params.data, sizeof PARAMS1);
    memcpy(M1, m, 32);
    P->free_buffer(&params);
    CHECK(params.data == NULL && params.length == 0, "free_buffer clears the buffer");

    uint8_t m2[32];
    memset(m2, sentinel, 32);
    stub s2 = make_stub(pass);
    st = unwrap(&s2, PARAMS1, sizeof PARAMS1, m2);
    CHECK(st == KEYBAY_OK, "unwrap: %d (%s)", st, s2.last_error);
    CHECK(memcmp(m2, M1, 32) == 0, "unwrap with the same passphrase gives the same M");
    CHECK(s2.ask_calls == 1 && s2.last_flags == 0 && s2.last_kind == KEYBAY_SECRET_PASSPHRASE,
          "unwrap asks once, flags 0");

    memset(m2, sentinel, 32);
    stub s3 = make_stub(pass);
    keybay_host h3 = make_host(&s3);
    st = verify(&h3, PARAMS1, sizeof PARAMS1, m2);
    CHECK(st == KEYBAY_OK && memcmp(m2, M1, 32) == 0, "verify gives the same M");

    memset(m2, sentinel, 32);
    stub s4 = make_stub("correct horse battery stapler");
    st = unwrap(&s4, PARAMS1, sizeof PARAMS1, m2);
    CHECK(st == KEYBAY_OK, "unwrap with another passphrase still derives (no verifier)");
    CHECK(memcmp(m2, M1, 32) != 0, "a different passphrase gives a different M");

    /* Same passphrase, second enrollment: a fresh salt, so a different M. */
    stub s5 = make_stub(pass);
    uint8_t m3[32];
    st = enroll(&s5, opts, 3, &params, m3);
    CHECK(st == KEYBAY_OK && memcmp(params.data + 17, PARAMS1 + 17, 16) != 0 && memcmp(m3, M1, 32) != 0,
          "a second enrollment draws a fresh salt");
    P->free_buffer(&params);

    keybay_buffer text = {0};
    st = describe(PARAMS1, sizeof PARAMS1, &text);
    CHECK(st == KEYBAY_OK && text.length == strlen("Argon2id v1.3, 64 MiB, t=4, p=2") &&
              memcmp(text.data, "Argon2id v1.3, 64 MiB, t=4, p=2", text.length) == 0,
          "describe: %.*s", (int)text.length, text.data ? (char *)text.data : "");
    printf("  describe: %.*s\n", (int)text.length, (char *)text.data);
    P->free_buffer(&text);
}

static void test_independent(void) {
    printf("M against independent computations\n");
    struct {
        const char *pass, *salt;
        uint32_t m, t, p;
    } cli_cases[] = {
        {"correct horse battery staple", "keybay-salt-0001", 65536, 4, 2},
        {"pw", "0123456789abcdef", 8192, 1, 1},
        {"Tr0ub4dor&3 with spaces", "AAAAAAAAAAAAAAAA", 65536, 3, 4},
        {"above the 64 MiB floor", "keybay-salt-128m", 131072, 1, 1}, /* no cap at the floor */
    };
    for (size_t i = 0; i < sizeof cli_cases / sizeof cli_cases[0]; i++) {
        uint8_t params[KEYBAY_PASSPHRASE_PARAMS_BYTES], m[32], ref[32];
        make_params(params, 1, 0x13, cli_cases[i].m, cli_cases[i].t, cli_cases[i].p, cli_cases[i].salt);
        stub s = make_stub(cli_cases[i].pass);
        keybay_status st = unwrap(&s, params, sizeof params, m);
        int cli = argon2_cli(cli_cases[i].pass, cli_cases[i].salt, cli_cases[i].t, cli_cases[i].m,
                             cli_cases[i].p, ref);
        CHECK(cli, "the argon2 CLI did not run (apt-get install argon2)");
        char a[65], b[65];
        hex(m, 32, a);
        hex(ref, 32, b);
        CHECK(st == KEYBAY_OK && cli && memcmp(m, ref, 32) == 0,
              "argon2 CLI m=%u t=%u p=%u: plugin %s, cli %s", cli_cases[i].m, cli_cases[i].t,
              cli_cases[i].p, a, b);
        printf("  argon2 CLI '%s' -id -t %u -k %u -p %u: %s %s\n", cli_cases[i].salt, cli_cases[i].t,
               cli_cases[i].m, cli_cases[i].p, b, memcmp(m, ref, 32) == 0 ? "= plugin" : "!= plugin");
    }

    /* libsodium's own Argon2id (one lane only). */
    struct {
        uint32_t m, t;
    } sodium_cases[] = {{19456, 2}, {65536, 3}};
    for (size_t i = 0; i < 2; i++) {
        const char *pass = "sodium cross-check";
        uint8_t salt[16], params[KEYBAY_PASSPHRASE_PARAMS_BYTES], m[32], ref[32];
        randombytes_buf(salt, 16);
        make_params(params, 1, 0x13, sodium_cases[i].m, sodium_cases[i].t, 1, (const char *)salt);
        stub s = make_stub(pass);
        keybay_status st = unwrap(&s, params, sizeof params, m);
        int rc = crypto_pwhash(ref, 32, pass, strlen(pass), salt, sodium_cases[i].t,
                               (size_t)sodium_cases[i].m * 1024u, crypto_pwhash_ALG_ARGON2ID13);
        CHECK(st == KEYBAY_OK && rc == 0 && memcmp(m, ref, 32) == 0,
              "libsodium crypto_pwhash m=%u t=%u p=1", sodium_cases[i].m, sodium_cases[i].t);
        printf("  libsodium crypto_pwhash m=%u t=%u p=1: %s\n", sodium_cases[i].m, sodium_cases[i].t,
               memcmp(m, ref, 32) == 0 ? "= plugin" : "!= plugin");
    }
}

static void test_malformed(void) {
    printf("malformed params -> MALFORMED_PARAMS, no prompt, no allocation\n");
    const char *salt = "keybay-salt-0001";
    struct {
        const char *what;
        uint8_t format;
        uint32_t version, m, t, p;
        size_t length;
        const char *field;
    } cases[] = {
        {"empty", 1, 0x13, 65536, 3, 1, 0, "length"},
        {"32 bytes", 1, 0x13, 65536, 3, 1, 32, "length"},
        {"34 bytes", 1, 0x13, 65536, 3, 1, 34, "length"},
        {"format 0", 0, 0x13, 65536, 3, 1, 33, "format"},
        {"format 2", 2, 0x13, 65536, 3, 1, 33, "format"},
        {"version 0x10", 1, 0x10, 65536, 3, 1, 33, "version"},
        {"version 0x14", 1, 0x14, 65536, 3, 1, 33, "version"},
        {"version little-endian", 1, 0x13000000, 65536, 3, 1, 33, "version"},
        {"memory 2 GiB + 1 KiB", 1, 0x13, 2097153, 1, 1, 33, "memory_kib"},
        {"memory 4 GiB", 1, 0x13, 0xFFFFFFFF, 1, 1, 33, "memory_kib"},
        {"memory 0", 1, 0x13, 0, 1, 1, 33, "memory_kib"},
        {"memory 31 < 8 x 4 lanes", 1, 0x13, 31, 1, 4, 33, "memory_kib"},
        {"iterations 0", 1, 0x13, 65536, 0, 1, 33, "iterations"},
        {"iterations 17", 1, 0x13, 65536, 17, 1, 33, "iterations"},
        {"iterations 2^32-1", 1, 0x13, 65536, 0xFFFFFFFF, 1, 33, "iterations"},
        {"lanes 0", 1, 0x13, 65536, 3, 0, 33, "lanes"},
        {"lanes 9", 1, 0x13, 65536, 3, 9, 33, "lanes"},
        {"lanes 2^24", 1, 0x13, 2097152, 3, 1u << 24, 33, "lanes"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        uint8_t buf[40];
        memset(buf, 0x5a, sizeof buf);
        make_params(buf, cases[i].format, cases[i].version, cases[i].m, cases[i].t, cases[i].p, salt);
        const uint8_t *ptr = cases[i].length == 0 ? NULL : buf;
        for (int op = 0; op < 3; op++) {
            stub s = make_stub("some passphrase");
            keybay_host h = make_host(&s);
            uint8_t m[32];
            memset(m, sentinel, 32);
            keybay_buffer text = {(uint8_t *)1, 1};
            count_start();
            keybay_status st = op == 0   ? P->unwrap(&h, ptr, cases[i].length, m)
                               : op == 1 ? verify(&h, ptr, cases[i].length, m)
                                         : describe(ptr, cases[i].length, &text);
            long allocated = count_stop();
            const char *name = op == 0 ? "unwrap" : op == 1 ? "verify" : "describe";
            CHECK(st == KEYBAY_ERR_MALFORMED_PARAMS, "%s %s: status %d", name, cases[i].what, st);
            CHECK(allocated == 0, "%s %s: %ld allocations", name, cases[i].what, allocated);
            CHECK(s.ask_calls == 0, "%s %s: prompted", name, cases[i].what);
            if (op < 2) {
                CHECK(untouched(m), "%s %s: secret_out written", name, cases[i].what);
                CHECK(strstr(s.last_error, cases[i].field) != NULL, "%s %s: error '%s' does not name %s",
                      name, cases[i].what, s.last_error, cases[i].field);
                if (op == 0) printf("  %-24s %s\n", cases[i].what, s.last_error);
            } else {
                CHECK(text.data == NULL && text.length == 0, "describe %s: text_out not cleared", cases[i].what);
            }
        }
    }
    /* The caps themselves are accepted (decoding only: describe allocates no Argon2 memory). */
    uint8_t buf[KEYBAY_PASSPHRASE_PARAMS_BYTES];
    keybay_buffer text = {0};
    make_params(buf, 1, 0x13, 2097152, 16, 8, salt);
    CHECK(describe(buf, sizeof buf, &text) == KEYBAY_OK && text.length &&
              strcmp((char *)text.data, "Argon2id v1.3, 2 GiB, t=16, p=8") == 0,
          "upper caps accepted: %s", text.data ? (char *)text.data : "");
    P->free_buffer(&text);
    make_params(buf, 1, 0x13, 64, 1, 8, salt);
    CHECK(describe(buf, sizeof buf, &text) == KEYBAY_OK && text.length &&
              strcmp((char *)text.data, "Argon2id v1.3, 64 KiB, t=1, p=8") == 0,
          "lower caps accepted: %s", text.data ? (char *)text.data : "");
    P->free_buffer(&text);
}

static void test_options(void) {
    printf("bad enroll options -> INVALID_OPTION, no prompt\n");
    struct {
        const char *opts[3];
        size_t n;
        const char *named;
    } cases[] = {
        {{"memory=65536"}, 1, "memory"},
        {{"memory-kib=65536", "iterations=3", "colour=blue"}, 3, "colour"},
        {{"memory-kib=abc"}, 1, "memory-kib"},
        {{"memory-kib=-1"}, 1, "memory-kib"},
        {{"memory-kib="}, 1, "memory-kib"},
        {{"memory-kib= 65536"}, 1, "memory-kib"},
        {{"memory-kib=4294967296"}, 1, "memory-kib"},
        {{"memory-kib"}, 1, "memory-kib"},
        {{"memory-kib=2097153"}, 1, "memory-kib"},
        {{"memory-kib=15", "lanes=2"}, 2, "memory-kib"},
        {{"iterations=0"}, 1, "iterations"},
        {{"iterations=17"}, 1, "iterations"},
        {{"lanes=0"}, 1, "lanes"},
        {{"lanes=9"}, 1, "lanes"},
        {{"lanes=2", "lanes=2"}, 2, "lanes"},
        {{"target-ms=99"}, 1, "target-ms"},
        {{"target-ms=10001"}, 1, "target-ms"},
        {{"target-ms=500", "memory-kib=65536", "iterations=3"}, 3, "target-ms"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        stub s = make_stub("some passphrase");
        keybay_buffer params = {(uint8_t *)1, 99};
        uint8_t m[32];
        memset(m, sentinel, 32);
        keybay_status st = enroll(&s, cases[i].opts, cases[i].n, &params, m);
        CHECK(st == KEYBAY_ERR_INVALID_OPTION, "%s...: status %d", cases[i].opts[0], st);
        CHECK(s.ask_calls == 0, "%s: prompted before checking options", cases[i].opts[0]);
        CHECK(untouched(m) && params.data == NULL && params.length == 0, "%s: outputs", cases[i].opts[0]);
        CHECK(strstr(s.last_error, cases[i].named) != NULL, "error '%s' does not name %s", s.last_error,
              cases[i].named);
        printf("  %-22s %s\n", cases[i].opts[cases[i].n - 1], s.last_error);
    }
    /* A NULL option name. */
    stub s = make_stub("x");
    keybay_host h = make_host(&s);
    keybay_option bad = {NULL, "1"};
    keybay_buffer params = {0};
    uint8_t m[32];
    CHECK(P->enroll(&h, &bad, 1, &params, m) == KEYBAY_ERR_INVALID_OPTION, "NULL option name");
}

static const char *const CHEAP[] = {"memory-kib=64", "iterations=1", "lanes=1"};

static void test_passphrase_lengths(void) {
    printf("passphrase lengths\n");
    static char long_pass[1200];
    memset(long_pass, 'x', sizeof long_pass - 1);
    struct {
        size_t length;
        keybay_status expected;
    } cases[] = {{0, KEYBAY_ERR_INVALID_OPTION}, {1, KEYBAY_OK}, {1024, KEYBAY_OK},
                 {1025, KEYBAY_ERR_INVALID_OPTION}, {1199, KEYBAY_ERR_INVALID_OPTION}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        stub s = make_stub(NULL);
        s.passphrase = (const uint8_t *)long_pass;
        s.passphrase_length = cases[i].length;
        keybay_buffer params = {0};
        uint8_t m[32];
        memset(m, sentinel, 32);
        keybay_status st = enroll(&s, CHEAP, 3, &params, m);
        CHECK(st == cases[i].expected, "enroll with %zu bytes: %d (%s)", cases[i].length, st, s.last_error);
        if (st != KEYBAY_OK) {
            CHECK(untouched(m) && params.data == NULL, "enroll %zu: outputs written on failure", cases[i].length);
            printf("  enroll %4zu bytes: %s\n", cases[i].length, s.last_error);
        } else {
            CHECK(s.warnings >= 1, "below-RFC explicit parameters give a warning");
        }
        uint8_t params_cheap[KEYBAY_PASSPHRASE_PARAMS_BYTES];
        make_params(params_cheap, 1, 0x13, 64, 1, 1, "0123456789abcdef");
        stub s2 = s;
        s2.ask_calls = 0;
        memset(m, sentinel, 32);
        st = unwrap(&s2, params_cheap, sizeof params_cheap, m);
        CHECK(st == cases[i].expected, "unwrap with %zu bytes: %d", cases[i].length, st);
        if (st != KEYBAY_OK) CHECK(untouched(m), "unwrap %zu: secret written on failure", cases[i].length);
        P->free_buffer(&params);
    }
}

static void test_interaction(void) {
    printf("ask_secret statuses are passed on unchanged, outputs untouched\n");
    keybay_status answers[] = {KEYBAY_ERR_INTERACTION_UNAVAILABLE, KEYBAY_ERR_CANCELLED};
    for (int i = 0; i < 2; i++) {
        stub s = make_stub("unused");
        s.ask_status = answers[i];
        keybay_buffer params = {0};
        uint8_t m[32];
        memset(m, sentinel, 32);
        keybay_status st = enroll(&s, CHEAP, 3, &params, m);
        CHECK(st == answers[i] && untouched(m) && params.data == NULL && s.ask_calls == 1,
              "enroll: %d for %d (asked %d times)", st, answers[i], s.ask_calls);
        stub s2 = make_stub("unused");
        s2.ask_status = answers[i];
        memset(m, sentinel, 32);
        st = unwrap(&s2, PARAMS1, sizeof PARAMS1, m);
        CHECK(st == answers[i] && untouched(m) && s2.ask_calls == 1, "unwrap: %d for %d", st, answers[i]);
        printf("  ask_secret -> %d: enroll %d, unwrap %d, one ask each\n", answers[i], answers[i], st);
    }
    /* A host without ask_secret (struct too short) cannot ask. */
    stub s = make_stub("x");
    keybay_host h = make_host(&s);
    h.struct_size = (uint32_t)offsetof(keybay_host, ask_secret);
    uint8_t m[32];
    memset(m, sentinel, 32);
    CHECK(P->unwrap(&h, PARAMS1, sizeof PARAMS1, m) == KEYBAY_ERR_INTERACTION_UNAVAILABLE && untouched(m),
          "short host struct: interaction unavailable");
    /* message() answering INTERACTION_UNAVAILABLE (a --no-input host) does not stop enroll. */
    stub s3 = make_stub("messages unavailable");
    s3.message_status = KEYBAY_ERR_INTERACTION_UNAVAILABLE;
    keybay_buffer params = {0};
    CHECK(enroll(&s3, CHEAP, 3, &params, m) == KEYBAY_OK, "enroll with messages unavailable");
    P->free_buffer(&params);
    /* message() answering CANCELLED stops it. */
    stub s4 = make_stub("messages cancelled");
    s4.message_status = KEYBAY_ERR_CANCELLED;
    memset(m, sentinel, 32);
    CHECK(enroll(&s4, CHEAP, 3, &params, m) == KEYBAY_ERR_CANCELLED && untouched(m) && params.data == NULL,
          "enroll with message cancelled");
    /* is_cancelled after the passphrase was given. */
    stub s5 = make_stub("cancel me");
    s5.cancel_after_polls = 0;
    memset(m, sentinel, 32);
    CHECK(enroll(&s5, CHEAP, 3, &params, m) == KEYBAY_ERR_CANCELLED && untouched(m) && params.data == NULL,
          "enroll cancelled through is_cancelled");
    stub s6 = make_stub("cancel me");
    s6.cancel_after_polls = 0;
    CHECK(unwrap(&s6, PARAMS1, sizeof PARAMS1, m) == KEYBAY_ERR_CANCELLED && untouched(m),
          "unwrap cancelled through is_cancelled");
}

static void calibrate(const char *const *opts, size_t n, int expect_memory_floor,
                      uint32_t *m_out, uint32_t *t_out, double *first_trial_ms) {
    stub s = make_stub("calibration passphrase");
    s.verbose = 1;
    keybay_buffer params = {0};
    uint8_t m[32];
    double start = now_ms();
    keybay_status st = enroll(&s, opts, n, &params, m);
    double took = now_ms() - start;
    CHECK(st == KEYBAY_OK, "calibrating enroll: %d (%s)", st, s.last_error);
    if (st != KEYBAY_OK) return;
    uint32_t mem = get_u32(params.data + 5), t = get_u32(params.data + 9), p = get_u32(params.data + 13);
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    uint32_t default_lanes = cpus < 4 ? (uint32_t)cpus : 4;
    CHECK(!expect_memory_floor || mem >= 65536, "memory %u below 64 MiB", mem);
    CHECK(t >= 1 && t <= 16, "iterations %u", t);
    CHECK(s.progress >= 1 && s.info == 1, "progress %d, info %d", s.progress, s.info);
    CHECK(s.polls >= 2, "is_cancelled polled %d times", s.polls);
    printf("  -> memory %u KiB, t=%u, p=%u (default lanes here %u); enroll took %.0f ms in all\n", mem, t, p,
           default_lanes, took);
    /* An unwrap with the chosen parameters. */
    stub s2 = make_stub("calibration passphrase");
    uint8_t m2[32];
    start = now_ms();
    st = unwrap(&s2, params.data, params.length, m2);
    took = now_ms() - start;
    CHECK(st == KEYBAY_OK && memcmp(m, m2, 32) == 0, "unwrap after calibration");
    printf("  -> unwrap with these parameters took %.0f ms\n", took);
    if (m_out) *m_out = mem;
    if (t_out) *t_out = t;
    /* "calibrating Argon2id: 16 MiB, t=3, p=2 took 57 ms": what the first trial measured. */
    const char *line = strstr(s.first_progress, " took ");
    if (first_trial_ms) *first_trial_ms = line ? strtod(line + 6, NULL) : -1;
    P->free_buffer(&params);
}

static void test_calibration(int full) {
    printf("calibration, target-ms=300\n");
    const char *a[] = {"target-ms=300"};
    calibrate(a, 1, 1, NULL, NULL, NULL);
    printf("calibration, target-ms=300 lanes=1\n");
    const char *b[] = {"target-ms=300", "lanes=1"};
    calibrate(b, 2, 1, NULL, NULL, NULL);
    /* What calibration chooses follows from what its trials measured on this machine, so the
       checks below take the measurement from its progress line rather than expect a speed. */
    printf("calibration of iterations only: memory-kib=16384 target-ms=300\n");
    const char *c[] = {"memory-kib=16384", "target-ms=300"};
    uint32_t mem = 0, t = 0;
    double ms = 0;
    calibrate(c, 2, 0, &mem, &t, &ms);
    /* One trial at t=3; then t scales with target / measured time, within 3..16 (the progress
       line rounds the time, so one either way). */
    double want = ms > 0 ? 3.0 * 300.0 / ms : 0;
    uint32_t expected = want >= 16 ? 16 : want <= 3 ? 3 : (uint32_t)(want + 0.5);
    CHECK(mem == 16384 && ms > 0 && t >= 3 && t <= 16 && t + 1 >= expected && t <= expected + 1,
          "memory kept at 16384 (%u), iterations %u after a trial of %.0f ms (expected about %u)", mem, t, ms, expected);
    printf("calibration of memory only: iterations=1 target-ms=300\n");
    const char *d[] = {"iterations=1", "target-ms=300"};
    calibrate(d, 2, 1, &mem, &t, &ms);
    CHECK(t == 1 && mem >= 65536 && mem % 1024 == 0, "iterations kept at 1 (%u), memory %u KiB: at least 64 MiB, whole MiB", t, mem);

    printf("calibration cancelled between trials\n");
    /* Target 10 s: the first poll passes, the one before the second trial cancels. */
    const char *e[] = {"target-ms=10000"};
    stub s = make_stub("cancelled calibration");
    s.cancel_after_polls = 1;
    s.verbose = 1;
    keybay_buffer params = {0};
    uint8_t m[32];
    memset(m, sentinel, 32);
    keybay_status st = enroll(&s, e, 1, &params, m);
    CHECK(st == KEYBAY_ERR_CANCELLED && untouched(m) && params.data == NULL, "cancelled calibration: %d", st);
    CHECK(s.progress == 1 && strstr(s.last_error, "calibration") != NULL,
          "cancelled after one trial (%d trials, '%s')", s.progress, s.last_error);
    printf("  -> status %d after %d polls, %d trials: %s\n", st, s.polls, s.progress, s.last_error);

    if (full) {
        printf("calibration with the default target (1000 ms)\n");
        calibrate(NULL, 0, 1, NULL, NULL, NULL);
    }
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: %s path/to/libkeybay-passphrase.so [--calibrate-1000]\n", argv[0]);
        return 2;
    }
    int full = argc > 2 && strcmp(argv[2], "--calibrate-1000") == 0;
    real_sodium_malloc = (void *(*)(size_t))dlsym(RTLD_NEXT, "sodium_malloc");
    if (real_sodium_malloc == NULL || sodium_init() < 0) {
        fprintf(stderr, "libsodium not usable\n");
        return 2;
    }
    void *handle = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    if (handle == NULL) {
        fprintf(stderr, "dlopen: %s\n", dlerror());
        return 2;
    }
    keybay_plugin_entry_fn entry = (keybay_plugin_entry_fn)dlsym(handle, KEYBAY_PLUGIN_ENTRY_SYMBOL);
    if (entry == NULL || (P = entry()) == NULL) {
        fprintf(stderr, "no %s in %s\n", KEYBAY_PLUGIN_ENTRY_SYMBOL, argv[1]);
        return 2;
    }
    CHECK(dlsym(handle, "pp_enroll") == NULL && dlsym(handle, "pp_plugin") == NULL,
          "internal symbols are not exported");

    test_descriptor();
    test_enroll_unwrap();
    test_independent();
    test_malformed();
    test_options();
    test_passphrase_lengths();
    test_interaction();
    test_calibration(full);

    printf("%s: %d checks, %d failures\n", failures ? "FAILED" : "OK", checks, failures);
    return failures ? 1 : 0;
}
