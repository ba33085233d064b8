// SPDX-License-Identifier: Apache-2.0
/* What the helper's files share (main.c, host_services.c, inspection.c, serving.c): the plugin
   loaded, the host's socket, and the steps of a run. Hidden: the plugin the helper loads never
   binds to these. */
#ifndef KEYBAY_HELPER_PLUGIN_HOST_H
#define KEYBAY_HELPER_PLUGIN_HOST_H

#include "keybay_isolation_framing.h"
#include "keybay_plugin.h"
#include "sandbox.h"

#include <stddef.h>

#pragma GCC visibility push(hidden)

#define HOST_FD 3
#define MAX_OUTPUT (64u * 1024u) /* bytes of a plugin buffer sent back; the host's limits are lower */

extern keybay_plugin plugin; /* the plugin's descriptor, copied: the fields past its struct_size NULL */
extern const char *application_id;

/* ---- main.c ---- */

/* Tells the host the plugin could not be loaded, and ends. `failed` 1: the plugin failed (it
   crashed, the sandbox is not available); 0: it was refused (the loader's checks). */
void _Noreturn refuse(int failed, const char *reason, const char *line);

/* Loads the plugin file and returns its descriptor (refuses what the loader would). */
const keybay_plugin *load(const char *path, int *struct_size);

/* The plugin's descriptor as this header declares it: the plugin's first struct_size bytes. */
void copy_descriptor(const keybay_plugin *d);

int declares_sandbox(void);

/* ---- host_services.c: the host services, as frames ---- */

/* Sends a frame to the host, or ends when the host is gone. */
void send_or_exit(keybay_frame_out *f);

/* The keybay_host the plugin is called with: each service a frame to the host. */
keybay_host make_host(void);

/* ---- inspection.c ---- */

/* Runs inspection and fills `grant` and the declared environment names. */
void inspect(const char *path, sandbox_grant *grant, const char **env_names, size_t *env_count);

/* ---- serving.c ---- */

/* HELLO, then one CALL at a time until the host closes the socket. */
void serve_calls(void) __attribute__((noreturn));

#pragma GCC visibility pop

#endif
