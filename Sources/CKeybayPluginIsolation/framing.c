// SPDX-License-Identifier: Apache-2.0
/* The isolation frames (keybay_isolation_framing.h): building, sending, receiving, reading. */
#include "keybay_isolation_framing.h"

#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static void wipe(void *p, size_t n) {
    if (p != NULL && n > 0) explicit_bzero(p, n);
}

static void put_le32(uint8_t *p, uint32_t v) {
    p[0] = (uint8_t)v; p[1] = (uint8_t)(v >> 8); p[2] = (uint8_t)(v >> 16); p[3] = (uint8_t)(v >> 24);
}

static uint32_t get_le32(const uint8_t *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* Grows the buffer without realloc, so that no copy of a secret is left in freed memory. */
static void reserve(keybay_frame_out *f, size_t more) {
    if (f->failed) return;
    if (more > KEYBAY_FRAME_MAX || f->length + more > KEYBAY_FRAME_MAX + 4) { f->failed = 1; return; }
    if (f->length + more <= f->capacity) return;
    size_t capacity = f->capacity ? f->capacity : 256;
    while (capacity < f->length + more) capacity *= 2;
    uint8_t *grown = malloc(capacity);
    if (grown == NULL) { f->failed = 1; return; }
    if (f->data != NULL) { memcpy(grown, f->data, f->length); wipe(f->data, f->capacity); free(f->data); }
    f->data = grown;
    f->capacity = capacity;
}

void keybay_frame_begin(keybay_frame_out *f, uint8_t type) {
    memset(f, 0, sizeof *f);
    reserve(f, 5);
    if (f->failed) return;
    f->length = 5; /* the length is filled in when sent */
    f->data[4] = type;
}

void keybay_frame_add_bytes(keybay_frame_out *f, const void *bytes, size_t length) {
    reserve(f, 4 + length);
    if (f->failed) return;
    put_le32(f->data + f->length, (uint32_t)length);
    if (length > 0) memcpy(f->data + f->length + 4, bytes, length);
    f->length += 4 + length;
}

void keybay_frame_add_u32(keybay_frame_out *f, uint32_t value) {
    uint8_t b[4];
    put_le32(b, value);
    keybay_frame_add_bytes(f, b, 4);
}

void keybay_frame_add_string(keybay_frame_out *f, const char *text) {
    keybay_frame_add_u32(f, text != NULL);
    keybay_frame_add_bytes(f, text, text != NULL ? strlen(text) : 0);
}

void keybay_frame_discard(keybay_frame_out *f) {
    wipe(f->data, f->capacity);
    free(f->data);
    memset(f, 0, sizeof *f);
}

/* One send of what is left from `from`; the first one (from 0) carries `descriptor` when >= 0. */
static ssize_t send_part(int fd, const keybay_frame_out *f, size_t from, int descriptor) {
    if (from > 0 || descriptor < 0) return send(fd, f->data + from, f->length - from, MSG_NOSIGNAL);
    union { char bytes[CMSG_SPACE(sizeof(int))]; struct cmsghdr align; } control;
    memset(&control, 0, sizeof control);
    struct iovec part = { .iov_base = f->data, .iov_len = f->length };
    struct msghdr m = { .msg_iov = &part, .msg_iovlen = 1, .msg_control = control.bytes, .msg_controllen = sizeof control.bytes };
    struct cmsghdr *c = CMSG_FIRSTHDR(&m);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int));
    memcpy(CMSG_DATA(c), &descriptor, sizeof(int));
    return sendmsg(fd, &m, MSG_NOSIGNAL);
}

int keybay_frame_send_descriptor(int fd, keybay_frame_out *f, int descriptor) {
    int result = -1;
    if (!f->failed && f->data != NULL) {
        put_le32(f->data, (uint32_t)(f->length - 4));
        size_t sent = 0;
        while (sent < f->length) {
            ssize_t n = send_part(fd, f, sent, descriptor);
            if (n < 0 && errno == EINTR) continue;
            if (n <= 0) break;
            sent += (size_t)n;
        }
        if (sent == f->length) result = 0;
    }
    keybay_frame_discard(f);
    return result;
}

int keybay_frame_send(int fd, keybay_frame_out *f) { return keybay_frame_send_descriptor(fd, f, -1); }

static int64_t now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

/* Waits until `fd` is readable or `deadline` (CLOCK_MONOTONIC ms; -1: none) passes. 0 readable,
   2 past the deadline, -1 on an error. */
static int wait_readable(int fd, int64_t deadline) {
    for (;;) {
        int wait = -1;
        if (deadline >= 0) {
            int64_t left = deadline - now_ms();
            if (left <= 0) return 2;
            wait = left > 60000 ? 60000 : (int)left;
        }
        struct pollfd p = { .fd = fd, .events = POLLIN };
        int r = poll(&p, 1, wait);
        if (r > 0) return 0;
        if (r < 0 && errno != EINTR) return -1;
    }
}

/* Reads exactly n bytes by `deadline` (-1: none); 0, 1 (closed before any byte when `first`),
   2 (the deadline passed), or -1. Each recv waits for readiness first, so bytes that trickle in
   never hold the reader past the deadline. */
static int read_exactly(int fd, uint8_t *p, size_t n, int first, int64_t deadline) {
    size_t got = 0;
    while (got < n) {
        if (deadline >= 0) {
            int w = wait_readable(fd, deadline);
            if (w != 0) return w;
        }
        ssize_t r = recv(fd, p + got, n - got, 0);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) && deadline >= 0) continue;
        if (r == 0) return (first && got == 0) ? 1 : -1;
        if (r < 0) return (errno == ECONNRESET && first && got == 0) ? 1 : -1;
        got += (size_t)r;
    }
    return 0;
}

int keybay_frame_receive(int fd, int timeout_ms, int whole_ms, keybay_frame_in *f) {
    memset(f, 0, sizeof *f);
    if (timeout_ms >= 0) {
        int w = wait_readable(fd, now_ms() + timeout_ms);
        if (w != 0) return w;
    }
    /* From the first byte on, the frame arrives whole within whole_ms, or it is refused. */
    int64_t deadline = whole_ms >= 0 ? now_ms() + whole_ms : -1;
    uint8_t head[4];
    int r = read_exactly(fd, head, 4, 1, deadline);
    if (r == 2) return -1;
    if (r != 0) return r;
    uint32_t length = get_le32(head);
    if (length < 1 || length > KEYBAY_FRAME_MAX) return -1;
    f->data = malloc(length);
    if (f->data == NULL) return -1;
    f->length = length;
    if (read_exactly(fd, f->data, length, 0, deadline) != 0) { keybay_frame_release(f); return -1; }
    f->type = f->data[0];
    size_t at = 1;
    while (at < length) {
        if (f->item_count == KEYBAY_FRAME_MAX_ITEMS || length - at < 4) { keybay_frame_release(f); return -1; }
        uint32_t n = get_le32(f->data + at);
        at += 4;
        if (n > length - at) { keybay_frame_release(f); return -1; }
        f->item[f->item_count] = f->data + at;
        f->item_length[f->item_count] = n;
        f->item_count++;
        at += n;
    }
    return 0;
}

/* Takes the descriptors that arrive with the next byte without reading it (MSG_PEEK installs
   them; it waits for that byte): exactly one is kept in `*descriptor`. 0, or -1 when more came
   or on error. */
static int peek_descriptor(int fd, int *descriptor) {
    union { char bytes[CMSG_SPACE(2 * sizeof(int))]; struct cmsghdr align; } control;
    memset(&control, 0, sizeof control);
    uint8_t first;
    struct iovec part = { .iov_base = &first, .iov_len = 1 };
    struct msghdr m = { .msg_iov = &part, .msg_iovlen = 1, .msg_control = control.bytes, .msg_controllen = sizeof control.bytes };
    ssize_t n;
    do { n = recvmsg(fd, &m, MSG_PEEK | MSG_CMSG_CLOEXEC); } while (n < 0 && errno == EINTR);
    if (n < 0) return -1;
    int extra = (m.msg_flags & MSG_CTRUNC) != 0;
    for (struct cmsghdr *c = CMSG_FIRSTHDR(&m); c != NULL; c = CMSG_NXTHDR(&m, c)) {
        if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
        size_t count = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
        for (size_t i = 0; i < count; i++) {
            int d;
            memcpy(&d, CMSG_DATA(c) + i * sizeof(int), sizeof d);
            if (*descriptor < 0) *descriptor = d;
            else { close(d); extra = 1; }
        }
    }
    if (extra && *descriptor >= 0) { close(*descriptor); *descriptor = -1; }
    return extra ? -1 : 0;
}

int keybay_frame_receive_descriptor(int fd, keybay_frame_in *f, int *descriptor) {
    memset(f, 0, sizeof *f);
    *descriptor = -1;
    int r = peek_descriptor(fd, descriptor);
    if (r == 0) r = keybay_frame_receive(fd, -1, -1, f);
    if (r != 0 && *descriptor >= 0) { close(*descriptor); *descriptor = -1; }
    return r;
}

void keybay_frame_release(keybay_frame_in *f) {
    wipe(f->data, f->length);
    free(f->data);
    memset(f, 0, sizeof *f);
}

int keybay_frame_u32(const keybay_frame_in *f, size_t i, uint32_t *out) {
    if (i >= f->item_count || f->item_length[i] != 4) return -1;
    *out = get_le32(f->item[i]);
    return 0;
}

int keybay_frame_string(const keybay_frame_in *f, size_t i, char **out) {
    uint32_t present;
    *out = NULL;
    if (keybay_frame_u32(f, i, &present) != 0 || present > 1 || i + 1 >= f->item_count) return -1;
    if (!present) return f->item_length[i + 1] == 0 ? 0 : -1;
    size_t n = f->item_length[i + 1];
    if (memchr(f->item[i + 1], 0, n) != NULL) return -1;
    char *s = malloc(n + 1);
    if (s == NULL) return -1;
    memcpy(s, f->item[i + 1], n);
    s[n] = 0;
    *out = s;
    return 0;
}
