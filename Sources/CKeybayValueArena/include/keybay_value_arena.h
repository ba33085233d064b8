// SPDX-License-Identifier: Apache-2.0
// Guarded memory for the values the C API hands out (keybay_get), without a sodium_malloc per
// value: that costs six system calls and fresh pages, several times a whole in-process get.
// Values up to KEYBAY_VALUE_SLOT bytes take a slot in an arena that is itself one sodium_malloc
// region (locked, never swapped, guard pages around the arena); larger values get their own
// sodium_malloc allocation. Freeing wipes the slot (or the allocation) first. Thread-safe.
#ifndef KEYBAY_VALUE_ARENA_H
#define KEYBAY_VALUE_ARENA_H
#include <stddef.h>

#define KEYBAY_VALUE_SLOT 128

/// Guarded memory for a value of `length` bytes (at least one byte), or NULL when none can be had.
void *keybay_value_alloc(size_t length);
/// Wipes and releases what keybay_value_alloc returned; NULL is ignored.
void keybay_value_release(void *value);
#endif
