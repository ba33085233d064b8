// SPDX-License-Identifier: Apache-2.0
/*
 * keybay_plugin.h — the Keybay plugin ABI, version 1.
 *
 * A plugin is a shared library named libkeybay-<id>.so that exports one symbol,
 * KEYBAY_PLUGIN_ENTRY_SYMBOL, returning a pointer to a static descriptor. The descriptor and
 * the host-services struct both begin with abi_version and struct_size, so either side can
 * grow later: a reader only touches fields that lie within struct_size. A plugin tests a host
 * service with KEYBAY_HOST_HAS(host, field) before calling it.
 *
 * Ownership: every buffer a plugin hands out (keybay_buffer) was allocated by the plugin and is
 * given back to the plugin's free_buffer, which wipes and frees it. Secrets are written into
 * caller-provided fixed-size arrays (the 32-byte method secret) or into plugin buffers that
 * the host copies into guarded memory before calling free_buffer.
 *
 * Threading: the host calls a plugin from one thread at a time. Calls may block (a KDF, a
 * touch); a long call should poll host->is_cancelled.
 *
 * Errors: every operation returns a keybay_status. Before returning an error a plugin may call
 * host->set_error with one line that names the cause (and a path, if there is one) but never a
 * secret.
 */
#ifndef KEYBAY_PLUGIN_H
#define KEYBAY_PLUGIN_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define KEYBAY_PLUGIN_ABI_VERSION 1u
#define KEYBAY_PLUGIN_ENTRY_SYMBOL "keybay_plugin_entry_v1"
#define KEYBAY_METHOD_SECRET_BYTES 32u

/* The ranked error set: when several causes apply, return the lowest-numbered one. */
typedef enum keybay_status {
    KEYBAY_OK = 0,
    KEYBAY_ERR_CANCELLED = 1,             /* the user or the host cancelled */
    KEYBAY_ERR_INTERACTION_UNAVAILABLE = 2, /* a secret or a confirmation is needed but the host cannot ask */
    KEYBAY_ERR_NOT_AVAILABLE = 3,         /* device absent, method unusable on this machine */
    KEYBAY_ERR_PIN_REQUIRED = 4,          /* a PIN is needed and none was given */
    KEYBAY_ERR_LOCKED = 5,                /* PIN blocked, device locked out */
    KEYBAY_ERR_WRONG_SECRET = 6,          /* wrong passphrase or PIN (retries may be left) */
    KEYBAY_ERR_TIMED_OUT = 7,             /* no touch or answer in time */
    KEYBAY_ERR_MALFORMED_PARAMS = 8,      /* stored public parameters do not decode */
    KEYBAY_ERR_UNSUPPORTED = 9,           /* an option, version or request this plugin does not support */
    KEYBAY_ERR_INVALID_OPTION = 10,       /* enroll options malformed or out of range */
    /* root plugins */
    KEYBAY_ERR_ROOT_MISSING = 20,         /* no root exists */
    KEYBAY_ERR_ROOT_MISMATCH = 21,        /* the root does not belong to this provider state */
    KEYBAY_ERR_ROOT_EXISTS = 22,          /* create found a root already: never overwritten */
    KEYBAY_ERR_INTEGRITY = 23,            /* sealed data failed authentication */
    KEYBAY_ERR_INSECURE = 24,             /* wrong owner, mode, or a link where none may be */
    KEYBAY_ERR_IO = 25,                   /* the file system failed */
    KEYBAY_ERR_INTERNAL = 99
} keybay_status;

typedef enum keybay_plugin_kind {
    KEYBAY_KIND_ROOT = 1,
    KEYBAY_KIND_METHOD = 2
} keybay_plugin_kind;

/* Descriptor flags. */
#define KEYBAY_FLAG_INTERACTIVE  0x1u /* unwrap asks the user for something (a passphrase, a touch) */
#define KEYBAY_FLAG_NEEDS_DEVICE 0x2u /* unwrap needs hardware to be present */

/* Kinds of secret a plugin may ask for. */
typedef enum keybay_secret_kind {
    KEYBAY_SECRET_PASSPHRASE = 1,
    KEYBAY_SECRET_PIN = 2
} keybay_secret_kind;

/* Flags for ask_secret. */
#define KEYBAY_ASK_NEW 0x1u /* a new secret being chosen: the host asks twice and compares */

typedef enum keybay_message_level {
    KEYBAY_MESSAGE_INFO = 1,     /* "touch your security key" */
    KEYBAY_MESSAGE_PROGRESS = 2, /* "calibrating Argon2id: 3/8" */
    KEYBAY_MESSAGE_WARNING = 3
} keybay_message_level;

typedef enum keybay_log_level {
    KEYBAY_LOG_DEBUG = 1,
    KEYBAY_LOG_INFO = 2,
    KEYBAY_LOG_ERROR = 3
} keybay_log_level;

/* A buffer allocated by the plugin and released with the same plugin's free_buffer. */
typedef struct keybay_buffer {
    uint8_t *data;
    size_t length;
} keybay_buffer;

/* An enroll option as given by the user (--opt name=value). UTF-8, NUL-terminated. */
typedef struct keybay_option {
    const char *name;
    const char *value;
} keybay_option;

/* An option a plugin accepts, for `plugins` and `enroll --help`. */
typedef struct keybay_option_spec {
    const char *name;
    const char *help;
} keybay_option_spec;

/*
 * Services the host offers. Every service may answer KEYBAY_ERR_INTERACTION_UNAVAILABLE
 * (non-interactive runs) or KEYBAY_ERR_CANCELLED; a plugin passes that status on.
 */
typedef struct keybay_host {
    uint32_t abi_version;  /* KEYBAY_PLUGIN_ABI_VERSION */
    uint32_t struct_size;  /* sizeof(keybay_host) as the host knows it */
    void *context;         /* passed back to every service */

    /* Asks for a secret of `kind`. `prompt` is one line of UTF-8; `retries_left` is -1 when
       unknown. The host writes at most `capacity` bytes to `out` and their count to
       `*out_length`; the plugin wipes `out` after use. */
    keybay_status (*ask_secret)(void *context, keybay_secret_kind kind, uint32_t flags,
                                const char *prompt, int32_t retries_left,
                                uint8_t *out, size_t capacity, size_t *out_length);
    /* Tells the user something (not a question). */
    keybay_status (*message)(void *context, keybay_message_level level, const char *text);
    /* Asks a yes/no question; `*answer` is 1 for yes. */
    keybay_status (*confirm)(void *context, const char *question, int *answer);
    /* Returns 1 if the operation should stop (a long KDF polls this). */
    int (*is_cancelled)(void *context);
    /* Diagnostic log; never secrets. */
    void (*log)(void *context, keybay_log_level level, const char *text);
    /* Records one line explaining the error about to be returned. */
    void (*set_error)(void *context, const char *text);
} keybay_host;

/* True if `host` is non-NULL, its struct_size covers `field` (an older host may lack the newer
   services) and the service is set. */
#define KEYBAY_HOST_HAS(host, field)                                                         \
    ((host) != NULL &&                                                                       \
     (size_t)(host)->struct_size >= offsetof(keybay_host, field) + sizeof((host)->field) &&  \
     (host)->field != NULL)

/* What a root plugin is told about the store it serves. */
typedef struct keybay_root_context {
    uint32_t struct_size;
    const char *application_id;     /* [A-Za-z0-9][A-Za-z0-9._-]{0,119} */
    const char *state_home;         /* absolute; the root lives below it, e.g. <state_home>/keybay/<app>/ */
    const uint8_t *storage_domain;  /* 32 bytes */
} keybay_root_context;

typedef struct keybay_plugin {
    uint32_t abi_version;   /* KEYBAY_PLUGIN_ABI_VERSION */
    uint32_t struct_size;   /* sizeof(keybay_plugin) */
    const char *id;         /* [a-z0-9][a-z0-9._-]{0,63}; reverse-DNS for third parties; must match the file name */
    const char *name;       /* display name */
    const char *version;    /* plugin version, free text */
    uint32_t kind;          /* keybay_plugin_kind */
    uint32_t flags;         /* KEYBAY_FLAG_* */
    const keybay_option_spec *options; /* accepted enroll options */
    size_t option_count;

    void (*free_buffer)(keybay_buffer *buffer); /* wipe and free; sets data to NULL */

    /* ---- method operations (kind == KEYBAY_KIND_METHOD; NULL otherwise) ---- */

    /* Is the method usable here? Never prompts, never blocks for long. KEYBAY_OK or
       KEYBAY_ERR_NOT_AVAILABLE (with set_error saying why). */
    keybay_status (*probe)(const keybay_host *host);
    /* Enrolls: runs the ceremony, returns public parameters (stored in the store, readable by
       anyone with the root) and the 32-byte method secret M. */
    keybay_status (*enroll)(const keybay_host *host, const keybay_option *options, size_t option_count,
                            keybay_buffer *params_out, uint8_t secret_out[KEYBAY_METHOD_SECRET_BYTES]);
    /* Unwrap: runs the ceremony for these parameters and returns M (opening a store). */
    keybay_status (*unwrap)(const keybay_host *host, const uint8_t *params, size_t params_length,
                            uint8_t secret_out[KEYBAY_METHOD_SECRET_BYTES]);
    /* Verify: the same ceremony when the user only checks a credential (`keybay-methods verify`);
       may be the same function as unwrap. The host checks M against the stored public key. */
    keybay_status (*verify)(const keybay_host *host, const uint8_t *params, size_t params_length,
                            uint8_t secret_out[KEYBAY_METHOD_SECRET_BYTES]);
    /* One line of UTF-8 describing the parameters for listings ("Argon2id 64 MiB, t=3, p=4"). */
    keybay_status (*describe)(const uint8_t *params, size_t params_length, keybay_buffer *text_out);

    /* ---- root operations (kind == KEYBAY_KIND_ROOT; NULL otherwise) ---- */

    keybay_status (*root_exists)(const keybay_host *host, const keybay_root_context *context, int *exists);
    /* Creates the root (never overwrites: KEYBAY_ERR_ROOT_EXISTS) and returns the provider state
       (at most 64 bytes) that the store keeps in its bootstrap. */
    keybay_status (*root_create)(const keybay_host *host, const keybay_root_context *context,
                                 keybay_buffer *provider_state_out);
    /* Seals `plaintext` bound to `aad`, after checking that `provider_state` names this root. */
    keybay_status (*root_seal)(const keybay_host *host, const keybay_root_context *context,
                               const uint8_t *provider_state, size_t provider_state_length,
                               const uint8_t *plaintext, size_t plaintext_length,
                               const uint8_t *aad, size_t aad_length, keybay_buffer *sealed_out);
    /* Opens what root_seal made. ROOT_MISSING / ROOT_MISMATCH before any decryption; INTEGRITY
       when authentication fails. The plaintext is secret: allocate it in locked memory. */
    keybay_status (*root_open)(const keybay_host *host, const keybay_root_context *context,
                               const uint8_t *provider_state, size_t provider_state_length,
                               const uint8_t *sealed, size_t sealed_length,
                               const uint8_t *aad, size_t aad_length, keybay_buffer *plaintext_out);
    /* Where the root lives, for status ("/home/u/.local/state/keybay/app/file-root.key"). */
    keybay_status (*root_location)(const keybay_root_context *context, keybay_buffer *text_out);
    /* Removes the root; idempotent. */
    keybay_status (*root_reset)(const keybay_host *host, const keybay_root_context *context);
} keybay_plugin;

/* The one exported entry point. */
typedef const keybay_plugin *(*keybay_plugin_entry_fn)(void);
const keybay_plugin *keybay_plugin_entry_v1(void);

#ifdef __cplusplus
}
#endif

#endif /* KEYBAY_PLUGIN_H */
