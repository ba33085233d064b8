// SPDX-License-Identifier: Apache-2.0
/*
 * The Secret Service's items, for `keybay-methods import secret-service`: a search by
 * attributes across every collection, each match's attributes and secret, and its deletion.
 * libsecret-1 is opened with dlopen on the first search, as the secret-service root does, so
 * nothing else of the CLI ever loads it.
 */
#ifndef KEYBAY_SECRET_ITEMS_H
#define KEYBAY_SECRET_ITEMS_H

#include <stddef.h>
#include <stdint.h>

enum {
    KEYBAY_SECRET_ITEMS_OK = 0,
    KEYBAY_SECRET_ITEMS_UNAVAILABLE = 1, /* no libsecret, or no Secret Service on the session bus */
    KEYBAY_SECRET_ITEMS_LOCKED = 2,      /* a match is locked: not unlocked, or its prompt was dismissed */
    KEYBAY_SECRET_ITEMS_FAILED = 3,      /* any other failure */
};

typedef struct keybay_secret_items keybay_secret_items;

/* The items whose attributes include every names[i] = values[i]. With `unlock`, locked matches
 * are unlocked through the Secret Service's own prompt; without, a locked match is LOCKED.
 * Returns a code above; `message` holds one line (never a secret) on failure. */
int keybay_secret_items_search(const char *const *names, const char *const *values, size_t count, int unlock,
                               keybay_secret_items **items, char *message, size_t capacity);
size_t keybay_secret_items_count(const keybay_secret_items *items);
/* The value of attribute `name` of item `index` (NUL-terminated), or NULL when it has none. */
const char *keybay_secret_items_attribute(const keybay_secret_items *items, size_t index, const char *name);
/* The secret of item `index`, valid until the list is freed: 0, or -1 when it could not be read. */
int keybay_secret_items_secret(const keybay_secret_items *items, size_t index, const uint8_t **bytes, size_t *length);
/* Deletes item `index` from the Secret Service: 0, or -1 with `message`. */
int keybay_secret_items_delete(keybay_secret_items *items, size_t index, char *message, size_t capacity);
/* Frees the list (the secrets it lent are wiped by libsecret's own free). */
void keybay_secret_items_free(keybay_secret_items *items);

#endif
