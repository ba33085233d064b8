// SPDX-License-Identifier: Apache-2.0
/* The calls of an isolated plugin (keybay_isolation.h): each proxy operation sends its call to
   the helper, serves the host services the plugin asks for, and reads the plugin's result. */
#define _GNU_SOURCE
#include "proxy_internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

static __thread keybay_isolated *current;

void keybay_isolation_enter(keybay_isolated *isolated) { current = isolated; }
void keybay_isolation_leave(void) { current = NULL; }

static int64_t now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

/* A buffer the plugin claimed to be longer than the frames carry: handed to the host with the
   claimed length and this marker, which the host's limits (all far below 64 KiB) refuse unread. */
static uint8_t oversize_marker;

/* Answers one service frame with the real host. Returns 1 when the service involved the user
   (the call's bound starts again), 0 otherwise, -1 for a malformed frame. */
static int serve_service(keybay_isolated *p, const keybay_host *host, const keybay_frame_in *f) {
    uint32_t service;
    if (keybay_frame_u32(f, 0, &service) != 0) return -1;
    keybay_frame_out reply;
    keybay_frame_begin(&reply, KEYBAY_FRAME_REPLY);
    int user = 0, passed = -1;
    char *a = NULL, *b = NULL;
    uint32_t x = 0, y = 0, z = 0;
    switch (service) {
    case KEYBAY_SERVICE_ASK_SECRET: {
        uint32_t retries, capacity;
        if (f->item_count != 7 || keybay_frame_u32(f, 1, &x) != 0 || keybay_frame_u32(f, 2, &y) != 0 || keybay_frame_string(f, 3, &a) != 0 ||
            keybay_frame_u32(f, 5, &retries) != 0 || keybay_frame_u32(f, 6, &capacity) != 0 || capacity == 0 || capacity > MAX_SECRET) goto malformed;
        uint8_t *secret = malloc(capacity);
        if (secret == NULL) goto malformed;
        (void)mlock(secret, capacity);
        size_t length = 0;
        keybay_status s = host->ask_secret(host->context, (keybay_secret_kind)x, y, a ? a : "", (int32_t)retries, secret, capacity, &length);
        keybay_frame_add_u32(&reply, (uint32_t)s);
        keybay_frame_add_bytes(&reply, secret, s == KEYBAY_OK && length <= capacity ? length : 0);
        explicit_bzero(secret, capacity);
        munlock(secret, capacity);
        free(secret);
        user = 1;
        break;
    }
    case KEYBAY_SERVICE_MESSAGE:
        if (f->item_count != 4 || keybay_frame_u32(f, 1, &x) != 0 || keybay_frame_string(f, 2, &a) != 0) goto malformed;
        keybay_frame_add_u32(&reply, (uint32_t)host->message(host->context, (keybay_message_level)x, a ? a : ""));
        break;
    case KEYBAY_SERVICE_CONFIRM: {
        if (f->item_count != 3 || keybay_frame_string(f, 1, &a) != 0) goto malformed;
        int answer = 0;
        keybay_frame_add_u32(&reply, (uint32_t)host->confirm(host->context, a ? a : "", &answer));
        keybay_frame_add_u32(&reply, answer == 1);
        user = 1;
        break;
    }
    case KEYBAY_SERVICE_IS_CANCELLED:
        if (f->item_count != 1) goto malformed;
        keybay_frame_add_u32(&reply, KEYBAY_OK);
        keybay_frame_add_u32(&reply, host->is_cancelled(host->context) == 1);
        break;
    case KEYBAY_SERVICE_SHOW_SECRET: {
        if (f->item_count != 6 || keybay_frame_u32(f, 1, &x) != 0 || keybay_frame_string(f, 2, &a) != 0 || keybay_frame_string(f, 4, &b) != 0) goto malformed;
        keybay_status s = KEYBAY_ERR_INTERACTION_UNAVAILABLE;
        if (KEYBAY_HOST_HAS(host, show_secret)) s = host->show_secret(host->context, (keybay_secret_kind)x, a ? a : "", b);
        keybay_frame_add_u32(&reply, (uint32_t)s);
        user = 1;
        break;
    }
    case KEYBAY_SERVICE_LOG:
        if (f->item_count != 4 || keybay_frame_u32(f, 1, &x) != 0 || keybay_frame_string(f, 2, &a) != 0) goto malformed;
        host->log(host->context, (keybay_log_level)x, a ? a : "");
        goto one_way;
    case KEYBAY_SERVICE_SET_ERROR:
        if (f->item_count != 3 || keybay_frame_string(f, 1, &a) != 0) goto malformed;
        host->set_error(host->context, a ? a : "");
        goto one_way;
    case KEYBAY_SERVICE_SET_ERROR_DETAIL:
        if (f->item_count != 6 || keybay_frame_string(f, 1, &a) != 0 || keybay_frame_u32(f, 3, &z) != 0 || keybay_frame_string(f, 4, &b) != 0) goto malformed;
        if (KEYBAY_HOST_HAS(host, set_error_detail)) host->set_error_detail(host->context, a ? a : "", (int32_t)z, b);
        goto one_way;
    case KEYBAY_SERVICE_OPEN_FILE:
    case KEYBAY_SERVICE_CONNECT_SOCKET: {
        if (f->item_count != 3 || keybay_frame_string(f, 1, &a) != 0 || a == NULL) goto malformed;
        keybay_status s = KEYBAY_ERR_UNSUPPORTED;
        if (service == KEYBAY_SERVICE_OPEN_FILE && KEYBAY_HOST_HAS(host, open_file)) s = host->open_file(host->context, a, &passed);
        if (service == KEYBAY_SERVICE_CONNECT_SOCKET && KEYBAY_HOST_HAS(host, connect_socket)) s = host->connect_socket(host->context, a, &passed);
        if (s != KEYBAY_OK && passed >= 0) { close(passed); passed = -1; }
        if (s == KEYBAY_OK && passed < 0) s = KEYBAY_ERR_INTERNAL;
        keybay_frame_add_u32(&reply, (uint32_t)s);
        break;
    }
    default:
        goto malformed;
    }
    if (a) { explicit_bzero(a, strlen(a)); free(a); }
    if (b) { explicit_bzero(b, strlen(b)); free(b); }
    /* The helper's descriptor is a copy: the host's is closed once it is sent. */
    int sent = keybay_frame_send_descriptor(p->fd, &reply, passed);
    if (passed >= 0) close(passed);
    return sent == 0 ? user : -1;
one_way:
    free(a);
    free(b);
    keybay_frame_discard(&reply);
    return 0;
malformed:
    free(a);
    free(b);
    keybay_frame_discard(&reply);
    return -1;
}

/* Fails the call: the helper is ended, the host told why (a reason token, then the line). */
static keybay_status fail(keybay_isolated *p, const keybay_host *host, ending how, const char *during) {
    char line[512], reason[48];
    isolation_end_helper(p, how, during, line, sizeof line, reason, sizeof reason);
    if (how == ENDED_CANCELLED) return KEYBAY_ERR_CANCELLED;
    if (KEYBAY_HOST_HAS(host, set_error_detail)) host->set_error_detail(host->context, reason, -1, NULL);
    host->set_error(host->context, line);
    return KEYBAY_ERR_INTERNAL;
}

/* A helper for the call: the running one, or a new one whose descriptor must be the first one's. */
static keybay_status ensure_helper(keybay_isolated *p, const keybay_host *host) {
    isolation_forget_parent_helper(p);
    if (p->fd >= 0) return KEYBAY_OK;
    char line[512], reason[48];
    int refused = 0;
    keybay_frame_in hello;
    if (isolation_start_helper(p, &hello, line, sizeof line, reason, sizeof reason, &refused) != 0) {
        if (KEYBAY_HOST_HAS(host, set_error_detail)) host->set_error_detail(host->context, reason, -1, NULL);
        host->set_error(host->context, line);
        return KEYBAY_ERR_INTERNAL;
    }
    int same = hello.length == p->hello_length && memcmp(hello.data, p->hello, hello.length) == 0;
    keybay_frame_release(&hello);
    if (!same) {
        isolation_end_helper(p, ENDED_MALFORMED, "loading", line, sizeof line, reason, sizeof reason);
        if (KEYBAY_HOST_HAS(host, set_error_detail)) host->set_error_detail(host->context, "plugin-changed", -1, NULL);
        snprintf(line, sizeof line, "plugin %s changed since this process first loaded it; refusing to use it", p->plugin_path);
        host->set_error(host->context, line);
        return KEYBAY_ERR_INTERNAL;
    }
    return KEYBAY_OK;
}

/* Sends `call` and serves the plugin's service requests until its RESULT arrives, which is left in
   `result`. KEYBAY_OK, or the status the call fails with. */
static keybay_status exchange(keybay_isolated *p, const keybay_host *host, keybay_frame_out *call, keybay_frame_in *result, const char *during) {
    keybay_status ready = ensure_helper(p, host);
    if (ready != KEYBAY_OK) { keybay_frame_discard(call); return ready; }
    if (keybay_frame_send(p->fd, call) != 0) return fail(p, host, ENDED_CLOSED, during);
    int64_t deadline = now_ms() + p->timeout_ms, cancelled_at = -1, next_look = 0;
    for (;;) {
        /* The bounds are checked before every frame, not only when none comes: a plugin that
           keeps sending (a frame trickled byte by byte, or one service call after another) is
           held to them too. is_cancelled is asked at most every SLICE_MS. */
        int64_t now = now_ms();
        if (now >= next_look) {
            next_look = now + SLICE_MS;
            if (cancelled_at < 0 && host->is_cancelled(host->context) == 1) cancelled_at = now;
        }
        int64_t end = cancelled_at >= 0 && cancelled_at + CANCEL_GRACE_MS < deadline ? cancelled_at + CANCEL_GRACE_MS : deadline;
        if (now >= end) return fail(p, host, now >= deadline ? ENDED_TIMED_OUT : ENDED_CANCELLED, during);
        int64_t left = end - now;
        int got = keybay_frame_receive(p->fd, left < SLICE_MS ? (int)left : SLICE_MS, left < FRAME_STALL_MS ? (int)left : FRAME_STALL_MS, result);
        if (got == 2) continue;
        if (got == 1) return fail(p, host, ENDED_CLOSED, during);
        if (got != 0) {
            /* A frame cut short by the call's own end is that end, not garbage. */
            now = now_ms();
            if (now >= end) return fail(p, host, now >= deadline ? ENDED_TIMED_OUT : ENDED_CANCELLED, during);
            return fail(p, host, ENDED_MALFORMED, during);
        }
        if (result->type == KEYBAY_FRAME_RESULT) return KEYBAY_OK;
        int served = result->type == KEYBAY_FRAME_SERVICE ? serve_service(p, host, result) : -1;
        keybay_frame_release(result);
        if (served < 0) return fail(p, host, ENDED_MALFORMED, during);
        if (served == 1) deadline = now_ms() + p->timeout_ms;
    }
}

static keybay_isolated *instance(void) { return current; }

static void begin_call(keybay_frame_out *f, uint32_t op, const keybay_host *host) {
    keybay_frame_begin(f, KEYBAY_FRAME_CALL);
    keybay_frame_add_u32(f, op);
    keybay_frame_add_string(f, KEYBAY_HOST_HAS(host, application_id) ? host->application_id : NULL);
}

/* The RESULT's status, item 0. -1 when malformed. */
static int result_status(const keybay_frame_in *r, keybay_status *status) {
    uint32_t s;
    if (keybay_frame_u32(r, 0, &s) != 0) return -1;
    *status = (keybay_status)s;
    return 0;
}

/* The 32-byte secret at item i: present exactly when the status is OK. */
static int result_secret(const keybay_frame_in *r, size_t i, keybay_status status, uint8_t *out) {
    if (i >= r->item_count) return -1;
    if (status != KEYBAY_OK) return r->item_length[i] == 0 ? 0 : -1;
    if (r->item_length[i] != KEYBAY_METHOD_SECRET_BYTES) return -1;
    memcpy(out, r->item[i], KEYBAY_METHOD_SECRET_BYTES);
    return 0;
}

/* The plugin buffer at items i..i+2 (present, claimed length, bytes), as the plugin gave it. */
static int result_buffer(const keybay_frame_in *r, size_t i, keybay_buffer *out) {
    uint32_t present, claimed;
    if (keybay_frame_u32(r, i, &present) != 0 || present > 1 || keybay_frame_u32(r, i + 1, &claimed) != 0 || i + 2 >= r->item_count) return -1;
    uint32_t carried = r->item_length[i + 2];
    out->data = NULL;
    out->length = claimed;
    if (!present) return carried == 0 ? 0 : -1;
    if (carried != claimed) {
        if (carried != 0 || claimed <= MAX_SECRET) return -1;
        out->data = &oversize_marker;
        return 0;
    }
    out->data = malloc(claimed ? claimed : 1);
    if (out->data == NULL) return -1;
    memcpy(out->data, r->item[i + 2], claimed);
    return 0;
}

void proxy_free_buffer(keybay_buffer *buffer) {
    if (buffer->data != NULL && buffer->data != &oversize_marker) {
        explicit_bzero(buffer->data, buffer->length);
        free(buffer->data);
    }
    buffer->data = NULL;
    buffer->length = 0;
}

keybay_status proxy_probe(const keybay_host *host) {
    keybay_isolated *p = instance();
    if (p == NULL) return KEYBAY_ERR_INTERNAL;
    keybay_frame_out call;
    begin_call(&call, KEYBAY_OP_PROBE, host);
    keybay_frame_in r;
    keybay_status status = exchange(p, host, &call, &r, "probe");
    if (status != KEYBAY_OK) return status;
    int bad = result_status(&r, &status) != 0 || r.item_count != 1;
    keybay_frame_release(&r);
    return bad ? fail(p, host, ENDED_MALFORMED, "probe") : status;
}

keybay_status proxy_enroll(const keybay_host *host, const keybay_option *options, size_t count, keybay_buffer *params_out,
                                  uint8_t secret_out[KEYBAY_METHOD_SECRET_BYTES]) {
    keybay_isolated *p = instance();
    if (p == NULL || count > 64) return KEYBAY_ERR_INTERNAL;
    keybay_frame_out call;
    begin_call(&call, KEYBAY_OP_ENROLL, host);
    keybay_frame_add_u32(&call, (uint32_t)count);
    for (size_t i = 0; i < count; i++) {
        keybay_frame_add_string(&call, options[i].name);
        keybay_frame_add_string(&call, options[i].value);
    }
    keybay_frame_in r;
    keybay_status status = exchange(p, host, &call, &r, "enroll");
    if (status != KEYBAY_OK) return status;
    int bad = result_status(&r, &status) != 0 || r.item_count != 5 || result_buffer(&r, 1, params_out) != 0 ||
              result_secret(&r, 4, status, secret_out) != 0;
    keybay_frame_release(&r);
    if (bad) { proxy_free_buffer(params_out); return fail(p, host, ENDED_MALFORMED, "enroll"); }
    return status;
}

static keybay_status unwrap_or_verify(uint32_t op, const keybay_host *host, const uint8_t *params, size_t length,
                                      uint8_t secret_out[KEYBAY_METHOD_SECRET_BYTES]) {
    keybay_isolated *p = instance();
    if (p == NULL) return KEYBAY_ERR_INTERNAL;
    const char *during = op == KEYBAY_OP_UNWRAP ? "unwrap" : "verify";
    keybay_frame_out call;
    begin_call(&call, op, host);
    keybay_frame_add_bytes(&call, params, length);
    keybay_frame_in r;
    keybay_status status = exchange(p, host, &call, &r, during);
    if (status != KEYBAY_OK) return status;
    int bad = result_status(&r, &status) != 0 || r.item_count != 2 || result_secret(&r, 1, status, secret_out) != 0;
    keybay_frame_release(&r);
    return bad ? fail(p, host, ENDED_MALFORMED, during) : status;
}

keybay_status proxy_unwrap(const keybay_host *host, const uint8_t *params, size_t length, uint8_t secret_out[KEYBAY_METHOD_SECRET_BYTES]) {
    return unwrap_or_verify(KEYBAY_OP_UNWRAP, host, params, length, secret_out);
}

keybay_status proxy_verify(const keybay_host *host, const uint8_t *params, size_t length, uint8_t secret_out[KEYBAY_METHOD_SECRET_BYTES]) {
    return unwrap_or_verify(KEYBAY_OP_VERIFY, host, params, length, secret_out);
}

keybay_status proxy_describe(const keybay_host *host, const uint8_t *params, size_t length, keybay_buffer *text_out) {
    keybay_isolated *p = instance();
    if (p == NULL) return KEYBAY_ERR_INTERNAL;
    keybay_frame_out call;
    begin_call(&call, KEYBAY_OP_DESCRIBE, host);
    keybay_frame_add_bytes(&call, params, length);
    keybay_frame_in r;
    keybay_status status = exchange(p, host, &call, &r, "describe");
    if (status != KEYBAY_OK) return status;
    int bad = result_status(&r, &status) != 0 || r.item_count != 4 || result_buffer(&r, 1, text_out) != 0;
    keybay_frame_release(&r);
    if (bad) { proxy_free_buffer(text_out); return fail(p, host, ENDED_MALFORMED, "describe"); }
    return status;
}
