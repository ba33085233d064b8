// SPDX-License-Identifier: Apache-2.0
/* What proxy.c, proxy_calls.c and helper_spawn.c share (not part of keybay_isolation.h): the
   isolated plugin's state, how a helper is started and ended, and the proxy operations. Hidden:
   nothing here leaves the library. */
#ifndef KEYBAY_PROXY_INTERNAL_H
#define KEYBAY_PROXY_INTERNAL_H

#include "keybay_plugin.h"
#include "keybay_isolation.h"
#include "keybay_isolation_framing.h"

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#pragma GCC visibility push(hidden)

#define SLICE_MS 100           /* how often a waiting call looks at is_cancelled */
#define CANCEL_GRACE_MS 2000   /* a cancelled call's plugin gets this long to notice, then it is killed */
#define FRAME_STALL_MS 2000    /* a frame once begun arrives whole within this, or is garbage */
#define EXIT_WAIT_MS 1000      /* a helper that closed its socket gets this long to exit */
#define MAX_SECRET (64u * 1024u)

struct keybay_isolated {
    keybay_plugin descriptor;
    char *helper;
    char *plugin_path;
    uint32_t timeout_ms;
    pid_t pid;
    int fd;
    pid_t owner; /* the process that started the helper: a forked child never uses its parent's */
    uint8_t *hello; /* the first HELLO frame: a restarted helper must send the same */
    size_t hello_length;
    keybay_option_spec *options;
    const char **sandbox; /* the declaration's entries, NULL-terminated: the host serves unix: ones */
};

/* ---- starting a helper (helper_spawn.c) ---- */

typedef struct spawn_request {
    char *const *argv;
    char **envp;
    int child_fd;
    pid_t pid;
    int error;
    int done;
} spawn_request;

/* Starts r->argv on the process's spawner thread; 0, or an errno value. */
int isolation_spawn_helper(spawn_request *r);

/* The host's environment without the dynamic loader's injection variables: the helper is not
   the host's to instrument (a preloaded fault-injection shim would count the helper's calls). */
char **isolation_helper_environment(void);

/* ---- a helper's start and end (proxy.c) ---- */

typedef enum ending { ENDED_CLOSED, ENDED_MALFORMED, ENDED_TIMED_OUT, ENDED_CANCELLED } ending;

/* Starts the helper and reads its first frame. 0 with the descriptor frame in `hello`; -1 with
   `line` and `reason` said (`*refused` 1 for a REFUSED frame that says the plugin was refused). */
int isolation_start_helper(keybay_isolated *p, keybay_frame_in *hello, char *line, size_t line_size, char *reason, size_t reason_size, int *refused);

/* Ends the helper and says why it ended, in `line` and `reason`. The helper's whole process group
   (the helper, its inspection child) is killed while the helper is not yet reaped, so the group's
   id cannot have been given to anyone else. */
void isolation_end_helper(keybay_isolated *p, ending how, const char *during, char *line, size_t line_size, char *reason, size_t reason_size);

/* In a forked child, the helper and its socket are the parent's: the child closes its copy of
   the socket (the parent keeps its own) and never signals or waits for the parent's helper. */
void isolation_forget_parent_helper(keybay_isolated *p);

/* ---- the proxy operations the descriptor holds (proxy_calls.c) ---- */

keybay_status proxy_probe(const keybay_host *host);
keybay_status proxy_enroll(const keybay_host *host, const keybay_option *options, size_t count, keybay_buffer *params_out,
                           uint8_t secret_out[KEYBAY_METHOD_SECRET_BYTES]);
keybay_status proxy_unwrap(const keybay_host *host, const uint8_t *params, size_t length, uint8_t secret_out[KEYBAY_METHOD_SECRET_BYTES]);
keybay_status proxy_verify(const keybay_host *host, const uint8_t *params, size_t length, uint8_t secret_out[KEYBAY_METHOD_SECRET_BYTES]);
keybay_status proxy_describe(const keybay_host *host, const uint8_t *params, size_t length, keybay_buffer *text_out);
void proxy_free_buffer(keybay_buffer *buffer);

#pragma GCC visibility pop

#endif
