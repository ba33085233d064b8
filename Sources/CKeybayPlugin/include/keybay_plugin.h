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
 * Threading: the host never runs two calls into one plugin at once (free_buffer and
 * root_location included), though successive calls may come from different threads. Calls may
 * block (a KDF, a touch); a long call should poll host->is_cancelled.
 *
 * Errors: every operation returns a keybay_status. Before returning an error it finds itself, a
 * plugin calls host->set_error (after KEYBAY_HOST_HAS) with one line that names the cause (and a
 * path, if there is one) but never a secret; without one the host can only show a generic text
 * for the status. A status passed on unchanged from a host service needs no line. Where a program
 * may need to tell causes apart, the plugin also calls host->set_error_detail (a stable reason
 * token and, for a PIN, the tries left).
 *
 * Growth within version 1: the KEYBAY_PLUGIN_FIELDS_ADDED_IN_V1 fields after root_reset were
 * added later. A host reads one only when the descriptor's struct_size covers it, so a plugin
 * built against an older header (which ends at root_reset) still loads; a NULL field means "not
 * offered". Where a newer form of an operation exists (describe_with_host, root_location_with_host,
 * root_open_with_floor, root_create_with_options), a plugin may set the newer form alone.
 *
 * Attributes: the entry point is declared KEYBAY_EXPORT (visible from a library built with
 * -fvisibility=hidden); each operation and service is declared with KEYBAY_NONNULL, naming the
 * pointer arguments its caller never passes as NULL (a data pointer whose length may be 0 may be
 * NULL, and so may an option list of count 0), and every one that returns a keybay_status with
 * KEYBAY_WARN_UNUSED_RESULT. With compilers other than GCC and Clang they expand to nothing.
 */
#ifndef KEYBAY_PLUGIN_H
#define KEYBAY_PLUGIN_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__) || defined(__clang__)
#define KEYBAY_EXPORT __attribute__((visibility("default")))
#define KEYBAY_NONNULL(...) __attribute__((nonnull(__VA_ARGS__)))
#define KEYBAY_WARN_UNUSED_RESULT __attribute__((warn_unused_result))
#else
#define KEYBAY_EXPORT
#define KEYBAY_NONNULL(...)
#define KEYBAY_WARN_UNUSED_RESULT
#endif

#define KEYBAY_PLUGIN_ABI_VERSION 1u
#define KEYBAY_PLUGIN_ENTRY_SYMBOL "keybay_plugin_entry_v1"
#define KEYBAY_METHOD_SECRET_BYTES 32u

/* The ranked error set: when several causes apply, return the lowest-numbered one. */
typedef enum keybay_status {
    KEYBAY_OK = 0,
    KEYBAY_ERR_CANCELLED = 1,             /* the user or the host cancelled */
    KEYBAY_ERR_INTERACTION_UNAVAILABLE = 2, /* a secret or a confirmation is needed but the host cannot ask */
    KEYBAY_ERR_NOT_AVAILABLE = 3,         /* device or file absent (at unlock: not the user's typo), method unusable here */
    KEYBAY_ERR_PIN_REQUIRED = 4,          /* a PIN is needed and none was given */
    KEYBAY_ERR_LOCKED = 5,                /* PIN blocked, device locked out */
    KEYBAY_ERR_WRONG_SECRET = 6,          /* wrong passphrase or PIN (retries may be left) */
    KEYBAY_ERR_TIMED_OUT = 7,             /* no touch or answer in time */
    KEYBAY_ERR_MALFORMED_PARAMS = 8,      /* stored public parameters do not decode */
    KEYBAY_ERR_UNSUPPORTED = 9,           /* an option, version or request this plugin does not support */
    KEYBAY_ERR_INVALID_OPTION = 10,       /* enroll options missing, unknown, malformed or out of range, or
                                             naming a file that is not there */
    /* root plugins */
    KEYBAY_ERR_ROOT_MISSING = 20,         /* no root exists */
    KEYBAY_ERR_ROOT_MISMATCH = 21,        /* the root does not belong to this provider state */
    KEYBAY_ERR_ROOT_EXISTS = 22,          /* create found a root already: never overwritten */
    KEYBAY_ERR_INTEGRITY = 23,            /* sealed data failed authentication */
    /* any plugin (a root's files, a method's key file) */
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
#define KEYBAY_FLAG_NEEDS_DEVICE 0x2u /* unwrap needs hardware to be present (the host shows it) */
#define KEYBAY_FLAG_ONE_PER_STORE 0x4u /* a store holds at most one method of this plugin; the host
                                          refuses a second enrollment (a passphrase: one to remember) */
#define KEYBAY_FLAG_CALIBRATES 0x8u /* enroll tunes a cost (a KDF) to this machine and works on any
                                       secret: the host may run it on a throwaway one and time one
                                       unwrap with what it chose */

/* Kinds of secret a plugin may ask for. */
typedef enum keybay_secret_kind {
    KEYBAY_SECRET_PASSPHRASE = 1,
    KEYBAY_SECRET_PIN = 2,
    KEYBAY_SECRET_RECOVERY_KEY = 3 /* a recovery key the user wrote down */
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

/* An option as the user gave it (name and value), to enroll or to root_create_with_options: in
   the order given, each name at most once. UTF-8, NUL-terminated. */
typedef struct keybay_option {
    const char *name;
    const char *value;
} keybay_option;

/* An option a plugin accepts, which the host shows the user. */
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
                                uint8_t *out, size_t capacity, size_t *out_length)
        KEYBAY_NONNULL(4, 6, 8) KEYBAY_WARN_UNUSED_RESULT;
    /* Tells the user something (not a question). */
    keybay_status (*message)(void *context, keybay_message_level level, const char *text)
        KEYBAY_NONNULL(3) KEYBAY_WARN_UNUSED_RESULT;
    /* Asks a yes/no question; `*answer` is 1 for yes. */
    keybay_status (*confirm)(void *context, const char *question, int *answer)
        KEYBAY_NONNULL(2, 3) KEYBAY_WARN_UNUSED_RESULT;
    /* Returns 1 if the operation should stop (a long KDF polls this). */
    int (*is_cancelled)(void *context);
    /* Diagnostic log; never secrets. The host drops levels below what it was asked to show. */
    void (*log)(void *context, keybay_log_level level, const char *text) KEYBAY_NONNULL(3);
    /* Records one line explaining the error about to be returned. */
    void (*set_error)(void *context, const char *text) KEYBAY_NONNULL(2);

    /* Added after the first version-1 host; test with KEYBAY_HOST_HAS before use. */

    /* The application whose store this call serves ([A-Za-z0-9][A-Za-z0-9._-]{0,119}), so a
       method can bind its credential to it (fido2 derives its default relying party from it).
       NULL when the call serves no store (a conformance check, a cost calibration). */
    const char *application_id;
    /* Shows the user a secret to keep (a recovery key), once: `text` is what the user will type
       back, one line of UTF-8; `picture`, when not NULL, is the same secret drawn for a terminal
       (a QR code in block characters), shown only where a terminal shows it. Called during
       enroll; the host shows it only once the enrollment is stored, and never logs it. A host
       that cannot show a secret answers KEYBAY_ERR_INTERACTION_UNAVAILABLE. */
    keybay_status (*show_secret)(void *context, keybay_secret_kind kind, const char *text, const char *picture)
        KEYBAY_NONNULL(3) KEYBAY_WARN_UNUSED_RESULT;
    /* Records the cause of the error about to be returned in a form a program can match on; called
       just before the set_error line it belongs to (a later line without one drops it): `reason` is a short stable token, 1-40 of [a-z0-9-] (each plugin
       documents its own, e.g. "pin-blocked"); `tries_left` is the PIN or retry count the device
       reported, -1 when unknown; `path`, when not NULL, is the absolute path of the file or
       directory the failure is about (the one the line names). The host drops a token that breaks
       the pattern and a path that is not absolute. */
    void (*set_error_detail)(void *context, const char *reason, int32_t tries_left, const char *path) KEYBAY_NONNULL(2);
    /* Opens, read-only, the file the user named in the enroll option `option` (a key file's
       "path"), and writes the descriptor (close-on-exec, the plugin's to close) to `*fd_out`. At
       enroll the host opens the option's value (an absolute path) and records it for the method;
       at unwrap and verify it opens what it recorded then, whatever the parameters say: a plugin
       never gets a file the user did not name, and never a path it could open itself. The host
       checks the file as it checks a plugin file (a regular file with one name, owned by the user
       or root, not writable by group or others, no link out of its directory, nothing inside
       Keybay's own directories). A refusal is a status after set_error_detail (a reason:
       docs/plugins.md, "Host services") and a line naming the file; pass it on unchanged.
       UNSUPPORTED means the host holds no file for that option (a method enrolled before the host
       recorded files, or a call other than enroll, unwrap and verify): a plugin that can open the
       file itself (in process) may do so. `*fd_out` is -1 unless KEYBAY_OK. */
    keybay_status (*open_file)(void *context, const char *option, int *fd_out) KEYBAY_NONNULL(2, 3) KEYBAY_WARN_UNUSED_RESULT;
    /* Connects a stream socket to the unix socket the plugin declared as "unix:" `path` in its
       sandbox list (`path` exactly as declared, "$XDG_RUNTIME_DIR/..." included: the host expands
       it) and writes the connected descriptor (close-on-exec, the plugin's to close) to `*fd_out`;
       inside the sandbox a plugin cannot make a socket itself. Never the Keybay agent's socket or
       the session bus, whatever was declared. A refusal is a status after set_error_detail and a
       line, as for open_file. `*fd_out` is -1 unless KEYBAY_OK. */
    keybay_status (*connect_socket)(void *context, const char *path, int *fd_out) KEYBAY_NONNULL(2, 3) KEYBAY_WARN_UNUSED_RESULT;
    /* Names the TPM PCRs (a bit mask of PCRs 0-23: bit n is PCR n) whose values now differ from
       the ones a secret was sealed to, for the error about to be returned (reason "pcr-mismatch");
       called after set_error_detail and before the set_error line it belongs to, which keeps it
       (a later line drops it, as it drops the detail). The host shows them as the error's `pcrs`
       field. Bits above 23 are dropped. */
    void (*set_error_pcrs)(void *context, uint32_t pcrs);
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
    const keybay_option_spec *options; /* accepted options: enroll's, or root_create_with_options' */
    size_t option_count;

    void (*free_buffer)(keybay_buffer *buffer) KEYBAY_NONNULL(1); /* wipe and free; sets data to NULL */

    /* ---- method operations (kind == KEYBAY_KIND_METHOD; NULL otherwise) ---- */

    /* Is the method usable here? Never prompts, never blocks for long. KEYBAY_OK or
       KEYBAY_ERR_NOT_AVAILABLE (with set_error saying why). */
    keybay_status (*probe)(const keybay_host *host) KEYBAY_NONNULL(1) KEYBAY_WARN_UNUSED_RESULT;
    /* Enrolls: runs the ceremony, returns public parameters (stored in the store, readable by
       anyone with the root) and the 32-byte method secret M. */
    keybay_status (*enroll)(const keybay_host *host, const keybay_option *options, size_t option_count,
                            keybay_buffer *params_out, uint8_t secret_out[KEYBAY_METHOD_SECRET_BYTES])
        KEYBAY_NONNULL(1, 4, 5) KEYBAY_WARN_UNUSED_RESULT;
    /* Unwrap: runs the ceremony for these parameters and returns M (opening a store). */
    keybay_status (*unwrap)(const keybay_host *host, const uint8_t *params, size_t params_length,
                            uint8_t secret_out[KEYBAY_METHOD_SECRET_BYTES]) KEYBAY_NONNULL(1, 4) KEYBAY_WARN_UNUSED_RESULT;
    /* Verify: the ceremony when the user only checks a credential.
       Optional: NULL makes the host call unwrap. The host checks M against the stored public key. */
    keybay_status (*verify)(const keybay_host *host, const uint8_t *params, size_t params_length,
                            uint8_t secret_out[KEYBAY_METHOD_SECRET_BYTES]) KEYBAY_NONNULL(1, 4) KEYBAY_WARN_UNUSED_RESULT;
    /* One line of UTF-8 describing the parameters for listings ("Argon2id 64 MiB, t=3, p=4").
       Superseded by describe_with_host below (which the host prefers when set); one of the two
       must be set. */
    keybay_status (*describe)(const uint8_t *params, size_t params_length, keybay_buffer *text_out)
        KEYBAY_NONNULL(3) KEYBAY_WARN_UNUSED_RESULT;

    /* ---- root operations (kind == KEYBAY_KIND_ROOT; NULL otherwise) ---- */

    keybay_status (*root_exists)(const keybay_host *host, const keybay_root_context *context, int *exists)
        KEYBAY_NONNULL(1, 2, 3) KEYBAY_WARN_UNUSED_RESULT;
    /* Creates the root (never overwrites: KEYBAY_ERR_ROOT_EXISTS) and returns the provider state
       (at most 64 bytes) that the store keeps in its bootstrap. Superseded by
       root_create_with_options below; one of the two must be set. */
    keybay_status (*root_create)(const keybay_host *host, const keybay_root_context *context,
                                 keybay_buffer *provider_state_out) KEYBAY_NONNULL(1, 2, 3) KEYBAY_WARN_UNUSED_RESULT;
    /* Seals `plaintext` bound to `aad`, after checking that `provider_state` names this root. */
    keybay_status (*root_seal)(const keybay_host *host, const keybay_root_context *context,
                               const uint8_t *provider_state, size_t provider_state_length,
                               const uint8_t *plaintext, size_t plaintext_length,
                               const uint8_t *aad, size_t aad_length, keybay_buffer *sealed_out)
        KEYBAY_NONNULL(1, 2, 9) KEYBAY_WARN_UNUSED_RESULT;
    /* Opens what root_seal made. ROOT_MISSING / ROOT_MISMATCH before any decryption; INTEGRITY
       when authentication fails. The plaintext is secret: allocate it in locked memory.
       Superseded by root_open_with_floor below; one of the two must be set. */
    keybay_status (*root_open)(const keybay_host *host, const keybay_root_context *context,
                               const uint8_t *provider_state, size_t provider_state_length,
                               const uint8_t *sealed, size_t sealed_length,
                               const uint8_t *aad, size_t aad_length, keybay_buffer *plaintext_out)
        KEYBAY_NONNULL(1, 2, 9) KEYBAY_WARN_UNUSED_RESULT;
    /* Where the root lives, shown to the user ("/home/u/.local/state/keybay/app/file-root.key").
       Superseded by root_location_with_host below; one of the two must be set. */
    keybay_status (*root_location)(const keybay_root_context *context, keybay_buffer *text_out)
        KEYBAY_NONNULL(1, 2) KEYBAY_WARN_UNUSED_RESULT;
    /* Removes the root; idempotent. */
    keybay_status (*root_reset)(const keybay_host *host, const keybay_root_context *context)
        KEYBAY_NONNULL(1, 2) KEYBAY_WARN_UNUSED_RESULT;

    /* ---- added within ABI 1: read only when struct_size covers them; NULL = not offered ---- */

    /* describe, given the host so that a failure can say why (set_error, log). */
    keybay_status (*describe_with_host)(const keybay_host *host, const uint8_t *params, size_t params_length,
                                        keybay_buffer *text_out) KEYBAY_NONNULL(1, 4) KEYBAY_WARN_UNUSED_RESULT;
    /* root_location, given the host. */
    keybay_status (*root_location_with_host)(const keybay_host *host, const keybay_root_context *context,
                                             keybay_buffer *text_out) KEYBAY_NONNULL(1, 2, 3) KEYBAY_WARN_UNUSED_RESULT;
    /* One line of UTF-8 shown with the root: what a store on this root is protected against and
       what it is not ("protects against copied files ...; not against programs running as you"). */
    keybay_status (*root_protection)(const keybay_host *host, const keybay_root_context *context,
                                     keybay_buffer *text_out) KEYBAY_NONNULL(1, 2, 3) KEYBAY_WARN_UNUSED_RESULT;

    /* Rollback floor: the epoch of the store's latest rotation (a change of its methods or its
       root), as the root remembers it; the host refuses a key package whose epoch is below it.
       A root offers both operations or neither.
       root_open_with_floor is root_open that also returns the floor (0 when none was recorded),
       from the same read of the root: the host calls it instead of root_open, and a root that
       sets it may leave root_open NULL. */
    keybay_status (*root_open_with_floor)(const keybay_host *host, const keybay_root_context *context,
                                          const uint8_t *provider_state, size_t provider_state_length,
                                          const uint8_t *sealed, size_t sealed_length,
                                          const uint8_t *aad, size_t aad_length, keybay_buffer *plaintext_out,
                                          uint64_t *floor_out) KEYBAY_NONNULL(1, 2, 9, 10) KEYBAY_WARN_UNUSED_RESULT;
    /* Raises the floor to `epoch`, durably, after checking that `provider_state` names this root;
       never lowers it (an epoch at or below the floor changes nothing). The host calls it after
       the store of that epoch is durable and verified, never for record writes. */
    keybay_status (*root_raise_floor)(const keybay_host *host, const keybay_root_context *context,
                                      const uint8_t *provider_state, size_t provider_state_length,
                                      uint64_t epoch) KEYBAY_NONNULL(1, 2) KEYBAY_WARN_UNUSED_RESULT;
    /* root_create with the options the user gave for the new root ("pcrs" = "7"), which the
       plugin lists in `options`: in the order given, no name twice (the host refuses a name given
       twice before calling). The host calls it instead of root_create when options are given,
       and when root_create is NULL (with no options: `options` NULL, `option_count` 0); a root
       without it takes none. INVALID_OPTION for an option it does not know. */
    keybay_status (*root_create_with_options)(const keybay_host *host, const keybay_root_context *context,
                                              const keybay_option *options, size_t option_count,
                                              keybay_buffer *provider_state_out) KEYBAY_NONNULL(1, 2, 5) KEYBAY_WARN_UNUSED_RESULT;

    /* What a method plugin needs inside the sandbox the host runs it in (docs/plugins.md,
       "Isolation"): NULL, or a NULL-terminated list of entries, at most 32, each at most 255
       bytes: "device:/dev/hidraw*" (read, write and ioctl on a device, or on every device in
       that directory whose name starts with what precedes the '*'; below /dev), "read:/sys"
       (read-only below a path under /dev, /sys, /run, /etc or /usr/share), "unix:/run/pcscd/pcscd.comm"
       (the socket the host's connect_socket may connect to; below /run, or
       "unix:$XDG_RUNTIME_DIR/..." below the user's runtime directory), "env:NAME" (the variable is
       kept; the rest of the environment is emptied). The host reads it before it loads the plugin
       for use and refuses an entry it does not know. */
    const char *const *sandbox;

    /* Whether the root would open now, without unsealing anything (a check a package hook runs
       before a reboot), after checking that `provider_state` names this root. OK when it could look:
       `report_out` is one line of space-separated NAME=VALUE words describing the root's
       platform policy (docs/plugins.md, "Root check"), and `*pcrs_out` the PCRs (bit n: PCR n)
       whose values now keep the root from opening, 0 when it would open. Otherwise the error
       opening would give for any other cause (a TPM that does not load the root, no root). */
    keybay_status (*root_check)(const keybay_host *host, const keybay_root_context *context,
                                const uint8_t *provider_state, size_t provider_state_length,
                                keybay_buffer *report_out, uint32_t *pcrs_out) KEYBAY_NONNULL(1, 2, 5, 6) KEYBAY_WARN_UNUSED_RESULT;
    /* Seals the root again to the platform state now in effect, opened with the root's recovery
       secret (`secret`: what the user typed, `secret_length` bytes, never kept), after checking
       that `provider_state` names this root; the provider state stays valid (the store itself is
       not rewritten). The host calls it under the store's exclusive lock. A failure, or a kill,
       at any point leaves the old root or the new one, each opening the store. WRONG_SECRET for
       a recovery secret that is not the root's (with the tries left), LOCKED, UNSUPPORTED for a
       root without recovery. */
    keybay_status (*root_reseal)(const keybay_host *host, const keybay_root_context *context,
                                 const uint8_t *provider_state, size_t provider_state_length,
                                 const uint8_t *secret, size_t secret_length) KEYBAY_NONNULL(1, 2, 5) KEYBAY_WARN_UNUSED_RESULT;
} keybay_plugin;

/* The size of a descriptor built against the first version-1 header (it ends at root_reset);
   the smallest struct_size a host accepts. */
#define KEYBAY_PLUGIN_STRUCT_SIZE_V1_0 (offsetof(keybay_plugin, root_reset) + sizeof(void (*)(void)))
/* How many fields (pointers, all: function pointers and the sandbox list) this header's
   keybay_plugin has after root_reset: sizeof(keybay_plugin) is KEYBAY_PLUGIN_STRUCT_SIZE_V1_0
   plus that many pointers. */
#define KEYBAY_PLUGIN_FIELDS_ADDED_IN_V1 9

/* The one exported entry point. */
typedef const keybay_plugin *(*keybay_plugin_entry_fn)(void);
KEYBAY_EXPORT const keybay_plugin *keybay_plugin_entry_v1(void);

#ifdef __cplusplus
}
#endif

#endif /* KEYBAY_PLUGIN_H */
