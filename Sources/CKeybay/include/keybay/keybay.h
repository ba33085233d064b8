/*
 * keybay.h — the Keybay C API, version 1 (libkeybay.so.1, symbol versions KEYBAY_1.0 and KEYBAY_1.2).
 * SPDX-License-Identifier: Apache-2.0
 *
 * One encrypted store per application, protected by a platform root and optional unlock
 * methods, the same store the Swift library and the keybay-methods CLI use. This library is
 * the Swift library itself behind C functions; there is no second implementation.
 *
 * Results: every keybay_code function returns KEYBAY_OK (0) on success, else a KEYBAY_ERR_*
 * code, and warns when its result is unused (KEYBAY_WARN_UNUSED_RESULT). When the caller
 * passes `err` (not NULL), a failure also sets *err to a new keybay_error, which the caller
 * frees with keybay_error_free; on success *err is left alone. keybay_open returns NULL on
 * failure. A bad argument (a NULL pointer where one is needed, an invalid key, a struct_size
 * that is too small) is KEYBAY_ERR_INVALID_ARGUMENT, never a crash. A message names the cause
 * and, where there is one, the file; it never holds a secret or a value.
 *
 * Memory: everything handed out is freed by its own function: a value by keybay_free_value
 * (which wipes it first; values are handed out in guarded memory: locked, wiped, small ones
 * sharing a guarded arena; docs/c-api.md), a string by
 * keybay_free_string, a list of keys by keybay_free_strings, a status by keybay_free_status, an
 * error by keybay_error_free (with the methods keybay_error_methods lists). What a callback is
 * given lives until it returns. Static, never freed: keybay_version(), keybay_code_name() and
 * keybay_default_interaction().
 * Strings are UTF-8 and NUL-terminated; what the library is given is copied, never kept, save
 * the interaction given to keybay_open (below).
 *
 * Threading: a keybay_store may be used from several threads at once; each call sees one whole
 * generation of the store, and writes are serialised (between processes too, by the store's
 * lock file). Calls that run an unlock method (keybay_open of a protected store, keybay_enroll,
 * keybay_verify) block while the method waits for the user, calling the interaction's
 * functions on the calling thread. keybay_close must not race other calls on the same handle.
 *
 * fork: a child may use the library after fork (docs/c-api.md, "fork"), while no other thread
 * of the parent is inside a keybay_ call; it starts plugin helpers of its own. A handle opened
 * before the fork may be used in the child too; each process keybay_closes its own copy.
 *
 * Interaction: who an unlock method may ask (a passphrase, a PIN, a confirmation). NULL never
 * asks: what needs the user fails with KEYBAY_ERR_INTERACTION_REQUIRED. The interaction given
 * to keybay_open is kept by the store: its root may ask through it later (a locked keyring's
 * confirm, when another process gave the store a new key), on whichever thread uses the handle;
 * it and its context must stay valid until keybay_close. The struct begins with
 * abi_version (KEYBAY_INTERACTION_ABI_VERSION) and struct_size (sizeof the caller's struct),
 * so it can grow: the library reads only the fields struct_size covers.
 */
#ifndef KEYBAY_H
#define KEYBAY_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__) || defined(__clang__)
#define KEYBAY_API __attribute__((visibility("default")))
#define KEYBAY_WARN_UNUSED_RESULT __attribute__((warn_unused_result))
#else
#define KEYBAY_API
#define KEYBAY_WARN_UNUSED_RESULT
#endif
/* The name of 1.0 and 1.1, kept. */
#define KEYBAY_API_WARN_UNUSED_RESULT KEYBAY_WARN_UNUSED_RESULT

/* Results and error codes: stable numbers; keybay_error_name gives the stable name (the CLI's
 * [code]). KEYBAY_ERR_NOT_FOUND is the C API's own: keybay_get of a key with no record. The
 * values never change; a new code takes the next number. */
typedef enum keybay_code {
    KEYBAY_OK                               =  0,
    KEYBAY_ERR_INVALID_ARGUMENT             =  1,  /* "invalid-argument" */
    KEYBAY_ERR_INVALID_KEY                  =  2,  /* "invalid-key" */
    KEYBAY_ERR_VALUE_TOO_LARGE              =  3,  /* "value-too-large" */
    KEYBAY_ERR_STORE_FULL                   =  4,  /* "store-full" */
    KEYBAY_ERR_STORE_NOT_FOUND              =  5,  /* "store-not-found" */
    KEYBAY_ERR_ALREADY_INITIALIZED          =  6,  /* "already-initialized" */
    KEYBAY_ERR_STATE_CONFLICT               =  7,  /* "state-conflict" */
    KEYBAY_ERR_PLATFORM_KEY_INVALIDATED     =  8,  /* "platform-key-invalidated" */
    KEYBAY_ERR_ROOT_UNAVAILABLE             =  9,  /* "root-unavailable" */
    KEYBAY_ERR_ROLLED_BACK                  = 10,  /* "rolled-back" */
    KEYBAY_ERR_PROTECTION_MISMATCH          = 11,  /* "protection-mismatch" */
    KEYBAY_ERR_AUTHENTICATION_REQUIRED      = 12,  /* "authentication-required" */
    KEYBAY_ERR_KEY_CHANGED                  = 13,  /* "key-changed" */
    KEYBAY_ERR_MALFORMED                    = 14,  /* "malformed" */
    KEYBAY_ERR_INTEGRITY                    = 15,  /* "integrity" */
    KEYBAY_ERR_UNSUPPORTED                  = 16,  /* "unsupported" */
    KEYBAY_ERR_INSECURE_PERMISSIONS         = 17,  /* "insecure-permissions" */
    KEYBAY_ERR_IO                           = 18,  /* "io" */
    KEYBAY_ERR_METHOD_NOT_FOUND             = 19,  /* "method-not-found" */
    KEYBAY_ERR_WRONG_SECRET                 = 20,  /* "wrong-secret" */
    KEYBAY_ERR_LOCKED                       = 21,  /* "locked" */
    KEYBAY_ERR_CANCELLED                    = 22,  /* "cancelled" */
    KEYBAY_ERR_TIMED_OUT                    = 23,  /* "timed-out" */
    KEYBAY_ERR_METHOD_UNAVAILABLE           = 24,  /* "method-unavailable" */
    KEYBAY_ERR_PIN_REQUIRED                 = 25,  /* "pin-required" */
    KEYBAY_ERR_INTERACTION_REQUIRED         = 26,  /* "interaction-required" */
    KEYBAY_ERR_PLUGIN_NOT_FOUND             = 27,  /* "plugin-not-found" */
    KEYBAY_ERR_PLUGIN_REFUSED               = 28,  /* "plugin-refused" */
    KEYBAY_ERR_PLUGIN_FAILED                = 29,  /* "plugin-failed" */
    KEYBAY_ERR_CLOSED                       = 30,  /* "closed" */
    KEYBAY_ERR_NOT_FOUND                    = 31   /* "not-found" */
} keybay_code;

#define KEYBAY_INTERACTION_ABI_VERSION 1u

/* Message levels for keybay_interaction.message. */
#define KEYBAY_MESSAGE_INFO    0
#define KEYBAY_MESSAGE_WARNING 1

typedef struct keybay_store keybay_store;     /* an open session */
typedef struct keybay_error keybay_error;     /* set on failure when the caller passes &err; freed by the caller */

/* One enrolled unlock method, as keybay_status_get, choose_method and keybay_error_methods list
 * it. Its strings belong to whoever handed the struct out (the status, the error, the call). */
typedef struct keybay_method_info {
    uint32_t struct_size;             /* sizeof(keybay_method_info) of the library that made it */
    const char *id;                   /* 32 lowercase hex characters: what method_id takes */
    const char *plugin;               /* "passphrase", "recovery", "fido2", ... */
    const char *label;                /* the label given at enrollment (the plugin id unless one was) */
    int needs_device;                 /* 1: unlocking needs hardware present (a security key, a
                                         card); 0: it does not; -1: its plugin could not be read */
} keybay_method_info;

/* The error's code; KEYBAY_ERR_INVALID_ARGUMENT for NULL. */
KEYBAY_API keybay_code keybay_error_code(const keybay_error *error);
/* Its stable name ("wrong-secret"); valid until keybay_error_free. */
KEYBAY_API const char *keybay_error_name(const keybay_error *error);
/* One line naming the cause (and the file); valid until keybay_error_free. */
KEYBAY_API const char *keybay_error_message(const keybay_error *error);
/* The file the error is about, the plugin and the method, where there is one; else NULL.
 * Valid until keybay_error_free. */
KEYBAY_API const char *keybay_error_path(const keybay_error *error);
KEYBAY_API const char *keybay_error_plugin_id(const keybay_error *error);
KEYBAY_API const char *keybay_error_method_id(const keybay_error *error);
/* Which cause of several under one code it is, as a stable token of [a-z0-9-] ("pin-blocked",
 * "not-owner"; each plugin's documentation lists its own), or NULL when none was named. Valid
 * until keybay_error_free. */
KEYBAY_API const char *keybay_error_reason(const keybay_error *error);
/* The PIN or retry attempts the device says are left; -1 when unknown (and for NULL). */
KEYBAY_API int keybay_error_tries_left(const keybay_error *error);
/* 1 when the failed call's change was made all the same (written, not confirmed durable). */
KEYBAY_API int keybay_error_took_effect(const keybay_error *error);
/* The store's methods when the error is that one must be chosen (KEYBAY_ERR_AUTHENTICATION_REQUIRED
 * from keybay_open with no method_id and no choose_method): an array of *count, valid until
 * keybay_error_free; NULL with *count 0 otherwise (count may be NULL). */
KEYBAY_API const keybay_method_info *keybay_error_methods(const keybay_error *error, size_t *count);
KEYBAY_API void keybay_error_free(keybay_error *error);
/* The stable name of a code, or NULL for a number that is none. */
KEYBAY_API const char *keybay_code_name(int code);

/* What keybay_ask_request.kind asks for. */
typedef enum keybay_ask_kind {
    KEYBAY_ASK_SECRET             = 0,  /* the secret of an enrolled method, to unlock or verify it */
    KEYBAY_ASK_NEW_SECRET         = 1,  /* a new secret being chosen (an enrollment) */
    KEYBAY_ASK_CONFIRM_NEW_SECRET = 2   /* the new secret again; the library compares the two */
} keybay_ask_kind;

/* One question for a secret, as keybay_interaction.ask gets it. Its strings live until ask
 * returns; NULL where there is nothing to say. */
typedef struct keybay_ask_request {
    uint32_t struct_size;             /* sizeof(keybay_ask_request) of the library: a host reads
                                         only the fields it covers */
    keybay_ask_kind kind;
    const char *secret_kind;          /* "passphrase", "PIN", "recovery key" */
    const char *prompt;               /* the plugin's own line; may be "" (then name secret_kind and label) */
    const char *method_id;            /* the enrolled method it unlocks; NULL when enrolling, for a root */
    const char *plugin_id;            /* the plugin that asks */
    const char *label;                /* the method's label (the enrolled one, or the one being given) */
    const char *app_id;               /* the application whose store it opens */
    int tries_left;                   /* asks left, this one included: the device's count, else on a retry
                                         the open's tries left; -1 unknown */
    int is_retry;                     /* 1: the last answer was wrong, say so */
} keybay_ask_request;

typedef struct keybay_interaction {          /* abi_version and struct_size first, like keybay_host */
    uint32_t abi_version, struct_size;
    void *context;
    /* 0 with the answer in buf[0..*len), or KEYBAY_ERR_CANCELLED / KEYBAY_ERR_INTERACTION_REQUIRED.
     * The buffer is guarded memory that is wiped after use; do not keep the answer. Not called
     * when `ask` is given (below); then it may be NULL. */
    int  (*ask_secret)(void *context, const char *prompt, int is_confirmation, char *buf, size_t capacity, size_t *len);
    int  (*confirm)(void *context, const char *text);          /* may be NULL: not available; 1 yes, 0 no */
    void (*message)(void *context, int level, const char *text); /* may be NULL */
    /* A secret to keep, called once the method is stored; `label` names what it is ("recovery
     * key"), `secret` is its text (NUL-terminated, guarded memory wiped after the call). May be
     * NULL: an enrollment that shows a secret then stores nothing (see keybay_enroll). */
    void (*show_secret)(void *context, const char *label, const char *secret);
    int  (*is_cancelled)(void *context);                       /* may be NULL */
    /* Since 1.2; the library reads them only when struct_size covers them (else NULL). */
    /* Picks the method that opens a store with several, when keybay_open has no method_id: 0
     * with *chosen < count, or KEYBAY_ERR_CANCELLED / KEYBAY_ERR_INTERACTION_REQUIRED. Called at
     * most once per open, on the calling thread; `methods` lives until it returns. May be NULL:
     * such an open fails with KEYBAY_ERR_AUTHENTICATION_REQUIRED (keybay_error_methods lists them). */
    int  (*choose_method)(void *context, const keybay_method_info *methods, size_t count, size_t *chosen);
    /* ask_secret with the whole request (the method, its label, the application, tries left);
     * preferred over ask_secret when given. Returns as ask_secret does. May be NULL. */
    int  (*ask)(void *context, const keybay_ask_request *request, char *buf, size_t capacity, size_t *len);
} keybay_interaction;

/* An interaction that asks the user where the user is: through the pinentry program that
 * KEYBAY_PINENTRY names (a name on PATH or an absolute path), else on the controlling terminal,
 * else through `pinentry` on PATH (unless KEYBAY_PINENTRY=none); each question is sent where
 * that says at the time it is asked. NULL when the process has neither a terminal nor a
 * pinentry (or KEYBAY_PINENTRY names no program). Static: never free it; every call returns the
 * same struct. Pass it to keybay_open and keybay_enroll, which then use the library's own asker
 * with the whole request (the method's label, the application) and choose a method on the
 * terminal; its callbacks may also be called directly. It has no show_secret (a recovery key
 * cannot be enrolled through it) and no is_cancelled; messages go to standard error. A cancel in
 * the pinentry is KEYBAY_ERR_CANCELLED. */
KEYBAY_API const keybay_interaction *keybay_default_interaction(void);

typedef struct keybay_open_options {
    uint32_t struct_size;             /* sizeof(keybay_open_options); the library reads only what it covers */
    const char *app_id;               /* required: [A-Za-z0-9][A-Za-z0-9._-]{0,119} */
    const char *root;                 /* NULL: the default (KEYBAY_ROOT, else file-root); "auto" tries the configured list */
    const char *method_id;            /* NULL: the store's only method, else the interaction's choose_method */
    const char *const *plugin_dirs;   /* NULL-terminated; may be NULL */
    int no_input;                     /* nonzero: never ask, whatever the interaction */
    /* Since 1.2. */
    int tries;                        /* asks in all for a secret the method refuses as wrong (0 or
                                         1: once; at most 10); later asks have is_retry set */
} keybay_open_options;

/* Opens the application's store (created, platform-only, when nothing exists), keeping
 * `interaction` for the store's root until keybay_close (see Interaction above). A protected
 * store opens with method_id; else with its only method; else with the one choose_method picks;
 * else it fails with KEYBAY_ERR_AUTHENTICATION_REQUIRED, its error listing the methods
 * (keybay_error_methods). Methods are never tried in turn. Another process changing the store's
 * methods meanwhile makes the open start again (twice at most, with the same method). NULL on
 * failure. */
KEYBAY_API KEYBAY_WARN_UNUSED_RESULT
keybay_store *keybay_open(const keybay_open_options *options, const keybay_interaction *interaction /* NULL: never ask */, keybay_error **err);
/* Ends the session and frees the handle (NULL is ignored). */
KEYBAY_API void keybay_close(keybay_store *store);
/* The value of `key` in *value (free with keybay_free_value) and *length; KEYBAY_ERR_NOT_FOUND
 * when there is no record (then *value is NULL). */
KEYBAY_API KEYBAY_WARN_UNUSED_RESULT
keybay_code keybay_get(keybay_store *store, const char *key, uint8_t **value, size_t *length, keybay_error **err);
KEYBAY_API void keybay_free_value(uint8_t *value, size_t length);                     /* wipes, then frees */
/* The values of keys[0..count) from one generation of the store: values[i] (free each with
 * keybay_free_value) and lengths[i], or NULL and 0 for a key with no record. The caller's two
 * arrays hold `count` entries; on failure every values[i] is NULL. A key given twice gets two
 * copies. Since 1.2. */
KEYBAY_API KEYBAY_WARN_UNUSED_RESULT
keybay_code keybay_get_many(keybay_store *store, const char *const *keys, size_t count, uint8_t **values, size_t *lengths, keybay_error **err);
/* *found is 1 when `key` has a record, else 0. Reads no value. Since 1.2. */
KEYBAY_API KEYBAY_WARN_UNUSED_RESULT
keybay_code keybay_contains(keybay_store *store, const char *key, int *found, keybay_error **err);
/* Stores value[0..length) under `key`, durably, before it returns (value may be NULL when length is 0). */
KEYBAY_API KEYBAY_WARN_UNUSED_RESULT
keybay_code keybay_set(keybay_store *store, const char *key, const uint8_t *value, size_t length, keybay_error **err);
/* Removes `key`; KEYBAY_ERR_NOT_FOUND when there was no such record. */
KEYBAY_API KEYBAY_WARN_UNUSED_RESULT
keybay_code keybay_delete(keybay_store *store, const char *key, keybay_error **err);
/* Removes every record in one write; the store, its root and its methods stay. Since 1.2. */
KEYBAY_API KEYBAY_WARN_UNUSED_RESULT
keybay_code keybay_clear_all(keybay_store *store, keybay_error **err);
/* Every key, in ascending byte order: *keys (free with keybay_free_strings) and *count. */
KEYBAY_API KEYBAY_WARN_UNUSED_RESULT
keybay_code keybay_keys(keybay_store *store, char ***keys, size_t *count, keybay_error **err);
KEYBAY_API void keybay_free_strings(char **strings, size_t count);
/* Enrolls an unlock method of `plugin` ("passphrase", "recovery", ...) with its options
 * ("name=value", NULL-terminated, may be NULL), its ceremony asking through `interaction`.
 * A secret the method shows once (a recovery key) goes to interaction->show_secret after the
 * method is stored, the library's one order: commit, then show; a host without show_secret gets
 * nothing stored (KEYBAY_ERR_INTERACTION_REQUIRED). The new method's id in *method_id (free
 * with keybay_free_string), also when the call fails with keybay_error_took_effect set (the
 * method is stored; the error names it). */
KEYBAY_API KEYBAY_WARN_UNUSED_RESULT
keybay_code keybay_enroll(keybay_store *store, const char *plugin, const char *label /* may be NULL */,
                          const char *const *options /* "name=value", NULL-terminated, may be NULL */,
                          const keybay_interaction *interaction, char **method_id /* free with keybay_free_string */, keybay_error **err);
/* Removes a method (no credential needed); with none left the store is platform-only. */
KEYBAY_API KEYBAY_WARN_UNUSED_RESULT
keybay_code keybay_remove_method(keybay_store *store, const char *method_id, const keybay_interaction *interaction, keybay_error **err);
/* Runs method_id's ceremony through `interaction` (NULL: the one given to keybay_open) and
 * checks the secret against the stored method; changes nothing. KEYBAY_ERR_WRONG_SECRET when it
 * does not match. Since 1.2. */
KEYBAY_API KEYBAY_WARN_UNUSED_RESULT
keybay_code keybay_verify(keybay_store *store, const char *method_id, const keybay_interaction *interaction, keybay_error **err);
/* Hands the open store to the keybay agent for `seconds` (0: until keybay_lock or the agent
 * ends), as `keybay-methods unlock --for` does: other processes of this user then read it
 * without asking. The agent is started (keybay-methods beside the library, `agent`) when none
 * answers. The store must be protected and opened by this handle itself, not through the agent.
 * *until (may be NULL): when the agent forgets it, in Unix seconds; 0 for never. Since 1.2. */
KEYBAY_API KEYBAY_WARN_UNUSED_RESULT
keybay_code keybay_unlock(keybay_store *store, uint32_t seconds, int64_t *until, keybay_error **err);
/* Makes the agent forget the store of `options` (nothing asked, nothing opened). *forgotten
 * (may be NULL): 1 when it held the store, 0 when it did not or no agent answers. Since 1.2. */
KEYBAY_API KEYBAY_WARN_UNUSED_RESULT
keybay_code keybay_lock(const keybay_open_options *options, int *forgotten, keybay_error **err);

/* What is on disk (keybay_status_get). Every string and the methods array belong to the status
 * until keybay_free_status. */
typedef struct keybay_status_info {
    uint32_t struct_size;             /* sizeof(keybay_status_info) of the library */
    const char *state;                /* "absent", "platform-only", "protected", "root-only",
                                         "store-only": as `keybay-methods status --json` */
    const char *store_path;
    const char *root;                 /* the root plugin's id */
    const char *root_location;        /* where the root keeps its key, as the root says */
    const keybay_method_info *methods;
    size_t method_count;
    int unlocked;                     /* 1 when the agent holds the store unlocked */
    int64_t unlocked_until;           /* when the agent forgets it, in Unix seconds; 0: never or not unlocked */
} keybay_status_info;

/* What is on disk, without creating or unlocking anything: *status (free with
 * keybay_free_status). Each method's needs_device comes from its plugin, loaded but not run.
 * Since 1.2. */
KEYBAY_API KEYBAY_WARN_UNUSED_RESULT
keybay_code keybay_status_get(const keybay_open_options *options, keybay_status_info **status, keybay_error **err);
KEYBAY_API void keybay_free_status(keybay_status_info *status);
/* What is on disk, as the JSON object `keybay-methods status --json` prints, in *json
 * (free with keybay_free_string). Creates and unlocks nothing. */
KEYBAY_API KEYBAY_WARN_UNUSED_RESULT
keybay_code keybay_status_json(const keybay_open_options *options, char **json, keybay_error **err);
/* Removes the store and its root (every record is lost). Idempotent; needs no credential. */
KEYBAY_API KEYBAY_WARN_UNUSED_RESULT
keybay_code keybay_reset(const keybay_open_options *options, keybay_error **err);
KEYBAY_API void keybay_free_string(char *string);
/* The library's release, e.g. "1.2.0". */
KEYBAY_API const char *keybay_version(void);

/* Export and import (age), since 1.2. */
/* keybay_export: with this flag a store the keybay agent holds is exported through it; without,
 * such a store is KEYBAY_ERR_AUTHENTICATION_REQUIRED (open it without the agent, with its method). */
#define KEYBAY_EXPORT_ALLOW_AGENT 1u
/* keybay_import_age: replace records that hold another value; write nothing, only count. */
#define KEYBAY_IMPORT_REPLACE 1u
#define KEYBAY_IMPORT_DRY_RUN 2u
/* What an import did (or would do): set `struct_size` to sizeof(keybay_import_report) before
 * the call. */
typedef struct keybay_import_report {
    uint32_t struct_size;
    size_t imported;  /* keys that had no record */
    size_t unchanged; /* keys whose record held the same value */
    size_t replaced;  /* keys whose other value was replaced (KEYBAY_IMPORT_REPLACE) */
    size_t conflicts; /* keys whose other value was kept */
} keybay_import_report;
/* The store's records (or the key_count `keys`; 0 for all) as an age file (docs/format.md §13)
 * encrypted to the recipient_count `recipients` (age1... X25519), never plaintext: *file (free
 * with keybay_free_value) and *length. A bad recipient is KEYBAY_ERR_INVALID_ARGUMENT. */
KEYBAY_API KEYBAY_WARN_UNUSED_RESULT
keybay_code keybay_export(keybay_store *store, const char *const *recipients, size_t recipient_count,
                          const char *const *keys /* may be NULL when key_count is 0 */, size_t key_count, unsigned flags,
                          uint8_t **file, size_t *length, keybay_error **err);
/* Decrypts file[0..file_length) with the identities of an age identity file (`age-keygen`'s
 * format) and imports its records: new keys imported, equal ones left, others conflicts, kept
 * unless KEYBAY_IMPORT_REPLACE; one durable write, each record read back. Conflicts are not an
 * error: report->conflicts counts them. KEYBAY_ERR_WRONG_SECRET when no identity matches,
 * KEYBAY_ERR_INTEGRITY for a file that does not authenticate, KEYBAY_ERR_MALFORMED for one
 * that is not age v1 or not the record layout; the store is then unchanged. */
KEYBAY_API KEYBAY_WARN_UNUSED_RESULT
keybay_code keybay_import_age(keybay_store *store, const uint8_t *file, size_t file_length,
                              const uint8_t *identity, size_t identity_length, unsigned flags,
                              keybay_import_report *report, keybay_error **err);
/* The TPM root's recovery, since 1.2. */
/* Seals the store's tpm2 root again to the PCR values now in effect, opened with the root's
 * recovery key (made by `init --opt recovery=yes`): `recovery_key` is what the user typed,
 * `length` bytes (spaces, dashes and case do not matter), never kept. One atomic step under the
 * store's lock; records and methods are untouched. Fails with KEYBAY_ERR_WRONG_SECRET (reason
 * "wrong-recovery-key" with the tries left, counted by the TPM's lockout, or a typo's reason),
 * KEYBAY_ERR_LOCKED, KEYBAY_ERR_UNSUPPORTED (reason "no-root-recovery"). */
KEYBAY_API KEYBAY_WARN_UNUSED_RESULT
keybay_code keybay_root_reseal(const keybay_open_options *options, const uint8_t *recovery_key, size_t length, keybay_error **err);

#ifdef __cplusplus
}
#endif

#endif /* KEYBAY_H */
