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
 * libsecret types used are declared below (their layout is libsecret's public, stable API).
 */
#define _POSIX_C_SOURCE 200809L

#include <sys/stat.h>
#include <unistd.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "keybay_lazy_library.h"
#include "keybay_plugin.h"
#include "keybay_plugin_descriptor.h"
#include "keybay_plugin_host.h"
#include "keybay_root_files.h"

#define fail keybay_rf_fail
#define buffer_alloc keybay_rf_buffer_alloc

#define ROOT_BYTES 32
#define FLOOR_BYTES 8
#define STATE_BYTES 32
#define SCHEMA_NAME "org.keybay.PlatformKey"
#define ATTRIBUTE_APP "keybay-application"
#define ATTRIBUTE_DOMAIN "keybay-storage-domain"
#define ATTRIBUTE_STATE_HOME "keybay-state-home"
#define LABEL_PREFIX "Keybay platform key for "
#define SERVICE_NAME "the Secret Service (org.freedesktop.secrets on the D-Bus session bus)"
static const char provider_state_label[] = "keybay:v2:s1:provider-state:secret-service";

/* ---- the GLib and libsecret types used (as their public headers declare them) ---- */

typedef struct ss_error { uint32_t domain; int code; char *message; } ss_error;       /* GError */
typedef struct { const char *name; int type; } ss_schema_attribute;                     /* SecretSchemaAttribute */
typedef struct {                                                                        /* SecretSchema */
    const char *name;
    int flags;
    ss_schema_attribute attributes[32];
    int reserved;
    void *reserved1, *reserved2, *reserved3, *reserved4, *reserved5, *reserved6, *reserved7;
} ss_schema;
typedef void ss_object; /* SecretService, SecretCollection, SecretItem, SecretValue, GHashTable */

enum {
    SCHEMA_DONT_MATCH_NAME = 1 << 1, /* SECRET_SCHEMA_DONT_MATCH_NAME: no xdg:schema in the search */
    COLLECTION_NONE = 0,             /* SECRET_COLLECTION_NONE */
    ITEM_CREATE_NONE = 0,            /* SECRET_ITEM_CREATE_NONE: never replace */
    ITEM_NONE = 0,                   /* SECRET_ITEM_NONE */
};

static const ss_schema schema = {
    .name = SCHEMA_NAME,
    .flags = 0, /* SECRET_SCHEMA_NONE: the schema name is matched too */
    .attributes = { { ATTRIBUTE_APP, 0 }, { ATTRIBUTE_DOMAIN, 0 }, { ATTRIBUTE_STATE_HOME, 0 }, { NULL, 0 } },
};

/* The same three attributes without the schema name: the search for locked items (search_paths). */
static const ss_schema schema_attributes_only = {
    .name = SCHEMA_NAME,
    .flags = SCHEMA_DONT_MATCH_NAME,
    .attributes = { { ATTRIBUTE_APP, 0 }, { ATTRIBUTE_DOMAIN, 0 }, { ATTRIBUTE_STATE_HOME, 0 }, { NULL, 0 } },
};

#define SS_LIBRARY "libsecret-1.so.0"
#define SS_FUNCTIONS(X)                                                                                           \
    X(secret_service_get_sync, ss_object *, (int flags, void *cancellable, ss_error **error))                     \
    X(secret_service_search_for_dbus_paths_sync, int, (ss_object *service, const ss_schema *schema,               \
                                                       ss_object *attributes, void *cancellable, char ***unlocked, \
                                                       char ***locked, ss_error **error))                         \
    X(secret_service_unlock_dbus_paths_sync, int, (ss_object *service, const char **paths, void *cancellable,     \
                                                   char ***unlocked, ss_error **error))                           \
    X(secret_item_new_for_dbus_path_sync, ss_object *, (ss_object *service, const char *path, int flags,         \
                                                        void *cancellable, ss_error **error))                     \
    X(secret_collection_for_alias_sync, ss_object *, (ss_object *service, const char *alias, int flags,           \
                                                      void *cancellable, ss_error **error))                       \
    X(secret_collection_get_locked, int, (ss_object *collection))                                                 \
    X(secret_item_create_sync, ss_object *, (ss_object *collection, const ss_schema *schema, ss_object *attributes, \
                                             const char *label, ss_object *value, int flags, void *cancellable,   \
                                             ss_error **error))                                                   \
    X(secret_item_delete_sync, int, (ss_object *item, void *cancellable, ss_error **error))                       \
    X(secret_item_set_secret_sync, int, (ss_object *item, ss_object *value, void *cancellable, ss_error **error))  \
    X(secret_value_new, ss_object *, (const char *secret, long length, const char *content_type))                 \
    X(secret_value_unref, void, (ss_object *value))                                                               \
    X(g_dbus_proxy_get_object_path, const char *, (ss_object *proxy))                                            \
    X(g_dbus_proxy_call_sync, ss_object *, (ss_object *proxy, const char *method, ss_object *parameters,         \
                                            int flags, int timeout, void *cancellable, ss_error **error))         \
    X(g_variant_new, ss_object *, (const char *format, ...))                                                      \
    X(g_variant_new_string, ss_object *, (const char *text))                                                      \
    X(g_variant_get, void, (ss_object *value, const char *format, ...))                                           \
    X(g_variant_get_child_value, ss_object *, (ss_object *value, size_t index))                                   \
    X(g_variant_n_children, size_t, (ss_object *value))                                                           \
    X(g_variant_get_string, const char *, (ss_object *value, size_t *length))                                     \
    X(g_variant_get_fixed_array, const void *, (ss_object *value, size_t *count, size_t element_size))           \
    X(g_variant_unref, void, (ss_object *value))                                                                  \
    X(g_free, void, (void *memory))                                                                               \
    X(g_object_unref, void, (ss_object *object))                                                                  \
    X(g_strfreev, void, (char **strings))                                                                         \
    X(g_error_free, void, (ss_error *error))                                                                      \
    X(g_hash_table_new, ss_object *, (unsigned (*hash)(const void *), int (*equal)(const void *, const void *)))  \
    X(g_hash_table_insert, int, (ss_object *table, void *key, void *value))                                       \
    X(g_hash_table_unref, void, (ss_object *table))                                                               \
    X(g_str_hash, unsigned, (const void *text))                                                                   \
    X(g_str_equal, int, (const void *a, const void *b))

static struct {
    SS_FUNCTIONS(KEYBAY_LAZY_TYPED_POINTER)
} ss_lib; /* filled only when every symbol resolved */
#define SS(name) (ss_lib.name)
static const char *const ss_names[] = { SS_FUNCTIONS(KEYBAY_LAZY_TYPED_NAME) };
/* Lazy binding: a lookup calls few of GIO's and libsecret's functions; libsecret's dependencies
   (GLib, GIO) are searched through its handle. */
KEYBAY_LAZY_LIBRARY(ss_library, SS_LIBRARY, RTLD_LAZY, ss_names, ss_lib);

/* ---- errors ---- */

/* A GError's message (freed here) in a failure line. */
static keybay_status fail_error(const keybay_host *host, keybay_status status, const char *what, ss_error *error) {
    keybay_status s = fail(host, status, "%s: %s", what, error && error->message ? error->message : "no reason given");
    if (error) SS(g_error_free)(error);
    return s;
}

/* ---- the connection ---- */

/* The object path of this process's "plain" session, once opened. Reading the key uses it:
   the key then crosses the session bus unencrypted, which only processes of the same user (or
   root) can watch, and they may ask the Secret Service for the item themselves; the encrypted
   session libsecret would negotiate (1024-bit Diffie-Hellman through libgcrypt, on both sides)
   cost more than the rest of a `get`. Creating an item and raising the floor go through
   libsecret, which opens its encrypted session for them. */
static char plain_session[512];

/* Never starts a session bus (keybay_rf_check_session_bus says how). */
static keybay_status check_session_bus(const keybay_host *host) {
    return keybay_rf_check_session_bus(host, "secret-service", SERVICE_NAME);
}

/* The Secret Service (libsecret keeps one connection per process), answering: its plain
   session is open. NOT_AVAILABLE names what was looked for when libsecret is missing, there is
   no session bus (check_session_bus), or nothing answers on the bus. */
static keybay_status connect_service(const keybay_host *host, ss_object **service) {
    const char *why = keybay_lazy_library_open(&ss_library);
    if (why != NULL) {
        keybay_host_error_reason(host, "library-missing");
        return fail(host, KEYBAY_ERR_NOT_AVAILABLE, "cannot load " SS_LIBRARY " (%s); the secret-service root needs libsecret (Debian: libsecret-1-0) and " SERVICE_NAME, why);
    }
    keybay_status s = check_session_bus(host);
    if (s != KEYBAY_OK) return s;
    ss_error *error = NULL;
    *service = SS(secret_service_get_sync)(0 /* SECRET_SERVICE_NONE */, NULL, &error);
    if (*service == NULL) {
        keybay_host_error_reason(host, "no-service");
        return fail_error(host, KEYBAY_ERR_NOT_AVAILABLE, "no answer from " SERVICE_NAME, error);
    }
    if (plain_session[0]) return KEYBAY_OK;
    ss_object *reply = SS(g_dbus_proxy_call_sync)(*service, "OpenSession", SS(g_variant_new)("(sv)", "plain", SS(g_variant_new_string)("")),
                                                  0, -1, NULL, &error);
    if (reply == NULL) return fail_error(host, KEYBAY_ERR_NOT_AVAILABLE, "no answer from " SERVICE_NAME, error);
    ss_object *output = NULL;
    char *path = NULL;
    SS(g_variant_get)(reply, "(vo)", &output, &path);
    snprintf(plain_session, sizeof plain_session, "%s", path ? path : "");
    SS(g_free)(path);
    if (output) SS(g_variant_unref)(output);
    SS(g_variant_unref)(reply);
    if (!plain_session[0] || strlen(plain_session) >= sizeof plain_session - 1)
        return fail(host, KEYBAY_ERR_IO, SERVICE_NAME " opened no usable session");
    return KEYBAY_OK;
}

/* The secret of item `path` through the plain session, copied into guarded memory (`*out`,
   `*length`); the copy in the reply is wiped before it is released (GLib's own buffers on the
   way are not ours to wipe). */
static keybay_status get_secret(const keybay_host *host, ss_object *service, const char *path, uint8_t **out, size_t *length) {
    const char *paths[2] = { path, NULL };
    ss_error *error = NULL;
    ss_object *reply = SS(g_dbus_proxy_call_sync)(service, "GetSecrets", SS(g_variant_new)("(^aoo)", paths, plain_session), 0, -1, NULL, &error);
    if (reply == NULL) return fail_error(host, KEYBAY_ERR_IO, "cannot read the keyring item", error);
    keybay_status s = KEYBAY_ERR_IO;
    ss_object *secrets = SS(g_variant_get_child_value)(reply, 0);
    for (size_t i = 0, n = SS(g_variant_n_children)(secrets); i < n && s != KEYBAY_OK; i++) {
        ss_object *entry = SS(g_variant_get_child_value)(secrets, i);
        ss_object *key = SS(g_variant_get_child_value)(entry, 0);
        ss_object *secret = SS(g_variant_get_child_value)(entry, 1);
        ss_object *value = SS(g_variant_get_child_value)(secret, 2);
        size_t count = 0;
        uint8_t *bytes = (uint8_t *)SS(g_variant_get_fixed_array)(value, &count, 1);
        if (strcmp(SS(g_variant_get_string)(key, NULL), path) == 0 && count <= ROOT_BYTES + FLOOR_BYTES) {
            *out = sodium_malloc(count ? count : 1);
            *length = count;
            if (*out) {
                if (count) memcpy(*out, bytes, count);
                s = KEYBAY_OK;
            } else {
                s = fail(host, KEYBAY_ERR_INTERNAL, "out of memory");
            }
        }
        if (bytes && count) sodium_memzero(bytes, count);
        SS(g_variant_unref)(value);
        SS(g_variant_unref)(secret);
        SS(g_variant_unref)(key);
        SS(g_variant_unref)(entry);
    }
    SS(g_variant_unref)(secrets);
    SS(g_variant_unref)(reply);
    if (s == KEYBAY_ERR_IO) return fail(host, s, "the Secret Service returned no usable secret for %s", path);
    return s;
}

typedef struct item_query {
    char application[128];
    char domain_hex[65];
    char label[160];
    const char *state_home; /* the context's, which outlives the query */
    ss_object *attributes;  /* GHashTable of the three attributes, pointing into the fields above */
} item_query;

static keybay_status make_query(const keybay_host *host, const keybay_root_context *c, item_query *q) {
    memset(q, 0, sizeof *q);
    if (strlen(c->application_id) >= sizeof q->application) return fail(host, KEYBAY_ERR_INTERNAL, "application id too long");
    strcpy(q->application, c->application_id);
    if (c->state_home == NULL || c->state_home[0] != '/') return fail(host, KEYBAY_ERR_INTERNAL, "the state home is not an absolute path");
    q->state_home = c->state_home;
    sodium_bin2hex(q->domain_hex, sizeof q->domain_hex, c->storage_domain, 32);
    snprintf(q->label, sizeof q->label, LABEL_PREFIX "%s", c->application_id);
    q->attributes = SS(g_hash_table_new)(SS(g_str_hash), SS(g_str_equal));
    if (q->attributes == NULL) return fail(host, KEYBAY_ERR_INTERNAL, "out of memory");
    SS(g_hash_table_insert)(q->attributes, (void *)ATTRIBUTE_APP, q->application);
    SS(g_hash_table_insert)(q->attributes, (void *)ATTRIBUTE_DOMAIN, q->domain_hex);
    SS(g_hash_table_insert)(q->attributes, (void *)ATTRIBUTE_STATE_HOME, (void *)q->state_home);
    return KEYBAY_OK;
}

static void free_query(item_query *q) {
    if (q->attributes) SS(g_hash_table_unref)(q->attributes);
    q->attributes = NULL;
}

/* Where this store's item may be, as object paths the Secret Service allocated (NULL-terminated
   lists or NULL; free_found frees them):
     unlocked  the items of this store's schema and attributes that are unlocked;
     locked    those that are locked, or when the search finds none, the locked items with the
               three attributes whatever their schema says;
     hidden    when nothing at all was found and the default collection is locked: its path.
   Anything in `locked` or `hidden` means the item may exist without this process being able to
   see it: a locked item is never a missing one (find_unlocked).

   The second search is gnome-keyring's locked keyring loaded from its file (after the daemon
   restarted: a logout, a crash, a session whose keyring was not unlocked at login). Until it is
   unlocked its items show only hashes of their attributes and xdg:schema
   org.freedesktop.Secret.Generic (the item type kept in the clear), so a search naming the
   schema never matches them, while the three attributes do (the daemon compares their hashes);
   an unlocked item it finds has another schema and is not this store's. The default collection
   is where the item is created: a Secret Service that hides a locked collection's items from
   every search leaves nothing else to go by. */
typedef struct found {
    char **unlocked, **locked;
    char hidden[512];
} found;

static void free_found(found *f) {
    if (f->unlocked) SS(g_strfreev)(f->unlocked);
    if (f->locked) SS(g_strfreev)(f->locked);
    memset(f, 0, sizeof *f);
}

static keybay_status search_paths(const keybay_host *host, ss_object *service, const item_query *q, found *f) {
    memset(f, 0, sizeof *f);
    ss_error *error = NULL;
    if (!SS(secret_service_search_for_dbus_paths_sync)(service, &schema, q->attributes, NULL, &f->unlocked, &f->locked, &error))
        return fail_error(host, KEYBAY_ERR_IO, "searching " SERVICE_NAME " failed", error);
    if ((f->unlocked && f->unlocked[0]) || (f->locked && f->locked[0])) return KEYBAY_OK;
    free_found(f);
    char **other = NULL;
    if (!SS(secret_service_search_for_dbus_paths_sync)(service, &schema_attributes_only, q->attributes, NULL, &other, &f->locked, &error))
        return fail_error(host, KEYBAY_ERR_IO, "searching " SERVICE_NAME " failed", error);
    if (other) SS(g_strfreev)(other);
    if (f->locked && f->locked[0]) return KEYBAY_OK;
    ss_object *collection = SS(secret_collection_for_alias_sync)(service, "default", COLLECTION_NONE, NULL, &error);
    if (error) { free_found(f); return fail_error(host, KEYBAY_ERR_IO, "cannot find the default collection of " SERVICE_NAME, error); }
    keybay_status s = KEYBAY_OK;
    if (collection && SS(secret_collection_get_locked)(collection)) {
        const char *path = SS(g_dbus_proxy_get_object_path)(collection);
        if (path && path[0] && strlen(path) < sizeof f->hidden) snprintf(f->hidden, sizeof f->hidden, "%s", path);
        else s = fail(host, KEYBAY_ERR_IO, "the default collection of " SERVICE_NAME " is locked and has no usable object path");
    }
    if (collection) SS(g_object_unref)(collection);
    if (s != KEYBAY_OK) free_found(f);
    return s;
}

/* A locked item or collection (the object paths, NULL-terminated) is interaction: the host's
   confirm decides whether the Secret Service's own unlock prompt may run; a host that cannot
   ask passes INTERACTION_UNAVAILABLE on. Nothing unlocked afterwards is CANCELLED (the prompt
   was dismissed or could not be shown); whether all of them are is for the caller's next search
   to see. */
static keybay_status unlock(const keybay_host *host, ss_object *service, const char **paths, const char *what) {
    char question[512];
    snprintf(question, sizeof question, "%s is locked; unlock it with the desktop keyring's own prompt?", what);
    int answer = 0;
    keybay_status s = KEYBAY_HOST_HAS(host, confirm) ? host->confirm(host->context, question, &answer) : KEYBAY_ERR_INTERACTION_UNAVAILABLE;
    if (s == KEYBAY_ERR_INTERACTION_UNAVAILABLE) {
        keybay_host_error_reason(host, "keyring-locked");
        return fail(host, s, "%s is locked, and unlocking it needs the keyring's prompt, which this run may not show", what);
    }
    if (s != KEYBAY_OK) return s;
    if (!answer) {
        keybay_host_error_reason(host, "unlock-declined");
        return fail(host, KEYBAY_ERR_CANCELLED, "%s stays locked (unlocking was declined)", what);
    }
    char **unlocked = NULL;
    ss_error *error = NULL;
    int count = SS(secret_service_unlock_dbus_paths_sync)(service, paths, NULL, &unlocked, &error);
    if (unlocked) SS(g_strfreev)(unlocked);
    if (error) return fail_error(host, KEYBAY_ERR_CANCELLED, "the keyring's unlock prompt failed", error);
    if (count < 1) {
        keybay_host_error_reason(host, "unlock-dismissed");
        return fail(host, KEYBAY_ERR_CANCELLED, "%s stays locked (the keyring's prompt was dismissed)", what);
    }
    return KEYBAY_OK;
}

/* Connects, builds this store's query and finds its items, unlocked: the start of every
   operation that uses or removes the item, and of root_exists. Whatever may hold the item
   locked (search_paths) is unlocked first and the search runs again, so the answer is never
   "missing" while the item could be there: INTERACTION_UNAVAILABLE or CANCELLED instead. The
   caller frees `q` and `*paths` (g_strfreev) whatever the status. */
static keybay_status find_unlocked(const keybay_host *host, const keybay_root_context *c, ss_object **service,
                                   item_query *q, char ***paths) {
    *paths = NULL;
    memset(q, 0, sizeof *q);
    keybay_status s = connect_service(host, service);
    if (s == KEYBAY_OK) s = make_query(host, c, q);
    for (int round = 0; s == KEYBAY_OK; round++) {
        found f;
        if ((s = search_paths(host, *service, q, &f)) != KEYBAY_OK) break;
        size_t n = 0;
        while (f.locked && f.locked[n]) n++;
        if (n == 0 && !f.hidden[0]) {
            *paths = f.unlocked;
            f.unlocked = NULL;
            free_found(&f);
            break;
        }
        char what[256];
        if (n > 0) snprintf(what, sizeof what, "the keyring holding '%s'", q->label);
        else snprintf(what, sizeof what, "the default keyring, which may hold '%s',", q->label);
        const char **pending = calloc(n + 2, sizeof *pending);
        if (!pending) s = fail(host, KEYBAY_ERR_INTERNAL, "out of memory");
        else if (round > 0) s = fail(host, KEYBAY_ERR_CANCELLED, "%s is still locked after it was unlocked", what);
        else {
            for (size_t i = 0; i < n; i++) pending[i] = f.locked[i];
            if (n == 0) pending[0] = f.hidden;
            s = unlock(host, *service, pending, what);
        }
        free(pending);
        free_found(&f);
    }
    return s;
}

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

static keybay_status copy_text(const keybay_host *host, const char *text, size_t length, keybay_buffer *text_out) {
    if (!buffer_alloc(text_out, length)) return fail(host, KEYBAY_ERR_INTERNAL, "out of memory");
    memcpy(text_out->data, text, length);
    return KEYBAY_OK;
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
        s = copy_text(host, text, strlen(text), text_out);
    }
    free_found(&f);
    free_query(&q);
    return s;
}

static const char protection_note[] =
    "secret-service keeps the platform key in the desktop keyring: it protects against copied files, backups "
    "and other users, and while the keyring is locked against everyone; not against programs running as this "
    "user while it is unlocked";

static keybay_status root_protection(const keybay_host *host, const keybay_root_context *c, keybay_buffer *text_out) {
    (void)c;
    return copy_text(host, protection_note, sizeof protection_note - 1, text_out);
}

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
