// SPDX-License-Identifier: Apache-2.0
/*
 * keybay_isolation.h — the host's side of an isolated method plugin (docs/plugins.md,
 * "Isolation"). A keybay_isolated runs one plugin in keybay-plugin-host and offers a plugin
 * descriptor whose operations are proxies: each sends the call to the helper, serves the host
 * services the plugin asks for with the real keybay_host, and returns the plugin's result. A
 * helper that crashes, exits, sends garbage or outlives its bound is killed; the call returns
 * KEYBAY_ERR_INTERNAL after set_error_detail (a reason token) and set_error (what happened), and
 * the next call starts a new helper.
 */
#ifndef KEYBAY_ISOLATION_H
#define KEYBAY_ISOLATION_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

typedef struct keybay_isolated keybay_isolated;
/* keybay_plugin.h's descriptor; declared here so that this header needs no include path of another target's. */
struct keybay_plugin;

/* Starts `helper` for the plugin file `plugin_path` (checked and resolved by the caller) and
   reads its descriptor. `timeout_ms` bounds the start and every call while the plugin runs (time
   spent in the host's ask_secret, confirm and show_secret is not counted). NULL on failure, with
   `reason` (a token: the helper's, or plugin-host-failed, plugin-crashed, plugin-exited,
   plugin-timed-out, plugin-malformed-reply) and `line` filled, and `*refused` 1 when the helper
   refused the plugin (the loader's checks) rather than failed. */
keybay_isolated *keybay_isolation_start(const char *helper, const char *plugin_path, uint32_t timeout_ms,
                                        char *line, size_t line_size, char *reason, size_t reason_size, int *refused);

/* The proxy descriptor: the plugin's fields as the helper reported them, with proxy operations.
   It lives as long as the process (loaded plugins are never unloaded). */
const struct keybay_plugin *keybay_isolation_descriptor(const keybay_isolated *isolated);

/* The helper's process id, -1 when none runs (before the first call after a failure). */
pid_t keybay_isolation_pid(const keybay_isolated *isolated);

/* Ends the helper and frees `isolated`, whose descriptor has not been handed out (a plugin that
   turned out to be a root, which runs in process). */
void keybay_isolation_stop(keybay_isolated *isolated);

/* The instance the proxy operations called on this thread serve; the caller holds the plugin's
   call lock from enter to leave. */
void keybay_isolation_enter(keybay_isolated *isolated);
void keybay_isolation_leave(void);

#endif
