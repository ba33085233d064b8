// SPDX-License-Identifier: Apache-2.0
/*
 * keybay_root_files.h — what first-party root plugins share: failure lines, guarded buffers
 * (file-root, tpm2, secret-service, portal), the session-bus check of the D-Bus roots
 * (secret-service, portal), and their private files (file-root, tpm2, portal) under
 * <state_home>/keybay/<app>/: directories 0700 and files 0600, owned by the effective user,
 * opened without following links; anything else is refused, never repaired. Every failure has
 * called set_error with the path. Not installed, not part of the ABI.
 */
#ifndef KEYBAY_ROOT_FILES_H
#define KEYBAY_ROOT_FILES_H

#include <stddef.h>
#include <stdint.h>

#include "keybay_plugin.h"
#include "keybay_private_directory.h"

/* errno as INSECURE (EACCES, EPERM) or IO, with "what path: reason". */
#define keybay_rf_fail_errno keybay_private_fail_errno

#define KEYBAY_ROOT_PATH_BYTES 4200

/* Linked into each root plugin, exported by none (a plugin exports its entry point only). */
#pragma GCC visibility push(hidden)

/* Sets the host's error line and returns `status`. */
keybay_status keybay_rf_fail(const keybay_host *host, keybay_status status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* A buffer handed to the host, from sodium_malloc (length 0 still gets one byte), so that
   keybay_rf_free_buffer wipes it whatever it holds; 0 when out of memory. */
int keybay_rf_buffer_alloc(keybay_buffer *b, size_t length);
/* The plugin's free_buffer: wipes and frees, leaves data NULL and length 0. */
void keybay_rf_free_buffer(keybay_buffer *b);
/* `length` bytes of text into a new such buffer (location and protection lines); INTERNAL, with
   the line, when out of memory. */
keybay_status keybay_rf_text(const keybay_host *host, const char *text, size_t length, keybay_buffer *text_out);


/* <state_home>/keybay/<app>/<name>; -1 if it does not fit (out then holds a truncated path). */
int keybay_rf_path(const keybay_root_context *c, const char *name, char *out, size_t size);

/* Opens <state_home>/keybay/<app> as a private directory (keybay_private_open: creating it, 0700,
   when `create`); *fd = -1 (and OK) when it is missing and !create. `path` receives its path. */
keybay_status keybay_rf_open_dir(const keybay_host *host, const keybay_root_context *c, int create, int *fd,
                                 char *path, size_t path_size);

/* *exists = 1 if <name> exists in the root directory (any type: it is checked when opened). */
keybay_status keybay_rf_exists(const keybay_host *host, const keybay_root_context *c, const char *name, int *exists);

/* Reads <name> (at most `capacity` bytes; a longer file is refused as ROOT_MISMATCH) into
   `out`, after the ownership and mode checks. A missing directory or file is ROOT_MISSING with
   "platform key invalidated: <what> <path> is missing". */
keybay_status keybay_rf_read(const keybay_host *host, const keybay_root_context *c, const char *name, const char *what,
                             uint8_t *out, size_t capacity, size_t *length);

/* Writes <name> create-only: <name>.stage written and fsynced, hard-linked to <name> (ROOT_EXISTS
   if that exists), the directory fsynced. Creates the directories. */
keybay_status keybay_rf_create(const keybay_host *host, const keybay_root_context *c, const char *name,
                               const uint8_t *bytes, size_t length);

/* Replaces <name>: <name>.stage written and fsynced, renamed over <name>, directory fsynced. */
keybay_status keybay_rf_replace(const keybay_host *host, const keybay_root_context *c, const char *name,
                                const uint8_t *bytes, size_t length);

/* Removes <name> and its staging file; idempotent. */
keybay_status keybay_rf_remove(const keybay_host *host, const keybay_root_context *c, const char *name);

/* The provider state of a root holding a 32-byte root key (file-root, secret-service, portal):
   SHA-256(label | 0x00 | storageDomain(32) | root(32)), docs/format.md §4. */
void keybay_rf_provider_state(const char *label, const uint8_t *domain, const uint8_t *root, uint8_t out[32]);
/* nonce(24) | XChaCha20-Poly1305(root, plaintext, aad) into a new buffer; an empty plaintext is
   refused (INTERNAL). */
keybay_status keybay_rf_seal(const keybay_host *host, const uint8_t *root, const uint8_t *plaintext, size_t plaintext_length,
                             const uint8_t *aad, size_t aad_length, keybay_buffer *sealed_out);
/* Opens what keybay_rf_seal made into a new guarded buffer; INTEGRITY when it is too short or
   fails authentication, the line naming `root_name` ("the platform root /path", ...). */
keybay_status keybay_rf_open(const keybay_host *host, const uint8_t *root, const uint8_t *sealed, size_t sealed_length,
                             const uint8_t *aad, size_t aad_length, keybay_buffer *plaintext_out, const char *root_name);

/* Whether the session bus may be used without launching one (session_bus.c): NOT_AVAILABLE, with
   a line naming `service` and `root_id`, when DBUS_SESSION_BUS_ADDRESS is unset and
   $XDG_RUNTIME_DIR/bus is not a socket of this user, or when the address names a transport that
   runs a program (autolaunch:, unixexec:). */
keybay_status keybay_rf_check_session_bus(const keybay_host *host, const char *root_id, const char *service);

#pragma GCC visibility pop

/* The descriptor's root operations every first-party root has, by the names each gives them
   (keybay_plugin_descriptor.h has the rest). */
#define KEYBAY_ROOT_OPERATIONS                                                                    \
    .free_buffer = keybay_rf_free_buffer, .root_exists = root_exists, .root_seal = root_seal,      \
    .root_reset = root_reset, .root_location_with_host = root_location,                           \
    .root_protection = root_protection, .root_open_with_floor = root_open_with_floor,             \
    .root_raise_floor = root_raise_floor

/* A root's root_protection: its protection note, a string literal or char array, as it is. */
#define KEYBAY_ROOT_PROTECTION(note)                                                              \
    static keybay_status root_protection(const keybay_host *host, const keybay_root_context *c,   \
                                         keybay_buffer *text_out) {                              \
        (void)c;                                                                                 \
        return keybay_rf_text(host, (note), sizeof(note) - 1, text_out);                        \
    }

#endif /* KEYBAY_ROOT_FILES_H */
