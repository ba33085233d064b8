// SPDX-License-Identifier: Apache-2.0
/* The host's side of an isolated method plugin (keybay_isolation.h): starting and stopping its
   helper, and the descriptor it reports. The calls are in proxy_calls.c, the spawning of the
   helper in helper_spawn.c. */
#define _GNU_SOURCE
#include "proxy_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

const keybay_plugin *keybay_isolation_descriptor(const keybay_isolated *isolated) { return &isolated->descriptor; }
pid_t keybay_isolation_pid(const keybay_isolated *isolated) { return isolated->fd >= 0 && isolated->owner == getpid() ? isolated->pid : -1; }

/* ---- what happened to a helper ---- */

static void say(char *line, size_t line_size, char *reason, size_t reason_size, const char *token, const char *format, ...)
    __attribute__((format(printf, 6, 7)));
static void say(char *line, size_t line_size, char *reason, size_t reason_size, const char *token, const char *format, ...) {
    va_list args;
    va_start(args, format);
    vsnprintf(line, line_size, format, args);
    va_end(args);
    snprintf(reason, reason_size, "%s", token);
}

void isolation_end_helper(keybay_isolated *p, ending how, const char *during, char *line, size_t line_size, char *reason, size_t reason_size) {
    int status = 0, reaped = 0, exited = 0;
    if (how == ENDED_CLOSED) {
        /* It closed its socket: it is exiting, or it closed the socket and goes on. */
        for (int waited = 0; waited < EXIT_WAIT_MS; waited += 10) {
            siginfo_t info;
            memset(&info, 0, sizeof info);
            int r = waitid(P_PID, (id_t)p->pid, &info, WEXITED | WNOHANG | WNOWAIT);
            if (r == 0 && info.si_pid == p->pid) { exited = 1; break; }
            if (r < 0 && errno == ECHILD) { reaped = -1; break; } /* the host reaps its children itself */
            struct timespec ten = { 0, 10 * 1000 * 1000 };
            nanosleep(&ten, NULL);
        }
    }
    if (reaped == 0) {
        kill(-p->pid, SIGKILL);
        if (!exited) kill(p->pid, SIGKILL);
        pid_t r;
        while ((r = waitpid(p->pid, &status, 0)) < 0 && errno == EINTR) {}
        reaped = r == p->pid ? 1 : -1;
    }
    close(p->fd);
    p->fd = -1;
    const char *file = p->plugin_path;
    switch (how) {
    case ENDED_TIMED_OUT:
        say(line, line_size, reason, reason_size, "plugin-timed-out", "plugin %s did not answer within %u s during %s; it was stopped (KEYBAY_PLUGIN_TIMEOUT sets the bound)",
            file, p->timeout_ms / 1000, during);
        break;
    case ENDED_MALFORMED:
        say(line, line_size, reason, reason_size, "plugin-malformed-reply", "plugin %s sent its host a malformed reply during %s; it was stopped", file, during);
        break;
    case ENDED_CANCELLED:
        say(line, line_size, reason, reason_size, "cancelled", "plugin %s was stopped: the call was cancelled during %s", file, during);
        break;
    case ENDED_CLOSED:
        if (reaped == 1 && WIFSIGNALED(status) && WTERMSIG(status) != SIGKILL) {
            say(line, line_size, reason, reason_size, "plugin-crashed", "plugin %s crashed during %s (signal %d, %s)", file, during,
                WTERMSIG(status), strsignal(WTERMSIG(status)));
        } else if (reaped == 1 && WIFEXITED(status)) {
            say(line, line_size, reason, reason_size, "plugin-exited", "plugin %s exited during %s (status %d)", file, during, WEXITSTATUS(status));
        } else {
            say(line, line_size, reason, reason_size, "plugin-exited", "plugin %s closed its connection to the host during %s; it was stopped", file, during);
        }
        break;
    }
}

/* ---- the descriptor from HELLO ---- */

static int build_descriptor(keybay_isolated *p, const keybay_frame_in *hello) {
    uint32_t version, abi, size, kind, flags, mask, option_count, entries;
    if (keybay_frame_u32(hello, 0, &version) != 0 || version != KEYBAY_FRAMING_VERSION || keybay_frame_u32(hello, 1, &abi) != 0 ||
        keybay_frame_u32(hello, 2, &size) != 0 || keybay_frame_u32(hello, 3, &kind) != 0 || keybay_frame_u32(hello, 4, &flags) != 0 ||
        keybay_frame_u32(hello, 5, &mask) != 0) return -1;
    keybay_plugin *d = &p->descriptor;
    memset(d, 0, sizeof *d);
    char *id, *name, *text;
    if (keybay_frame_string(hello, 6, &id) != 0) return -1;
    if (keybay_frame_string(hello, 8, &name) != 0) { free(id); return -1; }
    if (keybay_frame_string(hello, 10, &text) != 0) { free(id); free(name); return -1; }
    d->id = id; d->name = name; d->version = text;
    if (keybay_frame_u32(hello, 12, &option_count) != 0 || option_count > 65) return -1;
    size_t at = 13;
    size_t listed = option_count <= 64 ? option_count : 0;
    p->options = calloc(listed ? listed : 1, sizeof *p->options);
    if (p->options == NULL) return -1;
    for (size_t i = 0; i < listed; i++, at += 4) {
        char *option_name, *help;
        if (keybay_frame_string(hello, at, &option_name) != 0) return -1;
        if (keybay_frame_string(hello, at + 2, &help) != 0) { free(option_name); return -1; }
        p->options[i] = (keybay_option_spec){ option_name, help };
    }
    if (keybay_frame_u32(hello, at, &entries) != 0 || entries > 32 || hello->item_count != at + 1 + 2 * (size_t)entries) return -1;
    p->sandbox = calloc((size_t)entries + 1, sizeof *p->sandbox);
    if (p->sandbox == NULL) return -1;
    for (size_t i = 0; i < entries; i++) {
        char *entry;
        if (keybay_frame_string(hello, at + 1 + 2 * i, &entry) != 0 || entry == NULL) return -1;
        p->sandbox[i] = entry;
    }
    /* As the host checks the plugin's own: the same abi_version, and a struct_size below the
       first version's when the plugin's is (the host refuses both); otherwise all of this header's fields. */
    d->abi_version = abi;
    d->struct_size = size < KEYBAY_PLUGIN_STRUCT_SIZE_V1_0 ? size : (uint32_t)sizeof *d;
    d->kind = kind;
    d->flags = flags;
    d->options = p->options;
    d->option_count = option_count;
    if (entries > 0) d->sandbox = p->sandbox;
    if (mask & 0x40u) d->free_buffer = proxy_free_buffer;
    if (mask & KEYBAY_HAS_PROBE) d->probe = proxy_probe;
    if (mask & KEYBAY_HAS_ENROLL) d->enroll = proxy_enroll;
    if (mask & KEYBAY_HAS_UNWRAP) d->unwrap = proxy_unwrap;
    if (mask & KEYBAY_HAS_VERIFY) d->verify = proxy_verify;
    if (mask & KEYBAY_HAS_DESCRIBE) d->describe_with_host = proxy_describe;
    return 0;
}

int isolation_start_helper(keybay_isolated *p, keybay_frame_in *hello, char *line, size_t line_size, char *reason, size_t reason_size, int *refused) {
    *refused = 0;
    int pair[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair) != 0) {
        say(line, line_size, reason, reason_size, "plugin-host-failed", "cannot make a socket for plugin %s: %s", p->plugin_path, strerror(errno));
        return -1;
    }
    int child_fd = fcntl(pair[1], F_DUPFD_CLOEXEC, 10);
    close(pair[1]);
    struct timeval stall = { FRAME_STALL_MS / 1000, (FRAME_STALL_MS % 1000) * 1000 };
    char **env = isolation_helper_environment();
    if (child_fd < 0 || env == NULL || setsockopt(pair[0], SOL_SOCKET, SO_RCVTIMEO, &stall, sizeof stall) != 0 ||
        setsockopt(pair[0], SOL_SOCKET, SO_SNDTIMEO, &stall, sizeof stall) != 0) {
        say(line, line_size, reason, reason_size, "plugin-host-failed", "cannot prepare the helper for plugin %s: %s", p->plugin_path, strerror(errno));
        if (child_fd >= 0) close(child_fd);
        close(pair[0]);
        free(env);
        return -1;
    }
    char *argv[] = { p->helper, p->plugin_path, NULL };
    spawn_request r = { .argv = argv, .envp = env, .child_fd = child_fd };
    int e = isolation_spawn_helper(&r);
    close(child_fd);
    free(env);
    if (e != 0) {
        say(line, line_size, reason, reason_size, "plugin-host-failed", "cannot start %s for plugin %s: %s", p->helper, p->plugin_path, strerror(e));
        close(pair[0]);
        return -1;
    }
    p->pid = r.pid;
    p->fd = pair[0];
    p->owner = getpid();
    int got = keybay_frame_receive(p->fd, (int)p->timeout_ms, FRAME_STALL_MS, hello);
    if (got == 0 && hello->type == KEYBAY_FRAME_HELLO) return 0;
    if (got == 0 && hello->type == KEYBAY_FRAME_REFUSED) {
        uint32_t failed;
        char *why = NULL, *text = NULL;
        int ok = keybay_frame_u32(hello, 0, &failed) == 0 && keybay_frame_string(hello, 1, &why) == 0 && why != NULL &&
                 keybay_frame_string(hello, 3, &text) == 0 && text != NULL;
        keybay_frame_release(hello);
        if (ok) {
            isolation_end_helper(p, ENDED_CLOSED, "loading", line, line_size, reason, reason_size);
            say(line, line_size, reason, reason_size, why, "%s", text);
            *refused = failed == 0;
        }
        free(why);
        free(text);
        if (ok) return -1;
        got = -1;
    } else if (got == 0) {
        keybay_frame_release(hello);
        got = -1;
    }
    isolation_end_helper(p, got == 2 ? ENDED_TIMED_OUT : got == 1 ? ENDED_CLOSED : ENDED_MALFORMED, "loading", line, line_size, reason, reason_size);
    return -1;
}

keybay_isolated *keybay_isolation_start(const char *helper, const char *plugin_path, uint32_t timeout_ms,
                                        char *line, size_t line_size, char *reason, size_t reason_size, int *refused) {
    *refused = 0;
    keybay_isolated *p = calloc(1, sizeof *p);
    if (p == NULL || (p->helper = strdup(helper)) == NULL || (p->plugin_path = strdup(plugin_path)) == NULL) {
        if (p) { free(p->helper); free(p); }
        say(line, line_size, reason, reason_size, "plugin-host-failed", "out of memory");
        return NULL;
    }
    p->timeout_ms = timeout_ms ? timeout_ms : 1;
    p->fd = -1;
    p->pid = -1;
    keybay_frame_in hello;
    if (isolation_start_helper(p, &hello, line, line_size, reason, reason_size, refused) != 0) {
        free(p->helper); free(p->plugin_path); free(p);
        return NULL;
    }
    int built = build_descriptor(p, &hello);
    p->hello_length = hello.length;
    p->hello = built == 0 ? malloc(hello.length) : NULL;
    if (p->hello != NULL) memcpy(p->hello, hello.data, hello.length);
    keybay_frame_release(&hello);
    if (p->hello == NULL) {
        isolation_end_helper(p, ENDED_MALFORMED, "loading", line, line_size, reason, reason_size);
        /* what build_descriptor allocated is left: this runs once per plugin and process */
        free(p->helper); free(p->plugin_path); free(p);
        return NULL;
    }
    return p;
}

void isolation_forget_parent_helper(keybay_isolated *p) {
    if (p->owner == getpid()) return;
    if (p->fd >= 0) close(p->fd);
    p->fd = -1;
    p->pid = -1;
    p->owner = getpid();
}

void keybay_isolation_stop(keybay_isolated *p) {
    char line[8], reason[8];
    isolation_forget_parent_helper(p);
    if (p->fd >= 0) isolation_end_helper(p, ENDED_CANCELLED, "", line, sizeof line, reason, sizeof reason);
    free(p->hello);
    free(p->helper);
    free(p->plugin_path);
    free(p);
}
