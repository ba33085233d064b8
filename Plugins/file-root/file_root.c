// SPDX-License-Identifier: Apache-2.0
/*
 * file-root — the TPM-less platform root, as a Keybay root plugin (libkeybay-file-root.so).
 *
 * 32 random bytes in a private file, <state_home>/keybay/<app>/file-root.key, kept apart from
 * the store so that a copy of the data directory alone opens nothing. Any process of the same
 * user can read it: it protects against copied files, backups and other users, not against
 * same-user malware.
 *
 * Root file, version 1 (38 bytes, as created):  "KBFR" | version:u16 BE (= 1) | root(32)
 * Root file, version 2 (46 bytes, once a floor is recorded): "KBFR" | 2:u16 BE | root(32) | floor:u64 BE
 * Provider state (32 B):  SHA-256("keybay:v2:s1:provider-state:file-root" | 0x00 | storageDomain | root)
 * Sealed package:         nonce(24) | XChaCha20-Poly1305(root, plaintext, aad)
 *
 * The rollback floor lives in the root file because open reads that file anyway: checking it
 * costs no extra read. A version-1 file has floor 0.
 *
 * Directories below state_home ("keybay", the app) are 0700, the file 0600, all owned by the
 * effective user and opened without following links; anything else is refused, never repaired
 * (keybay_root_files.h, shared with the tpm2 root).
 */
#include <stdio.h>
#include <string.h>

#include <sodium.h>

#include "keybay_plugin.h"
#include "keybay_plugin_descriptor.h"
#include "keybay_plugin_host.h"
#include "keybay_root_files.h"

#define ROOT_BYTES 32
#define ROOT_FILE_BYTES 38
#define ROOT_FILE_V2_BYTES 46
#define STATE_BYTES 32
#define FILE_NAME "file-root.key"
static const char provider_state_label[] = "keybay:v2:s1:provider-state:file-root";

#define fail keybay_rf_fail
#define fail_errno keybay_rf_fail_errno
#define buffer_alloc keybay_rf_buffer_alloc

static int root_file_path(const keybay_root_context *c, char *out, size_t size) {
    return keybay_rf_path(c, FILE_NAME, out, size);
}

/* ---- the root ---- */

static void provider_state(const uint8_t *root, const uint8_t *domain, uint8_t out[STATE_BYTES]) {
    keybay_rf_provider_state(provider_state_label, domain, root, out);
}

/* Reads the root into guarded memory and checks it against `state`; `*floor_out` gets the
   rollback floor (0 in a version-1 file). */
static keybay_status load_matching_root(const keybay_host *host, const keybay_root_context *c,
                                        const uint8_t *state, size_t state_length, uint8_t **root_out,
                                        uint64_t *floor_out) {
    char path[KEYBAY_ROOT_PATH_BYTES];
    root_file_path(c, path, sizeof path); /* for messages: truncation is harmless */
    uint8_t *file = sodium_malloc(ROOT_FILE_V2_BYTES + 1);
    if (!file) return fail(host, KEYBAY_ERR_INTERNAL, "out of memory reading %s", path);
    size_t total;
    keybay_status s = keybay_rf_read(host, c, FILE_NAME, "the root file", file, ROOT_FILE_V2_BYTES + 1, &total);
    if (s != KEYBAY_OK) { sodium_free(file); return s; }
    int version1 = total == ROOT_FILE_BYTES && file[5] == 1, version2 = total == ROOT_FILE_V2_BYTES && file[5] == 2;
    if (s == KEYBAY_OK && ((!version1 && !version2) || memcmp(file, "KBFR", 4) != 0 || file[4] != 0))
        s = fail(host, KEYBAY_ERR_ROOT_MISMATCH, "platform key invalidated: the root file %s is not a version-1 or version-2 file-root key", path);
    if (s == KEYBAY_OK) {
        uint8_t expected[STATE_BYTES];
        provider_state(file + 6, c->storage_domain, expected);
        if (state_length != STATE_BYTES || sodium_memcmp(expected, state, STATE_BYTES) != 0)
            s = fail(host, KEYBAY_ERR_ROOT_MISMATCH, "platform key invalidated: the root file %s does not belong to this store", path);
    }
    if (s != KEYBAY_OK) { sodium_free(file); return s; }
    uint64_t floor = 0;
    if (version2)
        for (int i = 0; i < 8; i++) floor = floor << 8 | file[6 + ROOT_BYTES + i];
    memmove(file, file + 6, ROOT_BYTES);
    sodium_memzero(file + ROOT_BYTES, ROOT_FILE_V2_BYTES + 1 - ROOT_BYTES);
    *root_out = file;
    *floor_out = floor;
    return KEYBAY_OK;
}

static keybay_status root_exists(const keybay_host *host, const keybay_root_context *c, int *exists) {
    return keybay_rf_exists(host, c, FILE_NAME, exists);
}

static keybay_status root_create(const keybay_host *host, const keybay_root_context *c, keybay_buffer *state_out) {
    uint8_t *file = sodium_malloc(ROOT_FILE_BYTES);
    if (!file || !buffer_alloc(state_out, STATE_BYTES)) {
        if (file) sodium_free(file);
        return fail(host, KEYBAY_ERR_INTERNAL, "out of memory creating the root file");
    }
    memcpy(file, "KBFR\0\1", 6);
    randombytes_buf(file + 6, ROOT_BYTES);
    /* Create-only: the root appears complete or not at all and is never overwritten. */
    keybay_status s = keybay_rf_create(host, c, FILE_NAME, file, ROOT_FILE_BYTES);
    if (s == KEYBAY_OK) provider_state(file + 6, c->storage_domain, state_out->data);
    else keybay_rf_free_buffer(state_out);
    sodium_free(file);
    return s;
}

static keybay_status root_seal(const keybay_host *host, const keybay_root_context *c,
                               const uint8_t *state, size_t state_length,
                               const uint8_t *plaintext, size_t plaintext_length,
                               const uint8_t *aad, size_t aad_length, keybay_buffer *sealed_out) {
    uint8_t *root;
    uint64_t floor;
    keybay_status s = load_matching_root(host, c, state, state_length, &root, &floor);
    if (s != KEYBAY_OK) return s;
    s = keybay_rf_seal(host, root, plaintext, plaintext_length, aad, aad_length, sealed_out);
    sodium_free(root);
    return s;
}

static keybay_status root_open_with_floor(const keybay_host *host, const keybay_root_context *c,
                                          const uint8_t *state, size_t state_length,
                                          const uint8_t *sealed, size_t sealed_length,
                                          const uint8_t *aad, size_t aad_length, keybay_buffer *plaintext_out,
                                          uint64_t *floor_out) {
    uint8_t *root;
    keybay_status s = load_matching_root(host, c, state, state_length, &root, floor_out);
    if (s != KEYBAY_OK) return s;
    char path[KEYBAY_ROOT_PATH_BYTES], name[KEYBAY_ROOT_PATH_BYTES + 32];
    root_file_path(c, path, sizeof path); /* for messages: truncation is harmless */
    snprintf(name, sizeof name, "the platform root %s", path);
    s = keybay_rf_open(host, root, sealed, sealed_length, aad, aad_length, plaintext_out, name);
    sodium_free(root);
    return s;
}

/* Rewrites the root file as version 2 with the new floor and the same root: staged, fsynced,
   renamed over the old file, directory fsynced (the old file or the new one, never a torn one).
   The host holds the store's exclusive lock, so no other writer races it. */
static keybay_status root_raise_floor(const keybay_host *host, const keybay_root_context *c,
                                      const uint8_t *state, size_t state_length, uint64_t epoch) {
    uint8_t *root;
    uint64_t floor;
    keybay_status s = load_matching_root(host, c, state, state_length, &root, &floor);
    if (s != KEYBAY_OK || epoch <= floor) {
        if (s == KEYBAY_OK) sodium_free(root);
        return s;
    }
    uint8_t *file = sodium_malloc(ROOT_FILE_V2_BYTES);
    if (!file) {
        sodium_free(root);
        return fail(host, KEYBAY_ERR_INTERNAL, "out of memory raising the rollback floor");
    }
    memcpy(file, "KBFR\0\2", 6);
    memcpy(file + 6, root, ROOT_BYTES);
    for (int i = 0; i < 8; i++) file[6 + ROOT_BYTES + i] = (uint8_t)(epoch >> (56 - 8 * i));
    sodium_free(root);
    s = keybay_rf_replace(host, c, FILE_NAME, file, ROOT_FILE_V2_BYTES);
    sodium_free(file);
    return s;
}

static keybay_status root_location(const keybay_host *host, const keybay_root_context *c, keybay_buffer *text_out) {
    char path[KEYBAY_ROOT_PATH_BYTES];
    int n = root_file_path(c, path, sizeof path);
    if (n < 0) return fail(host, KEYBAY_ERR_IO, "the root file's path under %.64s... is longer than PATH_MAX", c->state_home);
    return keybay_rf_text(host, path, (size_t)n, text_out);
}

/* Any process of the same user can read the root file: say so wherever the store is shown. */
static const char protection_note[] =
    "file-root keeps the platform key in a private file: it protects against copied files, backups "
    "and other users, not against other programs running as this user";

KEYBAY_ROOT_PROTECTION(protection_note)

static keybay_status root_reset(const keybay_host *host, const keybay_root_context *c) {
    return keybay_rf_remove(host, c, FILE_NAME);
}

static const keybay_plugin descriptor = {
    KEYBAY_DESCRIPTOR("file-root", "Private file (TPM-less platform root)", "1.0.0", KEYBAY_KIND_ROOT, 0),
    KEYBAY_ROOT_OPERATIONS,
    .root_create = root_create,
};

KEYBAY_PLUGIN_ENTRY_AFTER_SODIUM(descriptor)
