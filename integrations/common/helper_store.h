/*
 * SPDX-License-Identifier: Apache-2.0
 * How the credential helpers reach their store through the C API (keybay.h): the interaction
 * they offer, whether a store exists, opening it, and the one line they say when they cannot.
 */
#ifndef KEYBAY_HELPER_STORE_H
#define KEYBAY_HELPER_STORE_H

#include <stddef.h>
#include <keybay/keybay.h>

typedef enum {
    HELPER_OPENED,     /* *store is open */
    HELPER_NO_STORE,   /* nothing on disk (only when asked not to create one) */
    HELPER_LOCKED,     /* the store needs a secret or an answer this helper cannot get */
    HELPER_FAILED,     /* any other failure */
} helper_open_result;

/* Who the helpers may ask for a store's unlock secret: chosen here alone. The library's
 * terminal-or-pinentry asker (keybay_default_interaction), NULL when there is nowhere to ask or
 * after helper_forbid_asking; NULL never asks. */
const keybay_interaction *helper_interaction(void);

/* If argv[*i] is `--app ID` (taking argv[*i + 1] and advancing *i) or `--app=ID`, sets *app and
 * returns 1; else returns 0. Both helpers choose their store this way. */
int helper_app_argument(int argc, char **argv, int *i, const char **app);

/* From now on helper_interaction is NULL (git's GIT_TERMINAL_PROMPT=0: nothing may wait for a person). */
void helper_forbid_asking(void);

/* Opens the store of `app_id`. With `create` 0 a store that does not exist is HELPER_NO_STORE
 * (its file looked for, then keybay_status_json asked: nothing is created). On HELPER_LOCKED and HELPER_FAILED, `message` holds
 * one line (no newline) that names `program`, the store and what to do; never a secret. */
helper_open_result helper_open_store(const char *program, const char *app_id, int create, keybay_store **store,
                                     char *message, size_t capacity);

/* One line for a failed call on an open store: "<program>: <message> [<code name>]". */
void helper_describe_error(const char *program, keybay_error *err, char *message, size_t capacity);

/* 1 for the codes that mean "a secret or an answer is needed": the store is locked to us. */
int helper_code_is_locked(int code);

#endif
