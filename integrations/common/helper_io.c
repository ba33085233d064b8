/* SPDX-License-Identifier: Apache-2.0 */
#include "helper_io.h"

#include <errno.h>
#include <string.h>
#include <unistd.h>
#include <sys/resource.h>
#include <sodium.h>

int guarded_reserve(guarded_buffer *buffer, size_t more) {
    if (buffer->capacity - buffer->length >= more && buffer->bytes) return 0;
    if (more > SIZE_MAX / 2 - buffer->length) return -1;
    size_t capacity = buffer->capacity ? buffer->capacity : 4096;
    while (capacity - buffer->length < more) capacity *= 2;
    uint8_t *bytes = sodium_malloc(capacity);
    if (!bytes) return -1;
    if (buffer->length) memcpy(bytes, buffer->bytes, buffer->length);
    if (buffer->bytes) {
        sodium_memzero(buffer->bytes, buffer->capacity);
        sodium_free(buffer->bytes);
    }
    buffer->bytes = bytes;
    buffer->capacity = capacity;
    return 0;
}

int guarded_append(guarded_buffer *buffer, const void *bytes, size_t length) {
    if (guarded_reserve(buffer, length) != 0) return -1;
    if (length) memcpy(buffer->bytes + buffer->length, bytes, length);
    buffer->length += length;
    return 0;
}

void guarded_free(guarded_buffer *buffer) {
    if (buffer->bytes) {
        sodium_memzero(buffer->bytes, buffer->capacity);
        sodium_free(buffer->bytes);
    }
    buffer->bytes = NULL;
    buffer->length = buffer->capacity = 0;
}

int guarded_read_all(int fd, size_t limit, guarded_buffer *buffer) {
    for (;;) {
        if (guarded_reserve(buffer, 4096) != 0) return -1;
        ssize_t n = read(fd, buffer->bytes + buffer->length, buffer->capacity - buffer->length);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) return -1;
        if (n == 0) return 0;
        buffer->length += (size_t)n;
        if (buffer->length > limit) return -2;
    }
}

int write_all(int fd, const uint8_t *bytes, size_t length) {
    while (length) {
        ssize_t n = write(fd, bytes, length);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return -1;
        bytes += n;
        length -= (size_t)n;
    }
    return 0;
}

void limit_core_dumps(void) {
    struct rlimit none = {0, 0};
    (void)setrlimit(RLIMIT_CORE, &none);
}
