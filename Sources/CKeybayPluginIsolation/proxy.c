// SPDX-License-Identifier: Apache-2.0
/* The host's side of an isolated method plugin (keybay_isolation.h). */
#define _GNU_SOURCE
#include "keybay_plugin.h"
#include "keybay_isolation.h"
#include "keybay_isolation_framing.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

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

static __thread keybay_isolated *current;

void keybay_isolation_enter(keybay_isolated *isolated) { current = isolated; }
void keybay_isolation_leave(void) { current = NULL; }
const keybay_plugin *keybay_isolation_descriptor(const keybay_isolated *isolated) { return &isolated->descriptor; }
pid_t keybay_isolation_pid(const keybay_isolated *isolated) { return isolated->fd >= 0 && isolated->owner == getpid() ? isolated->pid : -1; }

static int64_t now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

/* ---- starting a helper ----
   PR_SET_PDEATHSIG fires when the thread that started the helper ends, not the process: helpers
   are started from one thread that lives as long as the process (one per process: a forked
   child starts its own). */

typedef struct spawn_request {
    char *const *argv;
    char **envp;
    int child_fd;
    pid_t pid;
    int error;
    int done;
} spawn_request;

static pthread_mutex_t spawn_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t spawn_changed = PTHREAD_COND_INITIALIZER;
static spawn_request *spawn_pending;
static pid_t spawner_of; /* the process whose spawner thread runs */

/* In a forked child only the forking thread exists: the spawner thread, and any caller waiting
   for it, stayed in the parent. Their lock and condition variable are copied as they were (held,
   with waiters the child does not have: a broadcast would wait for them for ever), so the child
   starts from fresh ones and, on its first start, a spawner of its own. */
static void forget_parent_spawner(void) {
    spawn_lock = (pthread_mutex_t)PTHREAD_MUTEX_INITIALIZER;
    spawn_changed = (pthread_cond_t)PTHREAD_COND_INITIALIZER;
    spawn_pending = NULL;
    spawner_of = 0;
}

static pthread_once_t fork_handler_once = PTHREAD_ONCE_INIT;
static void install_fork_handler(void) { (void)pthread_atfork(NULL, NULL, forget_parent_spawner); }

static void run_spawn(spawn_request *r) {
    posix_spawn_file_actions_t actions;
    posix_spawnattr_t attributes;
    sigset_t none, all;
    sigemptyset(&none);
    sigfillset(&all);
    sigdelset(&all, SIGKILL);
    sigdelset(&all, SIGSTOP);
    int e = posix_spawn_file_actions_init(&actions);
    if (e == 0) {
        e = posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDWR, 0);
        if (e == 0) e = posix_spawn_file_actions_adddup2(&actions, 0, 1);
        if (e == 0) e = posix_spawn_file_actions_adddup2(&actions, 0, 2);
        /* child_fd is above 3 (see start_helper), so this dup2 clears its close-on-exec flag */
        if (e == 0) e = posix_spawn_file_actions_adddup2(&actions, r->child_fd, 3);
        if (e == 0) e = posix_spawnattr_init(&attributes);
        if (e == 0) {
            /* A process group of its own (pgid = its pid), which end_helper kills whole. */
            e = posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETPGROUP);
            if (e == 0) e = posix_spawnattr_setpgroup(&attributes, 0);
            if (e == 0) e = posix_spawnattr_setsigmask(&attributes, &none);
            if (e == 0) e = posix_spawnattr_setsigdefault(&attributes, &all);
            if (e == 0) e = posix_spawn(&r->pid, r->argv[0], &actions, &attributes, r->argv, r->envp);
            posix_spawnattr_destroy(&attributes);
        }
        posix_spawn_file_actions_destroy(&actions);
    }
    r->error = e;
}

static void *spawner(void *unused) {
    (void)unused;
    pthread_mutex_lock(&spawn_lock);
    for (;;) {
        while (spawn_pending == NULL) pthread_cond_wait(&spawn_changed, &spawn_lock);
        spawn_request *r = spawn_pending;
        run_spawn(r);
        /* The spawner alone takes a request off: a caller that cleared it after its own was done
           could clear the next caller's, which then waited for ever. */
        r->done = 1;
        spawn_pending = NULL;
        pthread_cond_broadcast(&spawn_changed);
    }
    return NULL;
}

static int spawn_helper(spawn_request *r) {
    (void)pthread_once(&fork_handler_once, install_fork_handler);
    pthread_mutex_lock(&spawn_lock);
    if (spawner_of != getpid()) {
        pthread_attr_t attributes;
        pthread_t thread;
        pthread_attr_init(&attributes);
        pthread_attr_setdetachstate(&attributes, PTHREAD_CREATE_DETACHED);
        /* The spawner blocks no signal the host expects to handle elsewhere. */
        sigset_t all, old;
        sigfillset(&all);
        pthread_sigmask(SIG_SETMASK, &all, &old);
        int e = pthread_create(&thread, &attributes, spawner, NULL);
        pthread_sigmask(SIG_SETMASK, &old, NULL);
        pthread_attr_destroy(&attributes);
        if (e != 0) { pthread_mutex_unlock(&spawn_lock); return e; }
        spawner_of = getpid();
        spawn_pending = NULL;
    }
    while (spawn_pending != NULL) pthread_cond_wait(&spawn_changed, &spawn_lock);
    spawn_pending = r;
    pthread_cond_broadcast(&spawn_changed);
    while (!r->done) pthread_cond_wait(&spawn_changed, &spawn_lock);
    pthread_mutex_unlock(&spawn_lock);
    return r->error;
}

/* The host's environment without the dynamic loader's injection variables: the helper is not
   the host's to instrument (a preloaded fault-injection shim would count the helper's calls). */
static char **helper_environment(void) {
    size_t n = 0;
    while (environ != NULL && environ[n] != NULL) n++;
    char **env = calloc(n + 1, sizeof *env);
    if (env == NULL) return NULL;
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        if (strncmp(environ[i], "LD_PRELOAD=", 11) == 0 || strncmp(environ[i], "LD_AUDIT=", 9) == 0) continue;
        env[k++] = environ[i];
    }
    return env;
}

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

typedef enum ending { ENDED_CLOSED, ENDED_MALFORMED, ENDED_TIMED_OUT, ENDED_CANCELLED } ending;

/* Ends the helper and says why it ended, in `line` and `reason`. The helper's whole process group
   (the helper, its inspection child) is killed while the helper is not yet reaped, so the group's
   id cannot have been given to anyone else. */
static void end_helper(keybay_isolated *p, ending how, const char *during, char *line, size_t line_size, char *reason, size_t reason_size) {
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

static keybay_status proxy_probe(const keybay_host *host);
static keybay_status proxy_enroll(const keybay_host *host, const keybay_option *options, size_t count, keybay_buffer *params_out,
                                  uint8_t secret_out[KEYBAY_METHOD_SECRET_BYTES]);
static keybay_status proxy_unwrap(const keybay_host *host, const uint8_t *params, size_t length, uint8_t secret_out[KEYBAY_METHOD_SECRET_BYTES]);
static keybay_status proxy_verify(const keybay_host *host, const uint8_t *params, size_t length, uint8_t secret_out[KEYBAY_METHOD_SECRET_BYTES]);
static keybay_status proxy_describe(const keybay_host *host, const uint8_t *params, size_t length, keybay_buffer *text_out);
static void proxy_free_buffer(keybay_buffer *buffer);

/* A buffer the plugin claimed to be longer than the frames carry: handed to the host with the
   claimed length and this marker, which the host's limits (all far below 64 KiB) refuse unread. */
static uint8_t oversize_marker;

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

/* Starts the helper and reads its first frame. 0 with the descriptor frame in `hello`; -1 with
   `line` and `reason` said (`*refused` 1 for a REFUSED frame that says the plugin was refused). */
static int start_helper(keybay_isolated *p, keybay_frame_in *hello, char *line, size_t line_size, char *reason, size_t reason_size, int *refused) {
    *refused = 0;
    int pair[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair) != 0) {
        say(line, line_size, reason, reason_size, "plugin-host-failed", "cannot make a socket for plugin %s: %s", p->plugin_path, strerror(errno));
        return -1;
    }
    int child_fd = fcntl(pair[1], F_DUPFD_CLOEXEC, 10);
    close(pair[1]);
    struct timeval stall = { FRAME_STALL_MS / 1000, (FRAME_STALL_MS % 1000) * 1000 };
    char **env = helper_environment();
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
    int e = spawn_helper(&r);
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
            end_helper(p, ENDED_CLOSED, "loading", line, line_size, reason, reason_size);
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
    end_helper(p, got == 2 ? ENDED_TIMED_OUT : got == 1 ? ENDED_CLOSED : ENDED_MALFORMED, "loading", line, line_size, reason, reason_size);
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
    if (start_helper(p, &hello, line, line_size, reason, reason_size, refused) != 0) {
        free(p->helper); free(p->plugin_path); free(p);
        return NULL;
    }
    int built = build_descriptor(p, &hello);
    p->hello_length = hello.length;
    p->hello = built == 0 ? malloc(hello.length) : NULL;
    if (p->hello != NULL) memcpy(p->hello, hello.data, hello.length);
    keybay_frame_release(&hello);
    if (p->hello == NULL) {
        end_helper(p, ENDED_MALFORMED, "loading", line, line_size, reason, reason_size);
        /* what build_descriptor allocated is left: this runs once per plugin and process */
        free(p->helper); free(p->plugin_path); free(p);
        return NULL;
    }
    return p;
}

/* In a forked child, the helper and its socket are the parent's: the child closes its copy of
   the socket (the parent keeps its own) and never signals or waits for the parent's helper. */
static void forget_parent_helper(keybay_isolated *p) {
    if (p->owner == getpid()) return;
    if (p->fd >= 0) close(p->fd);
    p->fd = -1;
    p->pid = -1;
    p->owner = getpid();
}

void keybay_isolation_stop(keybay_isolated *p) {
    char line[8], reason[8];
    forget_parent_helper(p);
    if (p->fd >= 0) end_helper(p, ENDED_CANCELLED, "", line, sizeof line, reason, sizeof reason);
    free(p->hello);
    free(p->helper);
    free(p->plugin_path);
    free(p);
}

/* ---- a call ---- */

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
    end_helper(p, how, during, line, sizeof line, reason, sizeof reason);
    if (how == ENDED_CANCELLED) return KEYBAY_ERR_CANCELLED;
    if (KEYBAY_HOST_HAS(host, set_error_detail)) host->set_error_detail(host->context, reason, -1, NULL);
    host->set_error(host->context, line);
    return KEYBAY_ERR_INTERNAL;
}

/* A helper for the call: the running one, or a new one whose descriptor must be the first one's. */
static keybay_status ensure_helper(keybay_isolated *p, const keybay_host *host) {
    forget_parent_helper(p);
    if (p->fd >= 0) return KEYBAY_OK;
    char line[512], reason[48];
    int refused = 0;
    keybay_frame_in hello;
    if (start_helper(p, &hello, line, sizeof line, reason, sizeof reason, &refused) != 0) {
        if (KEYBAY_HOST_HAS(host, set_error_detail)) host->set_error_detail(host->context, reason, -1, NULL);
        host->set_error(host->context, line);
        return KEYBAY_ERR_INTERNAL;
    }
    int same = hello.length == p->hello_length && memcmp(hello.data, p->hello, hello.length) == 0;
    keybay_frame_release(&hello);
    if (!same) {
        end_helper(p, ENDED_MALFORMED, "loading", line, sizeof line, reason, sizeof reason);
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

static void proxy_free_buffer(keybay_buffer *buffer) {
    if (buffer->data != NULL && buffer->data != &oversize_marker) {
        explicit_bzero(buffer->data, buffer->length);
        free(buffer->data);
    }
    buffer->data = NULL;
    buffer->length = 0;
}

static keybay_status proxy_probe(const keybay_host *host) {
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

static keybay_status proxy_enroll(const keybay_host *host, const keybay_option *options, size_t count, keybay_buffer *params_out,
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

static keybay_status proxy_unwrap(const keybay_host *host, const uint8_t *params, size_t length, uint8_t secret_out[KEYBAY_METHOD_SECRET_BYTES]) {
    return unwrap_or_verify(KEYBAY_OP_UNWRAP, host, params, length, secret_out);
}

static keybay_status proxy_verify(const keybay_host *host, const uint8_t *params, size_t length, uint8_t secret_out[KEYBAY_METHOD_SECRET_BYTES]) {
    return unwrap_or_verify(KEYBAY_OP_VERIFY, host, params, length, secret_out);
}

static keybay_status proxy_describe(const keybay_host *host, const uint8_t *params, size_t length, keybay_buffer *text_out) {
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
