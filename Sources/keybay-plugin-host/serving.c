// SPDX-License-Identifier: Apache-2.0
/* Serving the host's calls (plugin_host.h): the plugin's descriptor as HELLO, then each CALL
   run on the plugin and its RESULT sent back. */
#define _GNU_SOURCE
#include "keybay_isolation_framing.h"
#include "plugin_host.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void send_hello(void) {
    keybay_frame_out f;
    keybay_frame_begin(&f, KEYBAY_FRAME_HELLO);
    keybay_frame_add_u32(&f, KEYBAY_FRAMING_VERSION);
    keybay_frame_add_u32(&f, plugin.abi_version);
    keybay_frame_add_u32(&f, plugin.struct_size);
    keybay_frame_add_u32(&f, plugin.kind);
    keybay_frame_add_u32(&f, plugin.flags);
    uint32_t mask = (plugin.probe ? KEYBAY_HAS_PROBE : 0) | (plugin.enroll ? KEYBAY_HAS_ENROLL : 0) |
                    (plugin.unwrap ? KEYBAY_HAS_UNWRAP : 0) | (plugin.verify ? KEYBAY_HAS_VERIFY : 0) |
                    (plugin.describe || plugin.describe_with_host ? KEYBAY_HAS_DESCRIBE : 0) |
                    (plugin.root_exists || plugin.root_seal ? KEYBAY_HAS_ROOT : 0) | (plugin.free_buffer ? 0x40u : 0);
    keybay_frame_add_u32(&f, mask);
    keybay_frame_add_string(&f, plugin.id);
    keybay_frame_add_string(&f, plugin.name);
    keybay_frame_add_string(&f, plugin.version);
    /* A list the host would refuse (over 64, or a count without a list) is sent as 65: refused alike. */
    int listable = plugin.option_count <= 64 && (plugin.option_count == 0 || plugin.options != NULL);
    size_t options = listable ? plugin.option_count : 0;
    keybay_frame_add_u32(&f, listable ? (uint32_t)plugin.option_count : 65u);
    for (size_t i = 0; i < options; i++) {
        keybay_frame_add_string(&f, plugin.options[i].name);
        keybay_frame_add_string(&f, plugin.options[i].help);
    }
    size_t entries = 0;
    while (declares_sandbox() && entries < SANDBOX_MAX_ENTRIES && plugin.sandbox[entries] != NULL) entries++;
    keybay_frame_add_u32(&f, (uint32_t)entries);
    for (size_t i = 0; i < entries; i++) keybay_frame_add_string(&f, plugin.sandbox[i]);
    send_or_exit(&f);
}

/* A plugin buffer as the host sees it: present flag, the length claimed, the bytes (when sent). */
static void add_buffer(keybay_frame_out *f, keybay_buffer *b) {
    keybay_frame_add_u32(f, b->data != NULL);
    keybay_frame_add_u32(f, b->length > UINT32_MAX ? UINT32_MAX : (uint32_t)b->length);
    int sendable = b->data != NULL && b->length <= MAX_OUTPUT;
    keybay_frame_add_bytes(f, sendable ? b->data : NULL, sendable ? b->length : 0);
}

static void serve(keybay_frame_in *call) {
    uint32_t op;
    char *app = NULL;
    if (keybay_frame_u32(call, 0, &op) != 0 || keybay_frame_string(call, 1, &app) != 0) _exit(2);
    application_id = app;
    keybay_host host = make_host();
    keybay_status status = KEYBAY_ERR_UNSUPPORTED;
    uint8_t secret[KEYBAY_METHOD_SECRET_BYTES];
    memset(secret, 0, sizeof secret);
    keybay_buffer out = { NULL, 0 };
    keybay_frame_out result;
    keybay_frame_begin(&result, KEYBAY_FRAME_RESULT);
    switch (op) {
    case KEYBAY_OP_PROBE:
        if (plugin.probe) status = plugin.probe(&host);
        keybay_frame_add_u32(&result, (uint32_t)status);
        break;
    case KEYBAY_OP_ENROLL: {
        uint32_t count;
        if (keybay_frame_u32(call, 3, &count) != 0 || count > 64 || call->item_count != 4 + 4 * (size_t)count) _exit(2);
        keybay_option options[64];
        char *strings[128];
        for (uint32_t i = 0; i < 2 * count; i++) {
            if (keybay_frame_string(call, 4 + 2 * i, &strings[i]) != 0 || strings[i] == NULL) _exit(2);
        }
        for (uint32_t i = 0; i < count; i++) options[i] = (keybay_option){ strings[2 * i], strings[2 * i + 1] };
        if (plugin.enroll) status = plugin.enroll(&host, count ? options : NULL, count, &out, secret);
        keybay_frame_add_u32(&result, (uint32_t)status);
        add_buffer(&result, &out);
        keybay_frame_add_bytes(&result, secret, status == KEYBAY_OK ? sizeof secret : 0);
        for (uint32_t i = 0; i < 2 * count; i++) { explicit_bzero(strings[i], strlen(strings[i])); free(strings[i]); }
        break;
    }
    case KEYBAY_OP_UNWRAP:
    case KEYBAY_OP_VERIFY:
    case KEYBAY_OP_DESCRIBE: {
        if (call->item_count != 4) _exit(2);
        const uint8_t *params = call->item[3];
        size_t length = call->item_length[3];
        if (op == KEYBAY_OP_DESCRIBE) {
            if (plugin.describe_with_host) status = plugin.describe_with_host(&host, params, length, &out);
            else if (plugin.describe) status = plugin.describe(params, length, &out);
            keybay_frame_add_u32(&result, (uint32_t)status);
            add_buffer(&result, &out);
        } else {
            keybay_status (*fn)(const keybay_host *, const uint8_t *, size_t, uint8_t *) =
                op == KEYBAY_OP_VERIFY && plugin.verify ? plugin.verify : plugin.unwrap;
            if (fn) status = fn(&host, params, length, secret);
            keybay_frame_add_u32(&result, (uint32_t)status);
            keybay_frame_add_bytes(&result, secret, status == KEYBAY_OK ? sizeof secret : 0);
        }
        break;
    }
    default:
        _exit(2);
    }
    explicit_bzero(secret, sizeof secret);
    send_or_exit(&result);
    if (out.data != NULL || out.length != 0) plugin.free_buffer(&out);
    free(app);
    application_id = NULL;
}

void serve_calls(void) {
    send_hello();
    for (;;) {
        keybay_frame_in call;
        int r = keybay_frame_receive(HOST_FD, -1, -1, &call);
        if (r != 0) _exit(0); /* the host closed the socket: done */
        if (call.type != KEYBAY_FRAME_CALL) _exit(2);
        serve(&call);
        keybay_frame_release(&call);
    }
}
