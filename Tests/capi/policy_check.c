// SPDX-License-Identifier: Apache-2.0
// policy_check: a C host of libkeybay 1.2, written from keybay.h and docs/c-api.md: a store with
// two methods (a passphrase, a recovery key) listed by keybay_status_get, refused with
// keybay_error_methods when the host names none and cannot choose, opened by choose_method with
// the method's label and id in the ask request; tries; contains, get_many, verify, unlock (a
// second process reads without asking), lock and clear_all. CAPITests runs it against an
// installed prefix: `policy_check` (the whole run) calls `policy_check read KEY` as that second
// process, which opens with no method and no interaction and prints the value.
#define _POSIX_C_SOURCE 200809L /* popen */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>

#include <keybay/keybay.h>

static int checks, failures;
#define CHECK(cond, ...) do { checks++; if (!(cond)) { failures++; printf("FAIL %s:%d: ", __FILE__, __LINE__); printf(__VA_ARGS__); printf("\n"); } } while (0)
#define MESSAGE(err) ((err) ? keybay_error_message(err) : "")

/* What the host's callbacks saw and answer. */
struct host {
    const char *answers[4];           /* the secrets `ask` gives, in turn (the last one repeats) */
    int asked;
    keybay_ask_request last;          /* the last request, its strings copied below */
    char method_id[64], label[64], plugin_id[32], app_id[128], secret_kind[32];
    int retries_seen, tries_left_second;
    const char *choose_plugin;        /* choose_method picks the method of this plugin */
    int chosen_count, choose_calls;
    char choice_labels[2][64];
    int choice_needs_device[2];
    char recovery[160];               /* what show_secret was given */
};

static void copy(char *to, size_t size, const char *from) { snprintf(to, size, "%s", from ? from : "(null)"); }

static int ask(void *context, const keybay_ask_request *request, char *buf, size_t capacity, size_t *len) {
    struct host *h = context;
    int turn = 0;
    while (turn < 3 && turn < h->asked && h->answers[turn + 1]) turn++;
    const char *answer = h->answers[turn];
    h->asked++;
    h->last = *request;
    copy(h->method_id, sizeof h->method_id, request->method_id);
    copy(h->label, sizeof h->label, request->label);
    copy(h->plugin_id, sizeof h->plugin_id, request->plugin_id);
    copy(h->app_id, sizeof h->app_id, request->app_id);
    copy(h->secret_kind, sizeof h->secret_kind, request->secret_kind);
    if (request->is_retry) { h->retries_seen++; h->tries_left_second = request->tries_left; }
    size_t n = strlen(answer);
    if (n > capacity) return KEYBAY_ERR_INTERACTION_REQUIRED;
    memcpy(buf, answer, n);
    *len = n;
    return 0;
}

static int choose(void *context, const keybay_method_info *methods, size_t count, size_t *chosen) {
    struct host *h = context;
    h->choose_calls++;
    h->chosen_count = (int)count;
    for (size_t i = 0; i < count && i < 2; i++) {
        copy(h->choice_labels[i], sizeof h->choice_labels[i], methods[i].label);
        h->choice_needs_device[i] = methods[i].needs_device;
    }
    for (size_t i = 0; i < count; i++) {
        if (methods[i].struct_size >= sizeof *methods && strcmp(methods[i].plugin, h->choose_plugin) == 0) { *chosen = i; return 0; }
    }
    return KEYBAY_ERR_CANCELLED;
}

static void show(void *context, const char *label, const char *secret) {
    (void)label;
    struct host *h = context;
    copy(h->recovery, sizeof h->recovery, secret);
}

static keybay_interaction interaction(struct host *h, int with_choice) {
    keybay_interaction i;
    memset(&i, 0, sizeof i);
    i.abi_version = KEYBAY_INTERACTION_ABI_VERSION;
    i.struct_size = sizeof i;
    i.context = h;
    i.ask = ask;                      /* no ask_secret: `ask` alone is enough */
    i.show_secret = show;
    if (with_choice) i.choose_method = choose;
    return i;
}

static keybay_open_options options(const char *method_id, int tries) {
    keybay_open_options o;
    memset(&o, 0, sizeof o);
    o.struct_size = sizeof o;
    o.app_id = getenv("KEYBAY_APP_ID");
    o.method_id = method_id;
    o.tries = tries;
    return o;
}

/* The second process: opens with no method and no interaction, prints the value of `key`. */
static int read_value(const char *key) {
    keybay_open_options o = options(NULL, 0);
    keybay_error *err = NULL;
    keybay_store *store = keybay_open(&o, NULL, &err);
    if (!store) { printf("open: %s\n", keybay_error_name(err)); keybay_error_free(err); return 2; }
    uint8_t *value = NULL;
    size_t length = 0;
    keybay_code code = keybay_get(store, key, &value, &length, &err);
    if (code == KEYBAY_OK) printf("%.*s\n", (int)length, (const char *)value);
    else printf("get: %s\n", keybay_error_name(err));
    keybay_free_value(value, length);
    keybay_error_free(err);
    keybay_close(store);
    return code == KEYBAY_OK ? 0 : 2;
}

/* `self read KEY` as another process: its exit status, its output in `out`. */
static int run_reader(const char *self, const char *key, char *out, size_t size) {
    char command[4096];
    snprintf(command, sizeof command, "'%s' read '%s'", self, key);
    FILE *p = popen(command, "r");
    if (!p) return -1;
    size_t n = fread(out, 1, size - 1, p);
    out[n] = 0;
    int status = pclose(p);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

int main(int argc, char **argv) {
    if (argc == 3 && strcmp(argv[1], "read") == 0) return read_value(argv[2]);
    keybay_error *err = NULL;
    const char *fast[] = {"memory-kib=8192", "iterations=1", "lanes=1", NULL};

    // A platform-only store with two records, then a passphrase and a recovery key.
    keybay_open_options plain = options(NULL, 0);
    keybay_store *store = keybay_open(&plain, NULL, &err);
    CHECK(store != NULL, "open: %s", MESSAGE(err));
    if (!store) return 1;
    CHECK(keybay_set(store, "a", (const uint8_t *)"1", 1, NULL) == KEYBAY_OK, "set a");
    CHECK(keybay_set(store, "b", (const uint8_t *)"2", 1, NULL) == KEYBAY_OK, "set b");
    struct host enrolling = {.answers = {"pw"}};
    keybay_interaction enroller = interaction(&enrolling, 0);
    char *passphrase = NULL, *recovery = NULL;
    CHECK(keybay_enroll(store, "passphrase", "Passphrase", fast, &enroller, &passphrase, &err) == KEYBAY_OK, "enroll passphrase: %s", MESSAGE(err));
    CHECK(enrolling.asked == 2 && enrolling.last.kind == KEYBAY_ASK_CONFIRM_NEW_SECRET && strcmp(enrolling.label, "Passphrase") == 0
          && strcmp(enrolling.method_id, "(null)") == 0, "the enrollment's asks: %d, kind %d, label %s", enrolling.asked, enrolling.last.kind, enrolling.label);
    keybay_close(store);
    // The passphrase opens the store now; the recovery key is enrolled on it.
    keybay_open_options by_passphrase = options(passphrase, 0);
    store = keybay_open(&by_passphrase, &enroller, &err);
    CHECK(store != NULL, "open with the passphrase: %s", MESSAGE(err));
    if (!store || !passphrase) return 1;
    CHECK(keybay_enroll(store, "recovery", "Paper key", NULL, &enroller, &recovery, &err) == KEYBAY_OK && strlen(enrolling.recovery) > 20,
          "enroll recovery: %s", MESSAGE(err));
    keybay_close(store);
    if (!recovery) return 1;

    // keybay_status_get lists both, with their plugins, labels and needs_device.
    keybay_status_info *status = NULL;
    CHECK(keybay_status_get(&plain, &status, &err) == KEYBAY_OK && status, "status: %s", MESSAGE(err));
    if (!status) return 1;
    CHECK(status->struct_size == sizeof *status && strcmp(status->state, "protected") == 0 && status->method_count == 2
          && strcmp(status->root, "file-root") == 0 && status->unlocked == 0, "status: %s, %zu methods", status->state, status->method_count);
    CHECK(status->method_count == 2 && strcmp(status->methods[0].id, passphrase) == 0 && strcmp(status->methods[0].plugin, "passphrase") == 0
          && strcmp(status->methods[0].label, "Passphrase") == 0 && status->methods[0].needs_device == 0
          && strcmp(status->methods[1].id, recovery) == 0 && strcmp(status->methods[1].plugin, "recovery") == 0
          && strcmp(status->methods[1].label, "Paper key") == 0 && status->methods[1].needs_device == 0, "the methods listed");
    keybay_free_status(status);

    // No method named and no chooser: authentication-required, listing both.
    struct host nobody = {.answers = {"pw"}};
    keybay_interaction no_choice = interaction(&nobody, 0);
    store = keybay_open(&plain, &no_choice, &err);
    CHECK(store == NULL && err && keybay_error_code(err) == KEYBAY_ERR_AUTHENTICATION_REQUIRED, "open with no method: %s", MESSAGE(err));
    size_t listed = 0;
    const keybay_method_info *methods = keybay_error_methods(err, &listed);
    CHECK(listed == 2 && methods && strcmp(methods[0].id, passphrase) == 0 && strcmp(methods[1].id, recovery) == 0
          && strcmp(methods[1].label, "Paper key") == 0, "the error lists %zu methods", listed);
    CHECK(nobody.asked == 0, "nothing was asked");
    keybay_error_free(err);
    err = NULL;
    keybay_close(store);
    CHECK(keybay_error_methods(NULL, &listed) == NULL && listed == 0, "no methods for NULL");

    // choose_method picks the recovery key; its ask request names the method, label and app.
    struct host chooser = {.answers = {enrolling.recovery}, .choose_plugin = "recovery"};
    keybay_interaction choosing = interaction(&chooser, 1);
    store = keybay_open(&plain, &choosing, &err);
    CHECK(store != NULL, "open by choice: %s", MESSAGE(err));
    CHECK(chooser.choose_calls == 1 && chooser.chosen_count == 2 && strcmp(chooser.choice_labels[0], "Passphrase") == 0
          && strcmp(chooser.choice_labels[1], "Paper key") == 0 && chooser.choice_needs_device[0] == 0, "the choice offered");
    CHECK(chooser.asked == 1 && chooser.last.kind == KEYBAY_ASK_SECRET && strcmp(chooser.method_id, recovery) == 0
          && strcmp(chooser.label, "Paper key") == 0 && strcmp(chooser.plugin_id, "recovery") == 0
          && strcmp(chooser.app_id, getenv("KEYBAY_APP_ID")) == 0 && strcmp(chooser.secret_kind, "recovery key") == 0
          && chooser.last.is_retry == 0 && chooser.last.struct_size == sizeof(keybay_ask_request),
          "the ask request: method %s label %s plugin %s app %s kind %s", chooser.method_id, chooser.label, chooser.plugin_id, chooser.app_id, chooser.secret_kind);
    if (!store) return 1;

    // contains and get_many, from one generation.
    int found = -1;
    CHECK(keybay_contains(store, "a", &found, &err) == KEYBAY_OK && found == 1, "contains a");
    CHECK(keybay_contains(store, "c", &found, &err) == KEYBAY_OK && found == 0, "contains c");
    CHECK(keybay_contains(store, "a", NULL, &err) == KEYBAY_ERR_INVALID_ARGUMENT, "contains without found");
    keybay_error_free(err);
    err = NULL;
    const char *keys[] = {"a", "c", "b"};
    uint8_t *values[3];
    size_t lengths[3];
    CHECK(keybay_get_many(store, keys, 3, values, lengths, &err) == KEYBAY_OK, "get_many: %s", MESSAGE(err));
    CHECK(values[0] && lengths[0] == 1 && values[0][0] == '1' && values[1] == NULL && lengths[1] == 0
          && values[2] && lengths[2] == 1 && values[2][0] == '2', "get_many's values");
    for (int i = 0; i < 3; i++) keybay_free_value(values[i], lengths[i]);
    CHECK(keybay_get_many(store, NULL, 1, values, lengths, &err) == KEYBAY_ERR_INVALID_ARGUMENT, "get_many without keys");
    keybay_error_free(err);
    err = NULL;

    // verify: the passphrase checks out, a wrong one is wrong-secret; nothing changes.
    struct host right = {.answers = {"pw"}}, wrong = {.answers = {"nope"}};
    keybay_interaction verifying = interaction(&right, 0), misverifying = interaction(&wrong, 0);
    CHECK(keybay_verify(store, passphrase, &verifying, &err) == KEYBAY_OK && right.asked == 1, "verify: %s", MESSAGE(err));
    CHECK(keybay_verify(store, passphrase, &misverifying, &err) == KEYBAY_ERR_WRONG_SECRET, "verify a wrong one");
    keybay_error_free(err);
    err = NULL;

    // unlock for 60 s: another process reads without asking; lock: it no longer can.
    int64_t until = 0;
    CHECK(keybay_unlock(store, 60, &until, &err) == KEYBAY_OK && until > (int64_t)time(NULL) + 50, "unlock: %s", MESSAGE(err));
    keybay_error_free(err);
    err = NULL;
    char out[256];
    int reader = run_reader(argv[0], "b", out, sizeof out);
    CHECK(reader == 0 && strcmp(out, "2\n") == 0, "the second process read: %d %s", reader, out);
    keybay_status_info *held = NULL;
    CHECK(keybay_status_get(&plain, &held, &err) == KEYBAY_OK && held && held->unlocked == 1 && held->unlocked_until == until, "status says unlocked");
    keybay_free_status(held);
    int forgotten = -1;
    CHECK(keybay_lock(&plain, &forgotten, &err) == KEYBAY_OK && forgotten == 1, "lock");
    reader = run_reader(argv[0], "b", out, sizeof out);
    CHECK(reader == 2 && strcmp(out, "open: authentication-required\n") == 0, "after lock: %d %s", reader, out);
    CHECK(keybay_lock(&plain, &forgotten, &err) == KEYBAY_OK && forgotten == 0, "lock again");

    // clear_all: no records left, the methods stay.
    CHECK(keybay_clear_all(store, &err) == KEYBAY_OK, "clear_all: %s", MESSAGE(err));
    char **names = NULL;
    size_t count = 9;
    CHECK(keybay_keys(store, &names, &count, &err) == KEYBAY_OK && count == 0, "keys after clear_all: %zu", count);
    keybay_free_strings(names, count);
    keybay_close(store);

    // Tries: a wrong passphrase, then the right one, with tries = 3; the second ask is a retry.
    struct host again = {.answers = {"nope", "pw"}};
    keybay_interaction retrying = interaction(&again, 0);
    keybay_open_options three = options(passphrase, 3);
    store = keybay_open(&three, &retrying, &err);
    CHECK(store != NULL && again.asked == 2 && again.retries_seen == 1 && again.tries_left_second == 2, "tries: %s, asked %d, retries %d, left %d",
          MESSAGE(err), again.asked, again.retries_seen, again.tries_left_second);
    keybay_close(store);
    // One try (the default): the wrong passphrase fails at once.
    struct host once = {.answers = {"nope", "pw"}};
    keybay_interaction one_try = interaction(&once, 0);
    keybay_open_options single = options(passphrase, 0);
    store = keybay_open(&single, &one_try, &err);
    CHECK(store == NULL && keybay_error_code(err) == KEYBAY_ERR_WRONG_SECRET && once.asked == 1, "one try: asked %d", once.asked);
    keybay_error_free(err);
    err = NULL;
    keybay_open_options too_many = options(passphrase, 11);
    CHECK(keybay_open(&too_many, &one_try, &err) == NULL && keybay_error_code(err) == KEYBAY_ERR_INVALID_ARGUMENT, "tries 11");
    keybay_error_free(err);

    keybay_free_string(passphrase);
    keybay_free_string(recovery);
    printf("policy_check: %d checks, %d failures\n", checks, failures);
    return failures ? 1 : 0;
}
