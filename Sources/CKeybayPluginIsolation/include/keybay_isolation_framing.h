// SPDX-License-Identifier: Apache-2.0
/*
 * keybay_isolation_framing.h — the frames the host and keybay-plugin-host exchange over their
 * socketpair (docs/plugins.md, "Isolation: the framing protocol").
 *
 * A frame is a little-endian u32 length (of what follows, at most KEYBAY_FRAME_MAX), a u8 type
 * and a body. A body is a sequence of items, each a little-endian u32 length and that many
 * bytes; a number is an item of 4 (u32, i32) bytes. Both sides check every length before using it.
 */
#ifndef KEYBAY_ISOLATION_FRAMING_H
#define KEYBAY_ISOLATION_FRAMING_H

#include <stddef.h>
#include <stdint.h>

#define KEYBAY_FRAMING_VERSION 1u
#define KEYBAY_FRAME_MAX (1u << 20)
#define KEYBAY_FRAME_MAX_ITEMS 512u

/* Frame types. Helper to host: */
#define KEYBAY_FRAME_HELLO   0x01u /* version, then the descriptor (see proxy.c) */
#define KEYBAY_FRAME_REFUSED 0x02u /* the helper could not load the plugin: reason, line */
#define KEYBAY_FRAME_SERVICE 0x10u /* a host service call from inside a plugin call */
#define KEYBAY_FRAME_RESULT  0x11u /* a plugin call's status and outputs */
/* Host to helper: */
#define KEYBAY_FRAME_CALL    0x20u /* a plugin operation and its inputs */
#define KEYBAY_FRAME_REPLY   0x21u /* a host service's answer */

/* Operations (KEYBAY_FRAME_CALL's first item). */
#define KEYBAY_OP_PROBE    1u
#define KEYBAY_OP_ENROLL   2u
#define KEYBAY_OP_UNWRAP   3u
#define KEYBAY_OP_VERIFY   4u
#define KEYBAY_OP_DESCRIBE 5u

/* Host services (KEYBAY_FRAME_SERVICE's first item). Those marked one-way get no REPLY. */
#define KEYBAY_SERVICE_ASK_SECRET       1u
#define KEYBAY_SERVICE_MESSAGE          2u
#define KEYBAY_SERVICE_CONFIRM          3u
#define KEYBAY_SERVICE_IS_CANCELLED     4u
#define KEYBAY_SERVICE_LOG              5u /* one-way */
#define KEYBAY_SERVICE_SET_ERROR        6u /* one-way */
#define KEYBAY_SERVICE_SHOW_SECRET      7u
#define KEYBAY_SERVICE_SET_ERROR_DETAIL 8u /* one-way */
#define KEYBAY_SERVICE_OPEN_FILE        9u /* the REPLY carries the descriptor (SCM_RIGHTS) when OK */
#define KEYBAY_SERVICE_CONNECT_SOCKET  10u /* likewise */

/* Bits of the descriptor's operation mask (HELLO): which operations the plugin has. */
#define KEYBAY_HAS_PROBE    0x1u
#define KEYBAY_HAS_ENROLL   0x2u
#define KEYBAY_HAS_UNWRAP   0x4u
#define KEYBAY_HAS_VERIFY   0x8u
#define KEYBAY_HAS_DESCRIBE 0x10u /* describe or describe_with_host */
#define KEYBAY_HAS_ROOT     0x20u /* any root operation */

/* A frame being built: type and body in one buffer, sent whole. */
typedef struct keybay_frame_out {
    uint8_t *data;
    size_t length;
    size_t capacity;
    int failed; /* out of memory or over KEYBAY_FRAME_MAX: the frame is not sent */
} keybay_frame_out;

/* A frame received: its items, pointing into `data`. */
typedef struct keybay_frame_in {
    uint8_t type;
    uint8_t *data;
    size_t length;
    size_t item_count;
    const uint8_t *item[KEYBAY_FRAME_MAX_ITEMS];
    uint32_t item_length[KEYBAY_FRAME_MAX_ITEMS];
} keybay_frame_in;

void keybay_frame_begin(keybay_frame_out *f, uint8_t type);
void keybay_frame_add_bytes(keybay_frame_out *f, const void *bytes, size_t length);
void keybay_frame_add_u32(keybay_frame_out *f, uint32_t value);
/* A C string, as two items: a u32 flag (1 present, 0 for NULL) and the text without its NUL. */
void keybay_frame_add_string(keybay_frame_out *f, const char *text);
/* Sends the frame (MSG_NOSIGNAL) and wipes and frees its buffer. 0 on success, -1 otherwise. */
int keybay_frame_send(int fd, keybay_frame_out *f);
/* keybay_frame_send with `descriptor` passed alongside (SCM_RIGHTS, on the frame's first byte);
   -1 passes none. The caller keeps, and closes, its own copy. */
int keybay_frame_send_descriptor(int fd, keybay_frame_out *f, int descriptor);
/* Wipes and frees a frame that will not be sent. */
void keybay_frame_discard(keybay_frame_out *f);

/* Receives one frame, waiting at most `timeout_ms` (-1: no bound) for its first byte; once that
   has come, the whole frame must arrive within `whole_ms` (-1: no bound), however its bytes
   trickle in, or it is refused as malformed. 0 on success; 1 when the peer closed the socket;
   2 on timeout; -1 on a malformed frame or an error. On success the caller calls
   keybay_frame_release. */
int keybay_frame_receive(int fd, int timeout_ms, int whole_ms, keybay_frame_in *f);
void keybay_frame_release(keybay_frame_in *f);
/* keybay_frame_receive, waiting without a bound, of a frame that may carry one descriptor
   (SCM_RIGHTS) on its first byte: `*descriptor` is it (close-on-exec, the caller's to close), or
   -1. A frame with more than one is refused (-1, none kept). Descriptors sent with any other frame
   are dropped by keybay_frame_receive, which reads without taking them. */
int keybay_frame_receive_descriptor(int fd, keybay_frame_in *f, int *descriptor);

/* Item accessors: 0 on success, -1 when item `i` is missing or of the wrong size. */
int keybay_frame_u32(const keybay_frame_in *f, size_t i, uint32_t *out);
/* The string at items i and i+1 (flag, then text), copied to a new NUL-terminated buffer; `*out` is NULL
   for an absent string. Refuses text containing NUL. The caller frees it. */
int keybay_frame_string(const keybay_frame_in *f, size_t i, char **out);

#endif
