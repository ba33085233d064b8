// SPDX-License-Identifier: Apache-2.0
#include "keybay_value_arena.h"
#include <pthread.h>
#include <sodium.h>
#include <stdint.h>
#include <stdlib.h>

// 512 slots of 128 bytes: 64 KiB, one guarded region. Arenas are added when all slots are taken
// and kept for the life of the process (a host holding many values at once needs them again).
enum { SLOTS = 512, WORDS = SLOTS / 64 };

struct arena {
    struct arena *next;
    unsigned char *slots;        // SLOTS * KEYBAY_VALUE_SLOT bytes, from sodium_malloc
    uint64_t used[WORDS];        // a set bit: the slot is handed out
    unsigned taken;
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct arena *arenas;

static struct arena *owner(const void *value) {
    const unsigned char *p = value;
    for (struct arena *a = arenas; a; a = a->next)
        if (p >= a->slots && p < a->slots + (size_t)SLOTS * KEYBAY_VALUE_SLOT) return a;
    return NULL;
}

static void *take_slot(struct arena *a) {
    for (unsigned w = 0; w < WORDS; w++) {
        if (a->used[w] == UINT64_MAX) continue;
        unsigned bit = (unsigned)__builtin_ctzll(~a->used[w]);
        a->used[w] |= UINT64_C(1) << bit;
        a->taken++;
        return a->slots + (size_t)(w * 64 + bit) * KEYBAY_VALUE_SLOT;
    }
    return NULL;
}

void *keybay_value_alloc(size_t length) {
    if (length > KEYBAY_VALUE_SLOT) return sodium_malloc(length);
    pthread_mutex_lock(&lock);
    void *slot = NULL;
    for (struct arena *a = arenas; a && !slot; a = a->next)
        if (a->taken < SLOTS) slot = take_slot(a);
    if (!slot) {
        struct arena *a = calloc(1, sizeof *a);
        unsigned char *slots = a ? sodium_malloc((size_t)SLOTS * KEYBAY_VALUE_SLOT) : NULL;
        if (slots) {
            sodium_memzero(slots, (size_t)SLOTS * KEYBAY_VALUE_SLOT); // sodium_malloc fills with 0xdb
            a->slots = slots;
            a->next = arenas;
            arenas = a;
            slot = take_slot(a);
        } else {
            free(a);
        }
    }
    pthread_mutex_unlock(&lock);
    return slot;
}

void keybay_value_release(void *value) {
    if (!value) return;
    pthread_mutex_lock(&lock);
    struct arena *a = owner(value);
    if (a) {
        size_t index = (size_t)((unsigned char *)value - a->slots) / KEYBAY_VALUE_SLOT;
        sodium_memzero(a->slots + index * KEYBAY_VALUE_SLOT, KEYBAY_VALUE_SLOT);
        a->used[index / 64] &= ~(UINT64_C(1) << (index % 64));
        a->taken--;
    }
    pthread_mutex_unlock(&lock);
    if (!a) sodium_free(value); // wipes the whole allocation, then unmaps it
}
