// SPDX-License-Identifier: Apache-2.0
/*
 * secret-service — the desktop keyring as platform root (libkeybay-secret-service.so).
 *
 * The root is 32 random bytes kept as one item in the Secret Service's default collection
 * (org.freedesktop.secrets on the D-Bus session bus: GNOME Keyring, KWallet, KeePassXC):
 *
 *   schema      "org.keybay.PlatformKey" (the xdg:schema attribute)
 *   attributes  keybay-application = <application id>
 *               keybay-storage-domain = <the storage domain, 64 lowercase hex digits>
 *               keybay-state-home = <the root context's state_home, the absolute path as given>
 *   label       "Keybay platform key for <application id>"
 *   secret      root(32), and once the rollback floor was raised root(32) | floor:u64 BE (40 bytes);
 *               content type application/octet-stream
 *
 * The state home binds the item as file-root's path binds its key file: two state homes of one
 * application (a Flatpak and a host install, a run with XDG_STATE_HOME set) are two roots, and
 * every search names it, so nothing here ever reads, replaces or deletes another home's item.
 *
 * The key is read through a "plain" Secret Service session (see connect_service for why).
 *
 * Provider state (32 B):  SHA-256("keybay:v2:s1:provider-state:secret-service" | 0x00 | storageDomain | root)
 * Sealed package:         nonce(24) | XChaCha20-Poly1305(root, plaintext, aad)
 *
 * The item is created once and never replaced (a search first, then CreateItem without
 * replace). A locked collection is interaction: the Secret Service's own unlock prompt runs only
 * after the host's confirm said yes; a host that cannot ask gets INTERACTION_UNAVAILABLE. A
 * locked item is never a missing one: every operation, root_exists and root_reset included,
 * first unlocks whatever may hold the item (see search_paths) or fails. No Secret Service is
 * NOT_AVAILABLE, and a session bus is never started (see check_session_bus). A missing item is
 * ROOT_MISSING, never created again on open.
 * The rollback floor is read with the root (the same secret) and raised by rewriting the item's
 * secret (SetSecret: the same item, the same root), never lowered.
 *
 * libsecret-1 (and GLib with it) is opened with dlopen on the first operation that talks to the
 * Secret Service, so a process whose store is on another root never loads it. The few GLib and
 * libsecret types used are declared in secret_service_keyring.h (their layout is libsecret's
 * public, stable API), which with secret_service_keyring.c is the talking to the Secret Service.
 */
#define _POSIX_C_SOURCE 200809L

#include <sys/stat.h>
#include <unistd.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "keybay_plugin.h"
#include "keybay_plugin_descriptor.h"
#include "keybay_plugin_host.h"
#include "keybay_root_files.h"
#include "secret_service_keyring.h"

#define fail keybay_rf_fail
#define buffer_alloc keybay_rf_buffer_alloc

#define STATE_BYTES 32
static const char provider_state_label[] = "keybay:v2:s1:provider-state:secret-service";

/* ---- the root ---- */

static void provider_state(const uint8_t *root, const uint8_t *domain, uint8_t out[STATE_BYTES]) {
    keybay_rf_provider_state(provider_state_label, domain, root, out);
}

/* The root of the item `state` names, in guarded memory, and its rollback floor (0 for a
   32-byte secret); the item's object path copied into `path_out` when it is not NULL. ROOT_MISSING when there is no item, ROOT_MISMATCH when none
   holds the root the state names (checked before any decryption); a locked item is unlocked
   first (find_unlocked). Works on object paths, as `secret-tool lookup` does: one search, one
   GetSecret per candidate, no item proxies. */
static keybay_status load_matching_root(const keybay_host *host, const keybay_root_context *c,
                                        const uint8_t *state, size_t state_length, uint8_t **root_out,
                                        uint64_t *floor_out, char *path_out, size_t path_size) {
    ss_object *service = NULL;
    item_query q;
    char **paths = NULL;
    keybay_status s = find_unlocked(host, c, &service, &q, &paths);
    if (s == KEYBAY_OK && !(paths && paths[0])) {
        keybay_host_error_reason(host, "item-missing");
        s = fail(host, KEYBAY_ERR_ROOT_MISSING, "platform key invalidated: the keyring item '%s' (" ATTRIBUTE_APP "=%s, " ATTRIBUTE_STATE_HOME "=%s) is missing from " SERVICE_NAME, q.label, q.application, q.state_home);
    }
    uint8_t *root = NULL;
    if (s == KEYBAY_OK && !(root = sodium_malloc(ROOT_BYTES))) s = fail(host, KEYBAY_ERR_INTERNAL, "out of memory");
    int found = 0;
    uint64_t floor = 0;
    for (char **p = paths; s == KEYBAY_OK && p && *p && !found; p++) {
        uint8_t *bytes = NULL;
        size_t length = 0;
        if ((s = get_secret(host, service, *p, &bytes, &length)) != KEYBAY_OK) break;
        if (length == ROOT_BYTES || length == ROOT_BYTES + FLOOR_BYTES) {
            uint8_t expected[STATE_BYTES];
            provider_state(bytes, c->storage_domain, expected);
            if (state_length == STATE_BYTES && sodium_memcmp(expected, state, STATE_BYTES) == 0) {
                memcpy(root, bytes, ROOT_BYTES);
                for (size_t b = ROOT_BYTES; b < length; b++) floor = floor << 8 | bytes[b];
                if (path_out) snprintf(path_out, path_size, "%s", *p);
                found = 1;
            }
        }
        sodium_free(bytes);
    }
    if (s == KEYBAY_OK && !found) {
        keybay_host_error_reason(host, "item-mismatch");
        s = fail(host, KEYBAY_ERR_ROOT_MISMATCH, "platform key invalidated: the keyring item '%s' does not hold this store's platform key", q.label);
    }
    if (paths) SS(g_strfreev)(paths);
    free_query(&q);
    if (s != KEYBAY_OK) { if (root) sodium_free(root); return s; }
    *root_out = root;
    if (floor_out) *floor_out = floor;
    return KEYBAY_OK;
}

static keybay_status probe(const keybay_host *host) {
    ss_object *service;
    return connect_service(host, &service);
}

/* Whether the item exists, once it can be seen: a locked keyring that holds or may hold it is
   unlocked first (find_unlocked), so `status` and `reset` never take a locked item for a
   missing one; a run that may not ask gets INTERACTION_UNAVAILABLE. */
static keybay_status root_exists(const keybay_host *host, const keybay_root_context *c, int *exists) {
    *exists = 0;
    ss_object *service = NULL;
    item_query q;
    char **paths = NULL;
    keybay_status s = find_unlocked(host, c, &service, &q, &paths);
    *exists = s == KEYBAY_OK && paths && paths[0];
    if (paths) SS(g_strfreev)(paths);
    free_query(&q);
    return s;
}

static keybay_status root_create(const keybay_host *host, const keybay_root_context *c, keybay_buffer *state_out) {
    ss_object *service = NULL;
    item_query q;
    char **paths = NULL;
    keybay_status s = find_unlocked(host, c, &service, &q, &paths);
    if (s == KEYBAY_OK && paths && paths[0]) {
        keybay_host_error_reason(host, "item-exists");
        s = fail(host, KEYBAY_ERR_ROOT_EXISTS, "the keyring item '%s' already exists; refusing to replace it", q.label);
    }
    if (paths) SS(g_strfreev)(paths);
    ss_object *collection = NULL;
    if (s == KEYBAY_OK) {
        ss_error *error = NULL;
        collection = SS(secret_collection_for_alias_sync)(service, "default", COLLECTION_NONE, NULL, &error);
        if (error) s = fail_error(host, KEYBAY_ERR_IO, "cannot find the default collection of " SERVICE_NAME, error);
        else if (collection == NULL) s = fail(host, KEYBAY_ERR_NOT_AVAILABLE, SERVICE_NAME " has no default collection (create a keyring first)");
    }
    if (s == KEYBAY_OK && SS(secret_collection_get_locked)(collection)) {
        const char *paths[2] = { SS(g_dbus_proxy_get_object_path)(collection), NULL };
        s = unlock(host, service, paths, "the default keyring collection");
    }
    uint8_t *root = sodium_malloc(ROOT_BYTES);
    if (s == KEYBAY_OK && (!root || !buffer_alloc(state_out, STATE_BYTES))) s = fail(host, KEYBAY_ERR_INTERNAL, "out of memory");
    if (s == KEYBAY_OK) {
        randombytes_buf(root, ROOT_BYTES);
        ss_object *value = SS(secret_value_new)((const char *)root, ROOT_BYTES, "application/octet-stream");
        ss_error *error = NULL;
        ss_object *item = value ? SS(secret_item_create_sync)(collection, &schema, q.attributes, q.label, value, ITEM_CREATE_NONE, NULL, &error) : NULL;
        if (value) SS(secret_value_unref)(value);
        if (item == NULL) s = fail_error(host, KEYBAY_ERR_IO, "cannot create the keyring item", error);
        else SS(g_object_unref)(item);
    }
    if (s == KEYBAY_OK) provider_state(root, c->storage_domain, state_out->data);
    else keybay_rf_free_buffer(state_out);
    if (root) sodium_free(root);
    if (collection) SS(g_object_unref)(collection);
    free_query(&q);
    return s;
}

static keybay_status root_seal(const keybay_host *host, const keybay_root_context *c,
                               const uint8_t *state, size_t state_length,
                               const uint8_t *plaintext, size_t plaintext_length,
                               const uint8_t *aad, size_t aad_length, keybay_buffer *sealed_out) {
    if (plaintext_length == 0) return fail(host, KEYBAY_ERR_INTERNAL, "refusing to seal an empty key package");
    uint8_t *root;
    keybay_status s = load_matching_root(host, c, state, state_length, &root, NULL, NULL, 0);
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
    keybay_status s = load_matching_root(host, c, state, state_length, &root, floor_out, NULL, 0);
    if (s != KEYBAY_OK) return s;
    s = keybay_rf_open(host, root, sealed, sealed_length, aad, aad_length, plaintext_out, "the keyring's platform key");
    sodium_free(root);
    return s;
}

/* Rewrites the item's secret as root | epoch (the same item, the same root); an epoch at or
   below the floor changes nothing. */
static keybay_status root_raise_floor(const keybay_host *host, const keybay_root_context *c,
                                      const uint8_t *state, size_t state_length, uint64_t epoch) {
    uint8_t *root;
    uint64_t floor = 0;
    char path[512];
    keybay_status s = load_matching_root(host, c, state, state_length, &root, &floor, path, sizeof path);
    if (s != KEYBAY_OK) return s;
    ss_object *service = NULL, *item = NULL;
    ss_error *error = NULL;
    if (epoch > floor && (s = connect_service(host, &service)) == KEYBAY_OK &&
        !(item = SS(secret_item_new_for_dbus_path_sync)(service, path, ITEM_NONE, NULL, &error)))
        s = fail_error(host, KEYBAY_ERR_IO, "cannot reach the keyring item", error);
    uint8_t *secret = s == KEYBAY_OK && epoch > floor ? sodium_malloc(ROOT_BYTES + FLOOR_BYTES) : NULL;
    if (s == KEYBAY_OK && epoch > floor && !secret) s = fail(host, KEYBAY_ERR_INTERNAL, "out of memory");
    if (secret) {
        memcpy(secret, root, ROOT_BYTES);
        for (int b = 0; b < FLOOR_BYTES; b++) secret[ROOT_BYTES + b] = (uint8_t)(epoch >> (8 * (FLOOR_BYTES - 1 - b)));
        ss_object *value = SS(secret_value_new)((const char *)secret, ROOT_BYTES + FLOOR_BYTES, "application/octet-stream");
        if (value == NULL) s = fail(host, KEYBAY_ERR_INTERNAL, "out of memory");
        else if (!SS(secret_item_set_secret_sync)(item, value, NULL, &error))
            s = fail_error(host, KEYBAY_ERR_IO, "cannot record the rollback floor in the keyring item", error);
        if (value) SS(secret_value_unref)(value);
        sodium_free(secret);
    }
    sodium_free(root);
    if (item) SS(g_object_unref)(item);
    return s;
}

/* The item's object path (which names its collection) when it exists, else where it would be;
   never unlocks anything (a locked item is named as found, "locked"). */
static keybay_status root_location(const keybay_host *host, const keybay_root_context *c, keybay_buffer *text_out) {
    ss_object *service = NULL;
    item_query q;
    memset(&q, 0, sizeof q);
    found f;
    memset(&f, 0, sizeof f);
    keybay_status s = connect_service(host, &service);
    if (s == KEYBAY_OK) s = make_query(host, c, &q);
    if (s == KEYBAY_OK) s = search_paths(host, service, &q, &f);
    char text[1024];
    if (s == KEYBAY_OK) {
        if (f.unlocked && f.unlocked[0]) snprintf(text, sizeof text, "Secret Service item %s ('%s')", f.unlocked[0], q.label);
        else if (f.locked && f.locked[0]) snprintf(text, sizeof text, "Secret Service item %s ('%s', locked)", f.locked[0], q.label);
        else if (f.hidden[0]) snprintf(text, sizeof text, "Secret Service default collection %s, locked: item '%s' (unknown until it is unlocked)", f.hidden, q.label);
        else snprintf(text, sizeof text, "Secret Service default collection, item '%s' (absent)", q.label);
        s = keybay_rf_text(host, text, strlen(text), text_out);
    }
    free_found(&f);
    free_query(&q);
    return s;
}

static const char protection_note[] =
    "secret-service keeps the platform key in the desktop keyring: it protects against copied files, backups "
    "and other users, and while the keyring is locked against everyone; not against programs running as this "
    "user while it is unlocked";

KEYBAY_ROOT_PROTECTION(protection_note)

/* Deletes every item of this application, storage domain and state home (never another home's);
   none is success, but only once nothing locked may hold one (find_unlocked): otherwise nothing
   is deleted. */
static keybay_status root_reset(const keybay_host *host, const keybay_root_context *c) {
    ss_object *service = NULL;
    item_query q;
    char **paths = NULL;
    keybay_status s = find_unlocked(host, c, &service, &q, &paths);
    for (char **p = paths; s == KEYBAY_OK && p && *p; p++) {
        ss_error *error = NULL;
        ss_object *item = SS(secret_item_new_for_dbus_path_sync)(service, *p, ITEM_NONE, NULL, &error);
        if (item == NULL) s = fail_error(host, KEYBAY_ERR_IO, "cannot reach the keyring item", error);
        else if (!SS(secret_item_delete_sync)(item, NULL, &error)) s = fail_error(host, KEYBAY_ERR_IO, "cannot delete the keyring item", error);
        if (item) SS(g_object_unref)(item);
    }
    if (paths) SS(g_strfreev)(paths);
    free_query(&q);
    return s;
}

static const keybay_plugin descriptor = {
    KEYBAY_DESCRIPTOR("secret-service", "Desktop keyring (Secret Service platform root)", "1.0.0", KEYBAY_KIND_ROOT, 0),
    KEYBAY_ROOT_OPERATIONS,
    .probe = probe,
    .root_create = root_create,
};

KEYBAY_PLUGIN_ENTRY_AFTER_SODIUM(descriptor)
