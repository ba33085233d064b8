// SPDX-License-Identifier: Apache-2.0
// capi_check: a C host of libkeybay, written from docs/c-api.md, built with
// `cc capi_check.c $(pkg-config --cflags --libs keybay)` against an installed prefix. It uses
// the store of KEYBAY_APP_ID in the XDG directories of its environment and exits 1 on a
// failed check. CAPITests runs it. `capi_check default-interaction null` checks that
// keybay_default_interaction() is NULL; `... default-interaction set` that it is not, and
// enrolls a passphrase and opens the store through it (a pinentry answering "pw" five times).
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <keybay/keybay.h>

static int checks, failures;
#define CHECK(cond, ...) do { checks++; if (!(cond)) { failures++; printf("FAIL %s:%d: ", __FILE__, __LINE__); printf(__VA_ARGS__); printf("\n"); } } while (0)

struct answers { const char *secret; int asked; };

static int ask(void *context, const char *prompt, int is_confirmation, char *buf, size_t capacity, size_t *len) {
    (void)prompt; (void)is_confirmation;
    struct answers *a = context;
    size_t n = strlen(a->secret);
    if (n > capacity) return KEYBAY_ERR_INTERACTION_REQUIRED;
    memcpy(buf, a->secret, n);
    *len = n;
    a->asked++;
    return 0;
}

static keybay_interaction asking(struct answers *a) {
    keybay_interaction i;
    memset(&i, 0, sizeof i);
    i.abi_version = KEYBAY_INTERACTION_ABI_VERSION;
    i.struct_size = sizeof i;
    i.context = a;
    i.ask_secret = ask;
    return i;
}

static keybay_open_options options(const char *method_id) {
    keybay_open_options o;
    memset(&o, 0, sizeof o);
    o.struct_size = sizeof o;
    o.app_id = getenv("KEYBAY_APP_ID");
    o.method_id = method_id;
    return o;
}

static const struct { int code; const char *name; } names[] = {
    {KEYBAY_ERR_INVALID_ARGUMENT, "invalid-argument"},
    {KEYBAY_ERR_INVALID_KEY, "invalid-key"},
    {KEYBAY_ERR_VALUE_TOO_LARGE, "value-too-large"},
    {KEYBAY_ERR_STORE_FULL, "store-full"},
    {KEYBAY_ERR_STORE_NOT_FOUND, "store-not-found"},
    {KEYBAY_ERR_ALREADY_INITIALIZED, "already-initialized"},
    {KEYBAY_ERR_STATE_CONFLICT, "state-conflict"},
    {KEYBAY_ERR_PLATFORM_KEY_INVALIDATED, "platform-key-invalidated"},
    {KEYBAY_ERR_ROOT_UNAVAILABLE, "root-unavailable"},
    {KEYBAY_ERR_ROLLED_BACK, "rolled-back"},
    {KEYBAY_ERR_PROTECTION_MISMATCH, "protection-mismatch"},
    {KEYBAY_ERR_AUTHENTICATION_REQUIRED, "authentication-required"},
    {KEYBAY_ERR_KEY_CHANGED, "key-changed"},
    {KEYBAY_ERR_MALFORMED, "malformed"},
    {KEYBAY_ERR_INTEGRITY, "integrity"},
    {KEYBAY_ERR_UNSUPPORTED, "unsupported"},
    {KEYBAY_ERR_INSECURE_PERMISSIONS, "insecure-permissions"},
    {KEYBAY_ERR_IO, "io"},
    {KEYBAY_ERR_METHOD_NOT_FOUND, "method-not-found"},
    {KEYBAY_ERR_WRONG_SECRET, "wrong-secret"},
    {KEYBAY_ERR_LOCKED, "locked"},
    {KEYBAY_ERR_CANCELLED, "cancelled"},
    {KEYBAY_ERR_TIMED_OUT, "timed-out"},
    {KEYBAY_ERR_METHOD_UNAVAILABLE, "method-unavailable"},
    {KEYBAY_ERR_PIN_REQUIRED, "pin-required"},
    {KEYBAY_ERR_INTERACTION_REQUIRED, "interaction-required"},
    {KEYBAY_ERR_PLUGIN_NOT_FOUND, "plugin-not-found"},
    {KEYBAY_ERR_PLUGIN_REFUSED, "plugin-refused"},
    {KEYBAY_ERR_PLUGIN_FAILED, "plugin-failed"},
    {KEYBAY_ERR_CLOSED, "closed"},
    {KEYBAY_ERR_NOT_FOUND, "not-found"}
};

static char shown[128];

static void show(void *context, const char *label, const char *secret) {
    (void)context; (void)label;
    snprintf(shown, sizeof shown, "%s", secret);
}

struct worker { keybay_store *store; int index; int failures; };

static void *work(void *arg) {
    struct worker *w = arg;
    char key[32], value[32];
    for (int n = 0; n < 25; n++) {
        snprintf(key, sizeof key, "t%d", w->index);
        snprintf(value, sizeof value, "%d-%d", w->index, n);
        if (keybay_set(w->store, key, (const uint8_t *)value, strlen(value), NULL) != 0) { w->failures++; continue; }
        uint8_t *got = NULL;
        size_t length = 0;
        if (keybay_get(w->store, key, &got, &length, NULL) != 0 || length != strlen(value) || memcmp(got, value, length) != 0) w->failures++;
        keybay_free_value(got, length);
    }
    return NULL;
}

/* keybay_default_interaction: NULL, or a static struct that asks (through the pinentry the
 * environment names): enroll, open, open with a copy of it, and one direct ask_secret. */
static int check_default_interaction(const char *expect) {
    const keybay_interaction *asker = keybay_default_interaction();
    if (strcmp(expect, "null") == 0) {
        CHECK(asker == NULL, "keybay_default_interaction() is not NULL");
    } else {
        CHECK(asker && asker == keybay_default_interaction() && asker->abi_version == KEYBAY_INTERACTION_ABI_VERSION
              && asker->struct_size == sizeof *asker && asker->ask_secret && !asker->show_secret, "the default interaction");
        if (!asker) return 1;
        keybay_error *err = NULL;
        keybay_open_options o = options(NULL);
        keybay_store *store = keybay_open(&o, asker, &err);
        CHECK(store && keybay_set(store, "k", (const uint8_t *)"v", 1, NULL) == 0, "open and set");
        const char *fast[] = {"memory-kib=8192", "iterations=1", "lanes=1", NULL};
        char *method = NULL;
        CHECK(keybay_enroll(store, "passphrase", "main", fast, asker, &method, &err) == 0, "enroll through it: %s", err ? keybay_error_message(err) : "");
        keybay_close(store);
        keybay_free_string(method);
        keybay_interaction copy = *asker;
        for (int i = 0; i < 2; i++) {
            store = keybay_open(&o, i == 0 ? asker : &copy, &err);
            uint8_t *value = NULL;
            size_t length = 0;
            CHECK(store && keybay_get(store, "k", &value, &length, NULL) == 0 && length == 1 && value[0] == 'v',
                  "open %d through it: %s", i, err ? keybay_error_message(err) : "");
            keybay_free_value(value, length);
            keybay_close(store);
        }
        char buf[16];
        size_t len = 0;
        CHECK(asker->ask_secret(asker->context, "Passphrase", 0, buf, sizeof buf, &len) == 0 && len == 2 && memcmp(buf, "pw", 2) == 0, "ask_secret called directly");
        CHECK(keybay_reset(&o, NULL) == 0, "reset");
    }
    printf("capi_check: %d checks, %d failures\n", checks, failures);
    return failures ? 1 : 0;
}

int main(int argc, char **argv) {
    if (argc == 3 && strcmp(argv[1], "default-interaction") == 0) return check_default_interaction(argv[2]);
    keybay_error *err = NULL;
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        const char *name = keybay_code_name(names[i].code);
        CHECK(name && strcmp(name, names[i].name) == 0, "code %d is %s, expected %s", names[i].code, name ? name : "NULL", names[i].name);
    }
    CHECK(keybay_code_name(0) == NULL && keybay_code_name(99) == NULL, "numbers that are no code have no name");
    CHECK(strcmp(keybay_version(), "1.2.0") == 0, "version %s", keybay_version());

    // Open (a platform-only store is created), set, get, keys, delete.
    keybay_open_options o = options(NULL);
    keybay_store *store = keybay_open(&o, NULL, &err);
    CHECK(store != NULL, "open: %s", err ? keybay_error_message(err) : "");
    if (!store) return 1;
    CHECK(keybay_set(store, "k", (const uint8_t *)"v\0w", 3, &err) == 0, "set");
    uint8_t *value = NULL;
    size_t length = 0;
    CHECK(keybay_get(store, "k", &value, &length, &err) == 0 && length == 3 && memcmp(value, "v\0w", 3) == 0, "get");
    keybay_free_value(value, length);
    CHECK(keybay_set(store, "empty", NULL, 0, NULL) == 0, "an empty value");
    CHECK(keybay_get(store, "empty", &value, &length, NULL) == 0 && length == 0, "the empty value");
    keybay_free_value(value, length);
    char **keys = NULL;
    size_t count = 0;
    CHECK(keybay_keys(store, &keys, &count, &err) == 0 && count == 2 && strcmp(keys[0], "empty") == 0 && strcmp(keys[1], "k") == 0, "keys");
    keybay_free_strings(keys, count);
    CHECK(keybay_get(store, "missing", &value, &length, &err) == KEYBAY_ERR_NOT_FOUND && value == NULL, "missing key");
    CHECK(err && keybay_error_code(err) == KEYBAY_ERR_NOT_FOUND && strcmp(keybay_error_name(err), "not-found") == 0, "not-found error");
    keybay_error_free(err); err = NULL;
    CHECK(keybay_delete(store, "empty", NULL) == 0, "delete");
    CHECK(keybay_delete(store, "empty", NULL) == KEYBAY_ERR_NOT_FOUND, "delete again");

    // Many values held at once (more than one guarded arena of 512 slots), at the slot size and
    // one byte over it (a sodium_malloc allocation of its own): each intact while the others
    // live. A freed small value's slot stays mapped (the arena is kept), so its wiping is seen.
    uint8_t small_value[128], large_value[129];
    memset(small_value, 0x5a, sizeof small_value);
    memset(large_value, 0xa5, sizeof large_value);
    CHECK(keybay_set(store, "v/small", small_value, sizeof small_value, NULL) == 0 &&
          keybay_set(store, "v/large", large_value, sizeof large_value, NULL) == 0, "set the held values");
    enum { HELD = 600 };
    uint8_t *held[HELD];
    size_t held_length[HELD];
    int intact = 1;
    for (int i = 0; i < HELD; i++) {
        const char *key = i % 3 == 2 ? "v/large" : "v/small";
        held[i] = NULL;
        if (keybay_get(store, key, &held[i], &held_length[i], NULL) != 0) { intact = 0; continue; }
        if (i > 0 && held[i] == held[i - 1]) intact = 0;
    }
    for (int i = 0; i < HELD; i++) {
        const uint8_t *want = i % 3 == 2 ? large_value : small_value;
        size_t n = i % 3 == 2 ? sizeof large_value : sizeof small_value;
        if (!held[i] || held_length[i] != n || memcmp(held[i], want, n) != 0) intact = 0;
    }
    CHECK(intact, "%d values held at once are each whole and distinct", HELD);
    volatile uint8_t *freed = held[0];
    for (int i = HELD - 1; i >= 0; i--) keybay_free_value(held[i], held_length[i]);
    int wiped = 1;
    for (size_t i = 0; i < sizeof small_value; i++) wiped &= freed[i] == 0;
    CHECK(wiped, "keybay_free_value wiped a 128-byte value");
    CHECK(keybay_delete(store, "v/small", NULL) == 0 && keybay_delete(store, "v/large", NULL) == 0, "delete the held values");

    // Bad arguments are codes, never crashes.
    CHECK(keybay_get(NULL, "k", &value, &length, NULL) == KEYBAY_ERR_INVALID_ARGUMENT, "NULL store");
    CHECK(keybay_get(store, NULL, &value, &length, NULL) == KEYBAY_ERR_INVALID_ARGUMENT, "NULL key");
    CHECK(keybay_set(store, "a b", (const uint8_t *)"x", 1, &err) == KEYBAY_ERR_INVALID_KEY, "invalid key");
    CHECK(err && strcmp(keybay_error_name(err), "invalid-key") == 0, "invalid-key name");
    keybay_error_free(err); err = NULL;
    CHECK(keybay_set(store, "k", NULL, 4, NULL) == KEYBAY_ERR_INVALID_ARGUMENT, "NULL value with a length");
    keybay_open_options small = o;
    small.struct_size = 4;
    CHECK(keybay_open(&small, NULL, &err) == NULL && keybay_error_code(err) == KEYBAY_ERR_INVALID_ARGUMENT, "a short struct_size");
    keybay_error_free(err); err = NULL;
    CHECK(keybay_open(NULL, NULL, NULL) == NULL, "NULL options");
    CHECK(keybay_error_code(NULL) == KEYBAY_ERR_INVALID_ARGUMENT && keybay_error_name(NULL) == NULL, "NULL error");
    CHECK(keybay_error_reason(NULL) == NULL && keybay_error_tries_left(NULL) == -1, "NULL error's reason and tries left");

    // One handle, four threads.
    pthread_t threads[4];
    struct worker workers[4];
    for (int t = 0; t < 4; t++) { workers[t] = (struct worker){store, t, 0}; pthread_create(&threads[t], NULL, work, &workers[t]); }
    for (int t = 0; t < 4; t++) { pthread_join(threads[t], NULL); CHECK(workers[t].failures == 0, "thread %d: %d failures", t, workers[t].failures); }

    // A passphrase through ask_secret (asked twice: entry and confirmation).
    struct answers pw = {"correct horse", 0};
    keybay_interaction asker = asking(&pw);
    const char *fast[] = {"memory-kib=8192", "iterations=1", "lanes=1", NULL};
    char *method = NULL;
    CHECK(keybay_enroll(store, "passphrase", "main", fast, &asker, &method, &err) == 0 && method && strlen(method) == 32,
          "enroll: %s", err ? keybay_error_message(err) : "");
    CHECK(pw.asked == 2, "asked %d times", pw.asked);
    keybay_close(store);
    if (!method) return 1;

    // Reopened with the method; a wrong passphrase is wrong-secret, naming the method.
    keybay_open_options with = options(method);
    struct answers wrong = {"wrong", 0};
    keybay_interaction wrong_asker = asking(&wrong);
    CHECK(keybay_open(&with, &wrong_asker, &err) == NULL && keybay_error_code(err) == KEYBAY_ERR_WRONG_SECRET, "wrong passphrase");
    CHECK(err && strcmp(keybay_error_name(err), "wrong-secret") == 0 && keybay_error_method_id(err) && strcmp(keybay_error_method_id(err), method) == 0,
          "wrong-secret names the method");
    CHECK(err && keybay_error_reason(err) == NULL && keybay_error_tries_left(err) == -1, "a wrong passphrase names no reason");
    keybay_error_free(err); err = NULL;
    CHECK(keybay_open(&o, NULL, &err) == NULL && keybay_error_code(err) == KEYBAY_ERR_INTERACTION_REQUIRED, "no interaction: %d", keybay_error_code(err));
    keybay_error_free(err); err = NULL;
    pw.asked = 0;
    store = keybay_open(&o, &asker, &err); // the only method, without naming it
    CHECK(store != NULL && pw.asked == 1, "open with the only method: %s", err ? keybay_error_message(err) : "");
    if (!store) return 1;
    CHECK(keybay_get(store, "k", &value, &length, NULL) == 0 && length == 3, "get after reopening");
    keybay_free_value(value, length);
    // An interaction only as long as ask_secret (struct_size says so) is read no further.
    size_t short_size = offsetof(keybay_interaction, ask_secret) + sizeof(void *);
    keybay_interaction *brief = malloc(short_size);
    memcpy(brief, &asker, short_size);
    brief->struct_size = (uint32_t)short_size;
    keybay_store *again = keybay_open(&with, brief, &err);
    CHECK(again != NULL, "a short interaction: %s", err ? keybay_error_message(err) : "");
    keybay_close(again);
    free(brief);
    char *json = NULL;
    CHECK(keybay_status_json(&o, &json, &err) == 0 && json && strstr(json, "\"state\":\"protected\"") && strstr(json, method), "status: %s", json ? json : "");
    keybay_free_string(json);

    // Removing the method: platform-only again.
    CHECK(keybay_remove_method(store, method, NULL, &err) == 0, "remove_method");
    keybay_close(store);
    store = keybay_open(&o, NULL, &err);
    CHECK(store != NULL, "open after remove");
    keybay_close(store);
    keybay_free_string(method);

    // A recovery key needs show_secret: without one nothing is enrolled.
    store = keybay_open(&o, NULL, NULL);
    char *recovery = NULL;
    CHECK(keybay_enroll(store, "recovery", NULL, NULL, &asker, &recovery, &err) == KEYBAY_ERR_INTERACTION_REQUIRED && recovery == NULL, "recovery without show_secret");
    keybay_error_free(err); err = NULL;
    keybay_close(store);
    CHECK(keybay_status_json(&o, &json, NULL) == 0 && strstr(json, "\"state\":\"platform-only\""), "still platform-only: %s", json);
    keybay_free_string(json);

    // With show_secret: the recovery key reaches the host after it is stored, and opens the store.
    keybay_interaction shower = asker;
    shower.show_secret = show;
    store = keybay_open(&o, NULL, NULL);
    CHECK(keybay_enroll(store, "recovery", NULL, NULL, &shower, &recovery, &err) == 0 && recovery && strlen(shown) > 50,
          "recovery with show_secret: %s", err ? keybay_error_message(err) : "");
    keybay_close(store);
    struct answers key = {shown, 0};
    keybay_interaction key_asker = asking(&key);
    keybay_open_options by_key = options(recovery);
    store = keybay_open(&by_key, &key_asker, &err);
    CHECK(store != NULL && key.asked == 1, "the shown recovery key opens the store: %s", err ? keybay_error_message(err) : "");
    keybay_close(store);
    // A recovery key too short: wrong-secret, and the plugin's reason says why.
    struct answers short_key = {"0000", 0};
    keybay_interaction short_asker = asking(&short_key);
    CHECK(keybay_open(&by_key, &short_asker, &err) == NULL && keybay_error_code(err) == KEYBAY_ERR_WRONG_SECRET, "a short recovery key");
    CHECK(err && keybay_error_reason(err) && strcmp(keybay_error_reason(err), "typo-length") == 0 && keybay_error_tries_left(err) == -1,
          "the plugin's reason: %s", err && keybay_error_reason(err) ? keybay_error_reason(err) : "NULL");
    keybay_error_free(err); err = NULL;
    keybay_free_string(recovery);

    CHECK(keybay_reset(&o, &err) == 0, "reset");
    CHECK(keybay_status_json(&o, &json, NULL) == 0 && strstr(json, "\"state\":\"absent\""), "absent after reset: %s", json);
    keybay_free_string(json);
    printf("capi_check: %d checks, %d failures\n", checks, failures);
    return failures ? 1 : 0;
}
