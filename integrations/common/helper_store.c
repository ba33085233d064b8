/* SPDX-License-Identifier: Apache-2.0 */
#include "helper_store.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>


static int asking_forbidden;

void helper_forbid_asking(void) { asking_forbidden = 1; }

const keybay_interaction *helper_interaction(void) {
    if (asking_forbidden) return NULL;
    /* The library's asker: KEYBAY_PINENTRY's pinentry, else the terminal, else `pinentry` on
     * PATH; NULL when there is none, and a locked store then gives the hint instead. */
    return keybay_default_interaction();
}

int helper_app_argument(int argc, char **argv, int *i, const char **app) {
    if (strcmp(argv[*i], "--app") == 0 && *i + 1 < argc) { *app = argv[++*i]; return 1; }
    if (strncmp(argv[*i], "--app=", 6) == 0) { *app = argv[*i] + 6; return 1; }
    return 0;
}

int helper_code_is_locked(int code) {
    return code == KEYBAY_ERR_INTERACTION_REQUIRED || code == KEYBAY_ERR_AUTHENTICATION_REQUIRED
        || code == KEYBAY_ERR_PIN_REQUIRED || code == KEYBAY_ERR_CANCELLED;
}

void helper_describe_error(const char *program, keybay_error *err, char *message, size_t capacity) {
    snprintf(message, capacity, "%s: %s [%s]", program, err ? keybay_error_message(err) : "failed",
             err ? keybay_error_name(err) : "unknown");
    /* One line, whatever the library's message holds. */
    for (char *c = message; *c; c++) if (*c == '\n' || *c == '\r') *c = ' ';
}

static void describe_locked(const char *program, const char *app_id, keybay_error *err, char *message, size_t capacity) {
    snprintf(message, capacity, "%s: the keybay store \"%s\" is locked [%s]; unlock it with: keybay-methods --app %s unlock",
             program, app_id, keybay_error_name(err), app_id);
}

static helper_open_result failed(const char *program, const char *app_id, keybay_error *err, char *message, size_t capacity) {
    int code = keybay_error_code(err);
    if (helper_code_is_locked(code)) describe_locked(program, app_id, err, message, capacity);
    else helper_describe_error(program, err, message, capacity);
    keybay_error_free(err);
    return helper_code_is_locked(code) ? HELPER_LOCKED : HELPER_FAILED;
}

/* 1 when the store file is where docs/c-api.md says it lives ($XDG_DATA_HOME, when absolute,
 * else ~/.local/share, then keybay/<app>/keybay.v2.store). Only a shortcut: when it is not
 * found there, keybay_status_json decides, so the answer never rests on this alone; it saves a
 * second look at the root (on secret-service, a round trip to the keyring) before the open. */
static int store_file_exists(const char *app_id) {
    const char *data = getenv("XDG_DATA_HOME"), *home = getenv("HOME");
    char path[4096];
    int n;
    if (data && data[0] == '/') n = snprintf(path, sizeof path, "%s/keybay/%s/keybay.v2.store", data, app_id);
    else if (home && home[0] == '/') n = snprintf(path, sizeof path, "%s/.local/share/keybay/%s/keybay.v2.store", home, app_id);
    else return 0;
    struct stat st;
    return n > 0 && (size_t)n < sizeof path && lstat(path, &st) == 0 && S_ISREG(st.st_mode);
}

/* 1 when keybay_status_get says "absent", 0 when something is there, -1 on failure (err set). */
static int store_is_absent(keybay_open_options *options, keybay_error **err) {
    keybay_status_info *status = NULL;
    if (keybay_status_get(options, &status, err) != KEYBAY_OK) return -1;
    int absent = strcmp(status->state, "absent") == 0;
    keybay_free_status(status);
    return absent;
}

helper_open_result helper_open_store(const char *program, const char *app_id, int create, keybay_store **store,
                                     char *message, size_t capacity) {
    /* The library's open policy: the store's only method, else the one chosen on the terminal
     * (the default interaction), else authentication-required naming them; a wrong secret typed
     * in is asked again, three asks in all, as keybay-methods does. */
    keybay_open_options options = {.struct_size = sizeof options, .app_id = app_id, .tries = 3};
    keybay_error *err = NULL;
    *store = NULL;
    message[0] = 0;
    if (!create && !store_file_exists(app_id)) {
        int absent = store_is_absent(&options, &err);
        if (absent < 0) return failed(program, app_id, err, message, capacity);
        if (absent) return HELPER_NO_STORE;
    }
    *store = keybay_open(&options, helper_interaction(), &err);
    if (!*store) return failed(program, app_id, err, message, capacity);
    return HELPER_OPENED;
}
