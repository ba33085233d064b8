// SPDX-License-Identifier: Apache-2.0
/* The host services a plugin calls, as frames to the host and their replies (plugin_host.h). */
#define _GNU_SOURCE
#include "keybay_isolation_framing.h"
#include "plugin_host.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void send_or_exit(keybay_frame_out *f) {
    if (keybay_frame_send(HOST_FD, f) != 0) _exit(0); /* the host is gone */
}

/* Waits for the REPLY to a service call; its first item is a status. With `descriptor`, the
   descriptor the REPLY carries (or -1) is taken too. */
static keybay_status await_reply_taking(keybay_frame_in *reply, int *descriptor) {
    uint32_t status;
    int got = descriptor ? keybay_frame_receive_descriptor(HOST_FD, reply, descriptor) : keybay_frame_receive(HOST_FD, -1, -1, reply);
    if (got != 0) _exit(0);
    if (reply->type != KEYBAY_FRAME_REPLY || keybay_frame_u32(reply, 0, &status) != 0) _exit(2);
    return (keybay_status)status;
}

static keybay_status await_reply(keybay_frame_in *reply) { return await_reply_taking(reply, NULL); }

static void begin_service(keybay_frame_out *f, uint32_t service) {
    keybay_frame_begin(f, KEYBAY_FRAME_SERVICE);
    keybay_frame_add_u32(f, service);
}

static keybay_status helper_ask_secret(void *context, keybay_secret_kind kind, uint32_t flags, const char *prompt,
                                       int32_t retries_left, uint8_t *out, size_t capacity, size_t *out_length) {
    (void)context;
    keybay_frame_out f;
    begin_service(&f, KEYBAY_SERVICE_ASK_SECRET);
    keybay_frame_add_u32(&f, (uint32_t)kind);
    keybay_frame_add_u32(&f, flags);
    keybay_frame_add_string(&f, prompt);
    keybay_frame_add_u32(&f, (uint32_t)retries_left);
    keybay_frame_add_u32(&f, capacity > MAX_OUTPUT ? MAX_OUTPUT : (uint32_t)capacity);
    send_or_exit(&f);
    keybay_frame_in reply;
    keybay_status status = await_reply(&reply);
    *out_length = 0;
    if (status == KEYBAY_OK) {
        if (reply.item_count < 2 || reply.item_length[1] > capacity) status = KEYBAY_ERR_INTERNAL;
        else { memcpy(out, reply.item[1], reply.item_length[1]); *out_length = reply.item_length[1]; }
    }
    keybay_frame_release(&reply); /* wipes the secret's copy */
    return status;
}

static keybay_status simple_service(keybay_frame_out *f, int *answer) {
    send_or_exit(f);
    keybay_frame_in reply;
    keybay_status status = await_reply(&reply);
    uint32_t value = 0;
    if (answer != NULL) {
        if (keybay_frame_u32(&reply, 1, &value) != 0) status = KEYBAY_ERR_INTERNAL;
        *answer = value == 1;
    }
    keybay_frame_release(&reply);
    return status;
}

/* message and log: a level and a text. */
static void begin_leveled_text(keybay_frame_out *f, uint32_t service, uint32_t level, const char *text) {
    begin_service(f, service);
    keybay_frame_add_u32(f, level);
    keybay_frame_add_string(f, text);
}

static keybay_status helper_message(void *context, keybay_message_level level, const char *text) {
    (void)context;
    keybay_frame_out f;
    begin_leveled_text(&f, KEYBAY_SERVICE_MESSAGE, (uint32_t)level, text);
    return simple_service(&f, NULL);
}

static keybay_status helper_confirm(void *context, const char *question, int *answer) {
    (void)context;
    keybay_frame_out f;
    begin_service(&f, KEYBAY_SERVICE_CONFIRM);
    keybay_frame_add_string(&f, question);
    return simple_service(&f, answer);
}

static int helper_is_cancelled(void *context) {
    (void)context;
    keybay_frame_out f;
    begin_service(&f, KEYBAY_SERVICE_IS_CANCELLED);
    int cancelled = 0;
    if (simple_service(&f, &cancelled) != KEYBAY_OK) return 1;
    return cancelled;
}

static void helper_log(void *context, keybay_log_level level, const char *text) {
    (void)context;
    keybay_frame_out f;
    begin_leveled_text(&f, KEYBAY_SERVICE_LOG, (uint32_t)level, text);
    send_or_exit(&f);
}

static void helper_set_error(void *context, const char *text) {
    (void)context;
    keybay_frame_out f;
    begin_service(&f, KEYBAY_SERVICE_SET_ERROR);
    keybay_frame_add_string(&f, text);
    send_or_exit(&f);
}

static void helper_set_error_detail(void *context, const char *reason, int32_t tries_left, const char *path) {
    (void)context;
    keybay_frame_out f;
    begin_service(&f, KEYBAY_SERVICE_SET_ERROR_DETAIL);
    keybay_frame_add_string(&f, reason);
    keybay_frame_add_u32(&f, (uint32_t)tries_left);
    keybay_frame_add_string(&f, path);
    send_or_exit(&f);
}

static keybay_status helper_show_secret(void *context, keybay_secret_kind kind, const char *text, const char *picture) {
    (void)context;
    keybay_frame_out f;
    begin_service(&f, KEYBAY_SERVICE_SHOW_SECRET);
    keybay_frame_add_u32(&f, (uint32_t)kind);
    keybay_frame_add_string(&f, text);
    keybay_frame_add_string(&f, picture);
    return simple_service(&f, NULL);
}

/* open_file and connect_socket: the host's REPLY carries the descriptor when it says OK. */
static keybay_status descriptor_service(uint32_t service, const char *name, int *fd_out) {
    *fd_out = -1;
    keybay_frame_out f;
    begin_service(&f, service);
    keybay_frame_add_string(&f, name);
    send_or_exit(&f);
    keybay_frame_in reply;
    int passed = -1;
    keybay_status status = await_reply_taking(&reply, &passed);
    keybay_frame_release(&reply);
    if (status == KEYBAY_OK && passed < 0) status = KEYBAY_ERR_INTERNAL;
    if (status != KEYBAY_OK && passed >= 0) { close(passed); passed = -1; }
    *fd_out = passed;
    return status;
}

static keybay_status helper_open_file(void *context, const char *option, int *fd_out) {
    (void)context;
    return descriptor_service(KEYBAY_SERVICE_OPEN_FILE, option, fd_out);
}

static keybay_status helper_connect_socket(void *context, const char *path, int *fd_out) {
    (void)context;
    return descriptor_service(KEYBAY_SERVICE_CONNECT_SOCKET, path, fd_out);
}

keybay_host make_host(void) {
    keybay_host h;
    memset(&h, 0, sizeof h);
    h.abi_version = KEYBAY_PLUGIN_ABI_VERSION;
    h.struct_size = (uint32_t)sizeof h;
    h.ask_secret = helper_ask_secret;
    h.message = helper_message;
    h.confirm = helper_confirm;
    h.is_cancelled = helper_is_cancelled;
    h.log = helper_log;
    h.set_error = helper_set_error;
    h.application_id = application_id;
    h.show_secret = helper_show_secret;
    h.set_error_detail = helper_set_error_detail;
    h.open_file = helper_open_file;
    h.connect_socket = helper_connect_socket;
    return h;
}
