// SPDX-License-Identifier: Apache-2.0
/*
 * The secret-service root's side of the Secret Service: libsecret-1 opened on first use (the few
 * GLib and libsecret types it uses, as their public headers declare them), the connection and
 * its plain session, this store's item query, and finding the item unlocked
 * (secret_service_keyring.c). The item's meaning is secret_service.c's.
 */
#ifndef KEYBAY_SECRET_SERVICE_KEYRING_H
#define KEYBAY_SECRET_SERVICE_KEYRING_H

#include <stddef.h>
#include <stdint.h>

#include "keybay_lazy_library.h"
#include "keybay_plugin.h"

#define ROOT_BYTES 32
#define FLOOR_BYTES 8
#define SCHEMA_NAME "org.keybay.PlatformKey"
#define ATTRIBUTE_APP "keybay-application"
#define ATTRIBUTE_DOMAIN "keybay-storage-domain"
#define ATTRIBUTE_STATE_HOME "keybay-state-home"
#define LABEL_PREFIX "Keybay platform key for "
#define SERVICE_NAME "the Secret Service (org.freedesktop.secrets on the D-Bus session bus)"

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

#pragma GCC visibility push(hidden)

extern struct ss_lib {
    SS_FUNCTIONS(KEYBAY_LAZY_TYPED_POINTER)
} ss_lib; /* filled once connect_service loaded libsecret */
#define SS(name) (ss_lib.name)

/* This store's schema (the item's xdg:schema and three attributes). */
extern const ss_schema schema;

typedef struct item_query {
    char application[128];
    char domain_hex[65];
    char label[160];
    const char *state_home; /* the context's, which outlives the query */
    ss_object *attributes;  /* GHashTable of the three attributes, pointing into the fields above */
} item_query;

/* A GError's message (freed here) in a failure line. */
keybay_status fail_error(const keybay_host *host, keybay_status status, const char *what, ss_error *error);
/* The Secret Service, answering, its plain session open; NOT_AVAILABLE naming what was looked for. */
keybay_status connect_service(const keybay_host *host, ss_object **service);
/* The secret of item `path` in guarded memory (`*out`, `*length`). */
keybay_status get_secret(const keybay_host *host, ss_object *service, const char *path, uint8_t **out, size_t *length);
/* This store's query (its three attributes and label); free_query releases it. */
keybay_status make_query(const keybay_host *host, const keybay_root_context *c, item_query *q);
void free_query(item_query *q);
/* Where this store's item may be (search_paths, which says how): object paths the Secret
   Service allocated; free_found frees them. */
typedef struct found {
    char **unlocked, **locked;
    char hidden[512];
} found;
keybay_status search_paths(const keybay_host *host, ss_object *service, const item_query *q, found *f);
void free_found(found *f);
/* Unlocks the locked items or collections `paths` (NULL-terminated) with the keyring's own prompt,
   once the host's confirm said yes. */
keybay_status unlock(const keybay_host *host, ss_object *service, const char **paths, const char *what);
/* Connects, makes the query and finds this store's items, unlocked (never "missing" while one may
   be locked). The caller frees `q` and `*paths` (g_strfreev) whatever the status. */
keybay_status find_unlocked(const keybay_host *host, const keybay_root_context *c, ss_object **service, item_query *q,
                            char ***paths);

#pragma GCC visibility pop

#endif /* KEYBAY_SECRET_SERVICE_KEYRING_H */
