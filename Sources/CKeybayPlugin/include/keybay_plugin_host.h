/*
 * keybay_plugin_host.h — printf-style calls of the host services in keybay_plugin.h, shared by
 * the first-party C plugins (not installed, not part of the ABI). Each checks its service with
 * KEYBAY_HOST_HAS first (struct_size and NULL), so an older or smaller host is simply not told.
 */
#ifndef KEYBAY_PLUGIN_HOST_H
#define KEYBAY_PLUGIN_HOST_H

#include <stdarg.h>
#include <stdio.h>

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

#endif /* KEYBAY_PLUGIN_HOST_H */
