/*
 * SPDX-License-Identifier: Apache-2.0
 * Input and output of the credential helpers in guarded memory (libsodium's sodium_malloc):
 * what a helper reads may hold a password, so it never sits in stdio's buffers or the heap.
 */
#ifndef KEYBAY_HELPER_IO_H
#define KEYBAY_HELPER_IO_H

#include <stddef.h>
#include <stdint.h>

typedef struct {
    uint8_t *bytes;   /* sodium_malloc'd; NULL until something is reserved */
    size_t length;
    size_t capacity;
} guarded_buffer;

/* Room for `more` bytes after the current length (grows by copying into a new guarded block and
 * wiping the old one); 0, or -1 when out of memory. */
int guarded_reserve(guarded_buffer *buffer, size_t more);
int guarded_append(guarded_buffer *buffer, const void *bytes, size_t length);
/* Wipes and frees; the buffer is empty afterwards. */
void guarded_free(guarded_buffer *buffer);

/* Reads `fd` to its end: 0; -1 on a read error or no memory; -2 past `limit` bytes. */
int guarded_read_all(int fd, size_t limit, guarded_buffer *buffer);
/* Writes every byte (retrying short writes and EINTR): 0, or -1. */
int write_all(int fd, const uint8_t *bytes, size_t length);

/* No core file: a helper holds passwords in memory. */
void limit_core_dumps(void);

#endif
