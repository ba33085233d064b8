// SPDX-License-Identifier: Apache-2.0
/*
 * Secret Service items through libsecret-1, opened with dlopen (keybay_secret_items.h). The
 * few GLib and libsecret types used are declared here, as their public headers declare them.
 */
#define _POSIX_C_SOURCE 200809L

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "keybay_secret_items.h"

typedef struct { uint32_t domain; int code; char *message; } si_error;   /* GError */
typedef struct si_list { void *data; struct si_list *next, *prev; } si_list; /* GList */
typedef void si_object; /* SecretService, SecretItem, SecretValue, GHashTable */

enum {
    SERVICE_OPEN_SESSION = 1 << 1, /* SECRET_SERVICE_OPEN_SESSION */
    SEARCH_ALL = 1 << 1,           /* SECRET_SEARCH_ALL */
    SEARCH_UNLOCK = 1 << 2,        /* SECRET_SEARCH_UNLOCK */
    SEARCH_LOAD_SECRETS = 1 << 3,  /* SECRET_SEARCH_LOAD_SECRETS */
};

#define SI_FUNCTIONS(X)                                                                                            \
    X(secret_service_get_sync, si_object *, (int flags, void *cancellable, si_error **error))                      \
    X(secret_service_search_sync, si_list *, (si_object *service, const void *schema, si_object *attributes,      \
                                              int flags, void *cancellable, si_error **error))                     \
    X(secret_item_get_locked, int, (si_object *item))                                                              \
    X(secret_item_get_secret, si_object *, (si_object *item))                                                      \
    X(secret_item_get_attributes, si_object *, (si_object *item))                                                  \
    X(secret_item_delete_sync, int, (si_object *item, void *cancellable, si_error **error))                        \
    X(secret_value_get, const char *, (si_object *value, size_t *length))                                          \
    X(secret_value_unref, void, (si_object *value))                                                                \
    X(g_hash_table_new, si_object *, (unsigned (*hash)(const void *), int (*equal)(const void *, const void *)))   \
    X(g_hash_table_insert, int, (si_object *table, void *key, void *value))                                        \
    X(g_hash_table_lookup, void *, (si_object *table, const void *key))                                            \
    X(g_hash_table_unref, void, (si_object *table))                                                                \
    X(g_str_hash, unsigned, (const void *text))                                                                    \
    X(g_str_equal, int, (const void *a, const void *b))                                                            \
    X(g_list_free_full, void, (si_list *list, void (*free)(void *)))                                              \
    X(g_list_free, void, (si_list *list))                                                                          \
    X(g_object_unref, void, (void *object))                                                                        \
    X(g_error_free, void, (si_error *error))

#define SI_POINTER(name, result, parameters) result(*name) parameters;
static struct { SI_FUNCTIONS(SI_POINTER) } si;
#undef SI_POINTER

static pthread_once_t once = PTHREAD_ONCE_INIT;
static int loaded;
static char load_error[256];

static void load(void) {
    void *handle = dlopen("libsecret-1.so.0", RTLD_LAZY | RTLD_LOCAL);
    if (!handle) { snprintf(load_error, sizeof load_error, "%s", dlerror()); return; }
#define SI_RESOLVE(name, result, parameters)                                                  \
    if ((*(void **)&si.name = dlsym(handle, #name)) == NULL) {                                  \
        snprintf(load_error, sizeof load_error, "libsecret-1.so.0 has no %s", #name);          \
        dlclose(handle);                                                                        \
        return;                                                                                 \
    }
    SI_FUNCTIONS(SI_RESOLVE)
#undef SI_RESOLVE
    loaded = 1;
}

struct keybay_secret_items {
    si_object **items;
    si_object **values;     /* each item's SecretValue, once read */
    si_object **attributes; /* each item's attribute table */
    size_t count;
};

static int failure(int code, si_error *error, const char *what, char *message, size_t capacity) {
    snprintf(message, capacity, "%s: %s", what, error && error->message ? error->message : "no reason given");
    if (error) si.g_error_free(error);
    return code;
}

int keybay_secret_items_search(const char *const *names, const char *const *values, size_t count, int unlock,
                               keybay_secret_items **out, char *message, size_t capacity) {
    *out = NULL;
    pthread_once(&once, load);
    if (!loaded) { snprintf(message, capacity, "libsecret cannot be loaded: %s", load_error); return KEYBAY_SECRET_ITEMS_UNAVAILABLE; }
    si_error *error = NULL;
    si_object *service = si.secret_service_get_sync(SERVICE_OPEN_SESSION, NULL, &error);
    if (!service) return failure(KEYBAY_SECRET_ITEMS_UNAVAILABLE, error, "no Secret Service answers on the session bus", message, capacity);
    si_object *query = si.g_hash_table_new(si.g_str_hash, si.g_str_equal);
    for (size_t i = 0; i < count; i++) si.g_hash_table_insert(query, (void *)names[i], (void *)values[i]);
    si_list *found = si.secret_service_search_sync(service, NULL, query, SEARCH_ALL | SEARCH_LOAD_SECRETS | (unlock ? SEARCH_UNLOCK : 0),
                                                   NULL, &error);
    si.g_hash_table_unref(query);
    if (error) {
        si.g_object_unref(service);
        return failure(KEYBAY_SECRET_ITEMS_FAILED, error, "the Secret Service search failed", message, capacity);
    }
    keybay_secret_items *list = calloc(1, sizeof *list);
    size_t n = 0;
    for (si_list *l = found; l; l = l->next) n++;
    int code = KEYBAY_SECRET_ITEMS_OK;
    if (list) {
        list->items = calloc(n + 1, sizeof *list->items);
        list->values = calloc(n + 1, sizeof *list->values);
        list->attributes = calloc(n + 1, sizeof *list->attributes);
    }
    if (!list || !list->items || !list->values || !list->attributes) {
        snprintf(message, capacity, "out of memory");
        code = KEYBAY_SECRET_ITEMS_FAILED;
        n = 0;
        found = found ? (si.g_list_free_full(found, si.g_object_unref), NULL) : NULL;
    }
    for (si_list *l = found; l; l = l->next) {
        si_object *item = l->data;
        if (si.secret_item_get_locked(item)) {
            snprintf(message, capacity, unlock ? "a matching item stays locked (its keyring's unlock was dismissed)"
                                               : "a matching item is in a locked keyring");
            code = KEYBAY_SECRET_ITEMS_LOCKED;
            break;
        }
        list->items[list->count] = item;
        list->attributes[list->count] = si.secret_item_get_attributes(item);
        list->values[list->count] = si.secret_item_get_secret(item);
        l->data = NULL; /* the list owns it now */
        list->count++;
    }
    /* The items not taken (after a locked one) are released; the list itself goes. */
    for (si_list *l = found; l; l = l->next)
        if (l->data) si.g_object_unref(l->data);
    si.g_list_free(found);
    si.g_object_unref(service);
    if (code != KEYBAY_SECRET_ITEMS_OK) { keybay_secret_items_free(list); return code; }
    *out = list;
    return KEYBAY_SECRET_ITEMS_OK;
}

size_t keybay_secret_items_count(const keybay_secret_items *items) { return items->count; }

const char *keybay_secret_items_attribute(const keybay_secret_items *items, size_t index, const char *name) {
    return index < items->count && items->attributes[index] ? si.g_hash_table_lookup(items->attributes[index], name) : NULL;
}

int keybay_secret_items_secret(const keybay_secret_items *items, size_t index, const uint8_t **bytes, size_t *length) {
    if (index >= items->count || !items->values[index]) return -1;
    *bytes = (const uint8_t *)si.secret_value_get(items->values[index], length);
    return *bytes ? 0 : -1;
}

int keybay_secret_items_delete(keybay_secret_items *items, size_t index, char *message, size_t capacity) {
    si_error *error = NULL;
    if (index >= items->count) return -1;
    if (!si.secret_item_delete_sync(items->items[index], NULL, &error)) {
        failure(KEYBAY_SECRET_ITEMS_FAILED, error, "the item could not be deleted", message, capacity);
        return -1;
    }
    return 0;
}

void keybay_secret_items_free(keybay_secret_items *items) {
    if (!items) return;
    for (size_t i = 0; i < items->count; i++) {
        if (items->values[i]) si.secret_value_unref(items->values[i]); /* libsecret wipes the secret's memory */
        if (items->attributes[i]) si.g_hash_table_unref(items->attributes[i]);
        if (items->items[i]) si.g_object_unref(items->items[i]);
    }
    free(items->items);
    free(items->values);
    free(items->attributes);
    free(items);
}
