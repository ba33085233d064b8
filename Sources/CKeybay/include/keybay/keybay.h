/*
 * keybay.h — the Keybay C API, version 1 (libkeybay.so.1, symbol version KEYBAY_1.0).
 * SPDX-License-Identifier: Apache-2.0
 *
 * One encrypted store per application, protected by a platform root and optional unlock
 * methods, the same store the Swift library and the keybay-methods CLI use. This library is
 * the Swift library itself behind C functions; there is no second implementation.
 *
 * Results: every int function returns 0 on success, else a KEYBAY_ERR_* code. When the caller
 * passes `err` (not NULL), a failure also sets *err to a new keybay_error, which the caller
 * frees with keybay_error_free; on success *err is left alone. keybay_open returns NULL on
 * failure. A bad argument (a NULL pointer where one is needed, an invalid key, a struct_size
 * that is too small) is KEYBAY_ERR_INVALID_ARGUMENT, never a crash. A message names the cause
 * and, where there is one, the file; it never holds a secret or a value.
 *
 * Memory: everything handed out is freed by its own function: a value by keybay_free_value
 * (which wipes it first; values are handed out in guarded memory: locked, wiped, small ones
 * sharing a guarded arena; docs/c-api.md), a string by
 * keybay_free_string, a list of keys by keybay_free_strings, an error by keybay_error_free.
 * Strings are UTF-8 and NUL-terminated; what the library is given is copied, never kept, save
 * the interaction given to keybay_open (below).
 *
 * Threading: a keybay_store may be used from several threads at once; each call sees one whole
 * generation of the store, and writes are serialised (between processes too, by the store's
 * lock file). Calls that run an unlock method (keybay_open with a method, keybay_enroll) block
 * while the method waits for the user, calling the interaction's functions on the calling
 * thread. keybay_close must not race other calls on the same handle.
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
#define KEYBAY_API_WARN_UNUSED_RESULT __attribute__((warn_unused_result))
#else
#define KEYBAY_API
#define KEYBAY_API_WARN_UNUSED_RESULT
#endif

/* Error codes: stable numbers; keybay_error_name gives the stable name (the CLI's [code]).
 * KEYBAY_ERR_NOT_FOUND is the C API's own: keybay_get of a key with no record. */
#define KEYBAY_ERR_INVALID_ARGUMENT              1  /* "invalid-argument" */
#define KEYBAY_ERR_INVALID_KEY                   2  /* "invalid-key" */
#define KEYBAY_ERR_VALUE_TOO_LARGE               3  /* "value-too-large" */
#define KEYBAY_ERR_STORE_FULL                    4  /* "store-full" */
#define KEYBAY_ERR_STORE_NOT_FOUND               5  /* "store-not-found" */
#define KEYBAY_ERR_ALREADY_INITIALIZED           6  /* "already-initialized" */
#define KEYBAY_ERR_STATE_CONFLICT                7  /* "state-conflict" */
#define KEYBAY_ERR_PLATFORM_KEY_INVALIDATED      8  /* "platform-key-invalidated" */
#define KEYBAY_ERR_ROOT_UNAVAILABLE              9  /* "root-unavailable" */
#define KEYBAY_ERR_ROLLED_BACK                  10  /* "rolled-back" */
#define KEYBAY_ERR_PROTECTION_MISMATCH          11  /* "protection-mismatch" */
#define KEYBAY_ERR_AUTHENTICATION_REQUIRED      12  /* "authentication-required" */
#define KEYBAY_ERR_KEY_CHANGED                  13  /* "key-changed" */
#define KEYBAY_ERR_MALFORMED                    14  /* "malformed" */
#define KEYBAY_ERR_INTEGRITY                    15  /* "integrity" */
#define KEYBAY_ERR_UNSUPPORTED                  16  /* "unsupported" */
#define KEYBAY_ERR_INSECURE_PERMISSIONS         17  /* "insecure-permissions" */
#define KEYBAY_ERR_IO                           18  /* "io" */
#define KEYBAY_ERR_METHOD_NOT_FOUND             19  /* "method-not-found" */
#define KEYBAY_ERR_WRONG_SECRET                 20  /* "wrong-secret" */
#define KEYBAY_ERR_LOCKED                       21  /* "locked" */
#define KEYBAY_ERR_CANCELLED                    22  /* "cancelled" */
#define KEYBAY_ERR_TIMED_OUT                    23  /* "timed-out" */
#define KEYBAY_ERR_METHOD_UNAVAILABLE           24  /* "method-unavailable" */
#define KEYBAY_ERR_PIN_REQUIRED                 25  /* "pin-required" */
#define KEYBAY_ERR_INTERACTION_REQUIRED         26  /* "interaction-required" */
#define KEYBAY_ERR_PLUGIN_NOT_FOUND             27  /* "plugin-not-found" */
#define KEYBAY_ERR_PLUGIN_REFUSED               28  /* "plugin-refused" */
#define KEYBAY_ERR_PLUGIN_FAILED                29  /* "plugin-failed" */
#define KEYBAY_ERR_CLOSED                       30  /* "closed" */
#define KEYBAY_ERR_NOT_FOUND                    31  /* "not-found" */

#define KEYBAY_INTERACTION_ABI_VERSION 1u

/* Message levels for keybay_interaction.message. */
#define KEYBAY_MESSAGE_INFO    0
#define KEYBAY_MESSAGE_WARNING 1

typedef struct keybay_store keybay_store;     /* an open session */
typedef struct keybay_error keybay_error;     /* set on failure when the caller passes &err; freed by the caller */

/* The error's KEYBAY_ERR_* code; KEYBAY_ERR_INVALID_ARGUMENT for NULL. */
KEYBAY_API int keybay_error_code(const keybay_error *error);
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
KEYBAY_API void keybay_error_free(keybay_error *error);
/* The stable name of a KEYBAY_ERR_* code, or NULL for a number that is none. */
KEYBAY_API const char *keybay_code_name(int code);

typedef struct keybay_interaction {          /* abi_version and struct_size first, like keybay_host */
    uint32_t abi_version, struct_size;
    void *context;
    /* 0 with the answer in buf[0..*len), or KEYBAY_ERR_CANCELLED / KEYBAY_ERR_INTERACTION_REQUIRED.
     * The buffer is guarded memory that is wiped after use; do not keep the answer. */
    int  (*ask_secret)(void *context, const char *prompt, int is_confirmation, char *buf, size_t capacity, size_t *len);
    int  (*confirm)(void *context, const char *text);          /* may be NULL: not available; 1 yes, 0 no */
    void (*message)(void *context, int level, const char *text); /* may be NULL */
    void (*show_secret)(void *context, const char *label, const char *secret);  /* a recovery key; may be NULL */
    int  (*is_cancelled)(void *context);                       /* may be NULL */
} keybay_interaction;

/* An interaction that asks the user where the user is: through the pinentry program that
 * KEYBAY_PINENTRY names (a name on PATH or an absolute path), else on the controlling terminal,
 * else through `pinentry` on PATH (unless KEYBAY_PINENTRY=none); each question is sent where
 * that says at the time it is asked. NULL when the process has neither a terminal nor a
 * pinentry (or KEYBAY_PINENTRY names no program). Static: never free it; every call returns the
 * same struct. Pass it to keybay_open and keybay_enroll, which then use the library's own asker
 * with the whole request (the method's label, the application); its callbacks may also be
 * called directly. It has no show_secret (a recovery key cannot be enrolled through it) and no
 * is_cancelled; messages go to standard error. A cancel in the pinentry is KEYBAY_ERR_CANCELLED. */
KEYBAY_API const keybay_interaction *keybay_default_interaction(void);

typedef struct keybay_open_options {
    uint32_t struct_size;             /* sizeof(keybay_open_options); the library reads only what it covers */
    const char *app_id;               /* required: [A-Za-z0-9][A-Za-z0-9._-]{0,119} */
    const char *root;                 /* NULL: the default (KEYBAY_ROOT, else file-root); "auto" tries the configured list */
    const char *method_id;            /* NULL: the only method, else ask which */
    const char *const *plugin_dirs;   /* NULL-terminated; may be NULL */
    int no_input;                     /* nonzero: never ask, whatever the interaction */
} keybay_open_options;

/* Opens the application's store (created, platform-only, when nothing exists), keeping
 * `interaction` for the store's root until keybay_close (see Interaction above). A protected
 * store opens with method_id, or with its only method; several methods and no method_id is
 * KEYBAY_ERR_AUTHENTICATION_REQUIRED. NULL on failure. */
KEYBAY_API KEYBAY_API_WARN_UNUSED_RESULT
keybay_store *keybay_open(const keybay_open_options *options, const keybay_interaction *interaction /* NULL: never ask */, keybay_error **err);
/* Ends the session and frees the handle (NULL is ignored). */
KEYBAY_API void keybay_close(keybay_store *store);
/* The value of `key` in *value (free with keybay_free_value) and *length; KEYBAY_ERR_NOT_FOUND
 * when there is no record (then *value is NULL). */
KEYBAY_API int  keybay_get(keybay_store *store, const char *key, uint8_t **value, size_t *length, keybay_error **err);
KEYBAY_API void keybay_free_value(uint8_t *value, size_t length);                     /* wipes, then frees */
/* Stores value[0..length) under `key`, durably, before it returns (value may be NULL when length is 0). */
KEYBAY_API int  keybay_set(keybay_store *store, const char *key, const uint8_t *value, size_t length, keybay_error **err);
/* Removes `key`; KEYBAY_ERR_NOT_FOUND when there was no such record. */
KEYBAY_API int  keybay_delete(keybay_store *store, const char *key, keybay_error **err);
/* Every key, in ascending byte order: *keys (free with keybay_free_strings) and *count. */
KEYBAY_API int  keybay_keys(keybay_store *store, char ***keys, size_t *count, keybay_error **err);
KEYBAY_API void keybay_free_strings(char **strings, size_t count);
/* Enrolls an unlock method of `plugin` ("passphrase", "recovery", ...) with its options
 * ("name=value", NULL-terminated, may be NULL), its ceremony asking through `interaction`;
 * a secret the method shows once (a recovery key) goes to interaction->show_secret after the
 * method is stored (without show_secret nothing is stored: KEYBAY_ERR_INTERACTION_REQUIRED).
 * The new method's id in *method_id (free with keybay_free_string), also when the call fails
 * with keybay_error_took_effect set (the method is stored; the error names it). */
KEYBAY_API int  keybay_enroll(keybay_store *store, const char *plugin, const char *label /* may be NULL */,
                   const char *const *options /* "name=value", NULL-terminated, may be NULL */,
                   const keybay_interaction *interaction, char **method_id /* free with keybay_free_string */, keybay_error **err);
/* Removes a method (no credential needed); with none left the store is platform-only. */
KEYBAY_API int  keybay_remove_method(keybay_store *store, const char *method_id, const keybay_interaction *interaction, keybay_error **err);
/* What is on disk, as the JSON object `keybay-methods status --json` prints, in *json
 * (free with keybay_free_string). Creates and unlocks nothing. */
KEYBAY_API int  keybay_status_json(const keybay_open_options *options, char **json, keybay_error **err);
/* Removes the store and its root (every record is lost). Idempotent; needs no credential. */
KEYBAY_API int  keybay_reset(const keybay_open_options *options, keybay_error **err);
KEYBAY_API void keybay_free_string(char *string);
/* The library's release, e.g. "1.1.0". */
KEYBAY_API const char *keybay_version(void);

/* Export and import (age). */
/* keybay_export: with this flag a store the keybay agent holds is exported through it; without,
 * such a store is KEYBAY_ERR_AUTHENTICATION_REQUIRED (open it without the agent, with its method). */
#define KEYBAY_EXPORT_ALLOW_AGENT 1u
/* keybay_import_age: replace records that hold another value; write nothing, only count. */
#define KEYBAY_IMPORT_REPLACE 1u
#define KEYBAY_IMPORT_DRY_RUN 2u
/* What an import did (or would do): set `size` to sizeof(keybay_import_report) before the call. */
typedef struct keybay_import_report {
    size_t size;
    size_t imported;  /* keys that had no record */
    size_t unchanged; /* keys whose record held the same value */
    size_t replaced;  /* keys whose other value was replaced (KEYBAY_IMPORT_REPLACE) */
    size_t conflicts; /* keys whose other value was kept */
} keybay_import_report;
/* The store's records (or the key_count `keys`; 0 for all) as an age file (docs/format.md §13)
 * encrypted to the recipient_count `recipients` (age1... X25519), never plaintext: *file (free
 * with keybay_free_value) and *length. A bad recipient is KEYBAY_ERR_INVALID_ARGUMENT. */
KEYBAY_API int  keybay_export(keybay_store *store, const char *const *recipients, size_t recipient_count,
                   const char *const *keys /* may be NULL when key_count is 0 */, size_t key_count, unsigned flags,
                   uint8_t **file, size_t *length, keybay_error **err);
/* Decrypts file[0..file_length) with the identities of an age identity file (`age-keygen`'s
 * format) and imports its records: new keys imported, equal ones left, others conflicts, kept
 * unless KEYBAY_IMPORT_REPLACE; one durable write, each record read back. Conflicts are not an
 * error: report->conflicts counts them. KEYBAY_ERR_WRONG_SECRET when no identity matches,
 * KEYBAY_ERR_INTEGRITY for a file that does not authenticate, KEYBAY_ERR_MALFORMED for one
 * that is not age v1 or not the record layout; the store is then unchanged. */
KEYBAY_API int  keybay_import_age(keybay_store *store, const uint8_t *file, size_t file_length,
                   const uint8_t *identity, size_t identity_length, unsigned flags,
                   keybay_import_report *report, keybay_error **err);

#ifdef __cplusplus
}
#endif

#endif /* KEYBAY_H */
