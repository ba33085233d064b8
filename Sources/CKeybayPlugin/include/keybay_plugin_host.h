// SPDX-License-Identifier: Apache-2.0
/*
 * keybay_plugin_host.h — printf-style calls of the host services in keybay_plugin.h, shared by
 * the first-party C plugins (not installed, not part of the ABI), and the pieces every
 * first-party method plugin needs alike (its free_buffer, the checks an operation starts with, its
 * secrets in guarded memory). Each host call checks its service with KEYBAY_HOST_HAS first
 * (struct_size and NULL), so an older or smaller host is simply not told. Every first-party C
 * plugin links libsodium.
 */
#ifndef KEYBAY_PLUGIN_HOST_H
#define KEYBAY_PLUGIN_HOST_H

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "keybay_plugin.h"

/* Longer lines are cut (a path may be long; a line never holds a value). */
#define KEYBAY_HOST_LINE_BYTES 1024

static inline void keybay_host_verror(const keybay_host *host, const char *format, va_list args) {
    if (!KEYBAY_HOST_HAS(host, set_error)) return;
    char line[KEYBAY_HOST_LINE_BYTES];
    vsnprintf(line, sizeof line, format, args);
    host->set_error(host->context, line);
}

/* The one line that explains the failure the plugin is about to return. */
__attribute__((format(printf, 2, 3))) static inline void keybay_host_error(const keybay_host *host, const char *format, ...) {
    va_list args;
    va_start(args, format);
    keybay_host_verror(host, format, args);
    va_end(args);
}

/* The stable reason token (with tries left, -1 unknown, and the path concerned, NULL for none) for
   the failure the plugin is about to return, beside its keybay_host_error line; a host without
   the service is not told. */
static inline void keybay_host_error_detail(const keybay_host *host, const char *reason, int32_t tries_left, const char *path) {
    if (!KEYBAY_HOST_HAS(host, set_error_detail)) return;
    host->set_error_detail(host->context, reason, tries_left, path);
}

/* keybay_host_error_detail with only a reason. */
static inline void keybay_host_error_reason(const keybay_host *host, const char *reason) {
    keybay_host_error_detail(host, reason, -1, NULL);
}

/* The PCRs (bit n: PCR n) whose values differ now, for a "pcr-mismatch" failure: after
   keybay_host_error_detail, before the keybay_host_error line; a host without the service is not told. */
static inline void keybay_host_error_pcrs(const keybay_host *host, uint32_t pcrs) {
    if (KEYBAY_HOST_HAS(host, set_error_pcrs)) host->set_error_pcrs(host->context, pcrs);
}

/* Informational: only the host's CANCELLED stops the operation (a host that cannot show
   messages, INTERACTION_UNAVAILABLE, does not). */
__attribute__((format(printf, 3, 4))) static inline keybay_status keybay_host_message(const keybay_host *host,
                                                                                    keybay_message_level level,
                                                                                    const char *format, ...) {
    if (!KEYBAY_HOST_HAS(host, message)) return KEYBAY_OK;
    char line[KEYBAY_HOST_LINE_BYTES];
    va_list args;
    va_start(args, format);
    vsnprintf(line, sizeof line, format, args);
    va_end(args);
    return host->message(host->context, level, line) == KEYBAY_ERR_CANCELLED ? KEYBAY_ERR_CANCELLED : KEYBAY_OK;
}

__attribute__((format(printf, 3, 4))) static inline void keybay_host_log(const keybay_host *host, keybay_log_level level,
                                                                       const char *format, ...) {
    if (!KEYBAY_HOST_HAS(host, log)) return;
    char line[KEYBAY_HOST_LINE_BYTES];
    va_list args;
    va_start(args, format);
    vsnprintf(line, sizeof line, format, args);
    va_end(args);
    host->log(host->context, level, line);
}

static inline int keybay_host_cancelled(const keybay_host *host) {
    return KEYBAY_HOST_HAS(host, is_cancelled) && host->is_cancelled(host->context) != 0;
}

/* ---- first-party method plugins ---- */

/* A method plugin's free_buffer, for the buffers it hands out from malloc (params, descriptions):
   wiped whatever they hold, freed, left NULL and 0. */
static inline void keybay_method_free_buffer(keybay_buffer *buffer) {
    if (buffer == NULL) return;
    if (buffer->data != NULL) {
        sodium_memzero(buffer->data, buffer->length);
        free(buffer->data);
    }
    buffer->data = NULL;
    buffer->length = 0;
}

/* What every enroll starts with: params_out cleared (so a failure hands nothing back), and a
   host, params_out and secret_out to work with (INTERNAL, explained, otherwise). */
static inline keybay_status keybay_method_enroll_begin(const keybay_host *host, const char *plugin, keybay_buffer *params_out,
                                                       const uint8_t *secret_out) {
    if (params_out != NULL) {
        params_out->data = NULL;
        params_out->length = 0;
    }
    if (host == NULL || params_out == NULL || secret_out == NULL) {
        keybay_host_error(host, "%s: enroll called without host, params or secret buffer", plugin);
        return KEYBAY_ERR_INTERNAL;
    }
    return KEYBAY_OK;
}

/* What every unwrap starts with: a host and secret_out to work with. */
static inline keybay_status keybay_method_unwrap_begin(const keybay_host *host, const char *plugin, const uint8_t *secret_out) {
    if (host == NULL || secret_out == NULL) {
        keybay_host_error(host, "%s: unwrap called without host or secret buffer", plugin);
        return KEYBAY_ERR_INTERNAL;
    }
    return KEYBAY_OK;
}

/* What every describe starts with: text_out cleared, and there. */
static inline keybay_status keybay_method_describe_begin(keybay_buffer *text_out) {
    if (text_out == NULL) return KEYBAY_ERR_INTERNAL;
    text_out->data = NULL;
    text_out->length = 0;
    return KEYBAY_OK;
}

/* Hands `length` bytes of `text` to the host as a description (from malloc, NUL-terminated for
   convenience, the NUL not counted). */
static inline keybay_status keybay_method_text(const char *text, size_t length, keybay_buffer *text_out) {
    uint8_t *data = malloc(length + 1);
    if (data == NULL) return KEYBAY_ERR_INTERNAL;
    memcpy(data, text, length);
    data[length] = 0;
    text_out->data = data;
    text_out->length = length;
    return KEYBAY_OK;
}

/* `size` zeroed bytes of guarded memory (sodium_malloc: guard pages, locked, never swapped) for a
   plugin's secrets; NULL, explained, when libsodium cannot start or memory runs out. */
static inline void *keybay_method_secret_new(const keybay_host *host, const char *plugin, size_t size) {
    if (sodium_init() < 0) {
        keybay_host_error(host, "%s: libsodium could not be initialised", plugin);
        return NULL;
    }
    void *secret = sodium_malloc(size);
    if (secret == NULL) keybay_host_error(host, "%s: could not allocate guarded memory", plugin);
    else sodium_memzero(secret, size);
    return secret;
}

/* Wipes and frees what keybay_method_secret_new gave; NULL is nothing to do. */
static inline void keybay_method_secret_free(void *secret, size_t size) {
    if (secret == NULL) return;
    sodium_memzero(secret, size);
    sodium_free(secret);
}

#endif /* KEYBAY_PLUGIN_HOST_H */
