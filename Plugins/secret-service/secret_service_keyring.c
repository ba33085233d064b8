// SPDX-License-Identifier: Apache-2.0
/* The Secret Service through libsecret-1, opened on first use: see secret_service_keyring.h. */
#define _POSIX_C_SOURCE 200809L

#include "secret_service_keyring.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "keybay_plugin_host.h"

/* Here, where it is opened: PackagingTests reads the sonames from the .c files. */
#define SS_LIBRARY "libsecret-1.so.0"
#include "keybay_root_files.h"

#define fail keybay_rf_fail

const ss_schema schema = {
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

struct ss_lib ss_lib; /* filled only when every symbol resolved */
/* Lazy binding: a lookup calls few of GIO's and libsecret's functions; libsecret's dependencies
   (GLib, GIO) are searched through its handle. */
KEYBAY_LAZY_LIBRARY(ss_library, SS_LIBRARY, RTLD_LAZY, ss_lib, SS_FUNCTIONS, KEYBAY_LAZY_TYPED_NAME);

/* ---- errors ---- */

/* A GError's message (freed here) in a failure line. */
keybay_status fail_error(const keybay_host *host, keybay_status status, const char *what, ss_error *error) {
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
keybay_status connect_service(const keybay_host *host, ss_object **service) {
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
keybay_status get_secret(const keybay_host *host, ss_object *service, const char *path, uint8_t **out, size_t *length) {
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


keybay_status make_query(const keybay_host *host, const keybay_root_context *c, item_query *q) {
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

void free_query(item_query *q) {
    if (q->attributes) SS(g_hash_table_unref)(q->attributes);
    q->attributes = NULL;
}

void free_found(found *f) {
    if (f->unlocked) SS(g_strfreev)(f->unlocked);
    if (f->locked) SS(g_strfreev)(f->locked);
    memset(f, 0, sizeof *f);
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

keybay_status search_paths(const keybay_host *host, ss_object *service, const item_query *q, found *f) {
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
keybay_status unlock(const keybay_host *host, ss_object *service, const char **paths, const char *what) {
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
keybay_status find_unlocked(const keybay_host *host, const keybay_root_context *c, ss_object **service,
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

