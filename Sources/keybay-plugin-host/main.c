// SPDX-License-Identifier: Apache-2.0
/*
 * keybay-plugin-host — runs one method plugin for one host process, sandboxed
 * (docs/plugins.md, "Isolation"). Started by the host with the plugin's checked, resolved path
 * as its argument and a socketpair end as fd 3; it dies with the host (PR_SET_PDEATHSIG).
 *
 * 1. Limits that hold for any plugin (no core dumps, not dumpable, memory, CPU time).
 * 2. Inspection: the libraries the plugin needs are read from its ELF file (never by loading it);
 *    a child, with the environment emptied, Landlock read-only and the seccomp allow-list, loads
 *    the plugin and reports its sandbox declaration.
 * 3. The environment is emptied but for the declared variables; the sandbox is entered with what
 *    the declaration grants; only then is the plugin loaded for use.
 *    A plugin that declares nothing is already in the sandbox it runs in, in the child: the
 *    child serves it (the plugin is loaded once), and this process only mirrors how it ended.
 * 4. Calls are served one at a time until the host closes the socket.
 */
#define _GNU_SOURCE
#include "keybay_isolation_framing.h"
#include "elf_dependencies.h"
#include "keybay_plugin.h"
#include "sandbox.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#define HOST_FD 3
#define MAX_OUTPUT (64u * 1024u) /* bytes of a plugin buffer sent back; the host's limits are lower */

extern char **environ;

static keybay_plugin plugin; /* the plugin's descriptor, copied: the fields past its struct_size NULL */
static const char *application_id;

/* Tells the host the plugin could not be loaded, and ends. `failed` 1: the plugin failed (it
   crashed, the sandbox is not available); 0: it was refused (the loader's checks). */
static void _Noreturn refuse(int failed, const char *reason, const char *line) {
    keybay_frame_out f;
    keybay_frame_begin(&f, KEYBAY_FRAME_REFUSED);
    keybay_frame_add_u32(&f, (uint32_t)failed);
    keybay_frame_add_string(&f, reason);
    keybay_frame_add_string(&f, line);
    (void)keybay_frame_send(HOST_FD, &f);
    _exit(1);
}

/* ---- the host services, as frames ---- */

static void send_or_exit(keybay_frame_out *f) {
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

static keybay_host make_host(void) {
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

/* ---- loading ---- */

static const keybay_plugin *load(const char *path, int *struct_size) {
    void *handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (handle == NULL) {
        const char *e = dlerror();
        char line[512];
        snprintf(line, sizeof line, "cannot load plugin %s: %s", path, e ? e : "unknown error");
        refuse(0, "dlopen-failed", line);
    }
    void *symbol = dlsym(handle, KEYBAY_PLUGIN_ENTRY_SYMBOL);
    if (symbol == NULL) refuse(0, "no-entry-symbol", "the plugin has no entry symbol " KEYBAY_PLUGIN_ENTRY_SYMBOL);
    keybay_plugin_entry_fn entry;
    memcpy(&entry, &symbol, sizeof entry);
    const keybay_plugin *d = entry();
    if (d == NULL) refuse(0, "no-descriptor", "the plugin returned no descriptor");
    *struct_size = (int)d->struct_size;
    return d;
}

/* The plugin's descriptor as this header declares it: the plugin's first struct_size bytes. */
static void copy_descriptor(const keybay_plugin *d) {
    memset(&plugin, 0, sizeof plugin);
    size_t n = d->struct_size < sizeof plugin ? d->struct_size : sizeof plugin;
    if (n >= 8) memcpy(&plugin, d, n);
    else { plugin.abi_version = d->abi_version; plugin.struct_size = d->struct_size; }
}

static int declares_sandbox(void) {
    return plugin.struct_size >= offsetof(keybay_plugin, sandbox) + sizeof(plugin.sandbox) && plugin.sandbox != NULL;
}

/* Inspection, so that no plugin code runs outside a sandbox:
   1. The plugin's ELF file is read as data (elf_dependencies.c): the libraries it needs outside
      the system directories are granted read, and a plugin with an audit tag is refused. No
      dynamic loader ever maps it outside the sandbox.
   2. A child in the sandbox those grant, with the environment emptied, loads the plugin and
      writes its sandbox declaration to a pipe: records of a size_t length and bytes. */

static void list_libraries(const char *path, sandbox_grant *grant) {
    const char *audited = NULL;
    if (elf_add_dependencies(path, grant->library_path, grant, &audited) != 0) {
        char line[512];
        snprintf(line, sizeof line, "%s carries a DT_AUDIT or DT_DEPAUDIT tag: the dynamic loader would run its code outside any sandbox", audited);
        refuse(0, "audit-library", line);
    }
}

/* The record the inspection child writes instead of any when the plugin declares nothing. */
#define SERVING_MARKER ((size_t)-1)

static void serve_calls(void) __attribute__((noreturn));

static void write_declaration(const char *path, const sandbox_grant *libraries, int fd) {
    static char *no_environment[] = { NULL };
    environ = no_environment;
    const char *why = NULL;
    if (sandbox_enter(libraries, &why) != 0) _exit(3);
    int size = 0;
    copy_descriptor(load(path, &size));
    if (!declares_sandbox() || plugin.sandbox[0] == NULL) {
        /* Nothing declared: this sandbox (the libraries, an empty environment, no sockets) is the
           one the plugin would get. Serve from here. */
        size_t marker = SERVING_MARKER;
        if (write(fd, &marker, sizeof marker) != (ssize_t)sizeof marker) _exit(4);
        close(fd);
        serve_calls();
    }
    for (size_t i = 0; i < SANDBOX_MAX_ENTRIES + 1 && plugin.sandbox[i] != NULL; i++) {
        size_t n = strnlen(plugin.sandbox[i], SANDBOX_MAX_ENTRY + 1);
        if (write(fd, &n, sizeof n) != (ssize_t)sizeof n || write(fd, plugin.sandbox[i], n) != (ssize_t)n) _exit(4);
    }
    _exit(0);
}

static char *read_record(int fd, size_t *n, int *end, int *serving) {
    ssize_t r = read(fd, n, sizeof *n);
    if (r == 0) { *end = 1; return NULL; }
    if (r == (ssize_t)sizeof *n && *n == SERVING_MARKER) { *serving = 1; return NULL; }
    if (r != (ssize_t)sizeof *n || *n == 0 || *n > SANDBOX_MAX_ENTRY + 1) return NULL;
    char *s = malloc(*n + 1);
    if (s == NULL) return NULL;
    size_t got = 0;
    while (got < *n) {
        r = read(fd, s + got, *n - got);
        if (r <= 0) { free(s); return NULL; }
        got += (size_t)r;
    }
    s[*n] = 0;
    return s;
}

/* The child serves the plugin: this process lets go of the host's socket (so that the host sees
   it close when the child ends), waits, and ends as the child did, so that the host, which knows
   this process, reports the plugin's signal or exit status. */
static void mirror(pid_t child, int pipe) __attribute__((noreturn));
static void mirror(pid_t child, int pipe) {
    close(pipe);
    close(HOST_FD);
    int status = 0;
    while (waitpid(child, &status, 0) < 0) {
        if (errno != EINTR) _exit(1);
    }
    if (WIFSIGNALED(status)) {
        int sig = WTERMSIG(status);
        sigset_t only;
        sigemptyset(&only);
        sigaddset(&only, sig);
        signal(sig, SIG_DFL);
        sigprocmask(SIG_UNBLOCK, &only, NULL);
        raise(sig);
        _exit(128 + sig);
    }
    _exit(WIFEXITED(status) ? WEXITSTATUS(status) : 1);
}

/* Runs inspection and fills `grant` and the declared environment names. */
static void inspect(const char *path, sandbox_grant *grant, const char **env_names, size_t *env_count) {
    list_libraries(path, grant);
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0) refuse(1, "plugin-host-failed", "cannot make a pipe for inspection");
    pid_t helper = getpid();
    pid_t child = fork();
    if (child < 0) refuse(1, "plugin-host-failed", "cannot start inspection");
    if (child == 0) {
        /* HOST_FD stays open: a plugin refused in the child (dlopen, no descriptor) tells the
           host why itself, and a child that serves (nothing declared) serves on it. Plugin code
           gains nothing by it: it has HOST_FD in the helper too. The child dies with the helper,
           which the host may kill. */
        if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != helper) _exit(0);
        close(fds[0]);
        write_declaration(path, grant, fds[1]);
    }
    close(fds[1]);
    int end = 0, malformed = 0, count = 0, serving = 0;
    for (;;) {
        size_t n = 0;
        char *record = read_record(fds[0], &n, &end, &serving);
        if (serving && count == 0) mirror(child, fds[0]);
        if (end) break;
        if (record == NULL) { malformed = 1; break; }
        if (n > SANDBOX_MAX_ENTRY || ++count > (int)SANDBOX_MAX_ENTRIES) refuse(0, "sandbox-declaration", "the sandbox declaration has more than 32 entries, or one longer than 255 bytes");
        const char *why = NULL;
        if (strncmp(record, "env:", 4) == 0) {
            if (record[4] == 0 || strchr(record + 4, '=') != NULL) refuse(0, "sandbox-declaration", "an env: entry names no variable");
            env_names[(*env_count)++] = record + 4;
        } else if (strncmp(record, "unix:", 5) == 0) {
            /* A socket the host connects for the plugin (connect_socket); the host checks the entry. */
        } else if (sandbox_add_declaration(grant, record, &why) != 0) {
            char line[512];
            snprintf(line, sizeof line, "the plugin's sandbox entry '%.255s' is refused: %s", record, why);
            refuse(0, "sandbox-declaration", line);
        }
    }
    close(fds[0]);
    int status = 0;
    while (waitpid(child, &status, 0) < 0 && errno == EINTR) {}
    if (WIFSIGNALED(status)) {
        char line[160];
        snprintf(line, sizeof line, "the plugin crashed while it was loaded (signal %d, %s)", WTERMSIG(status), strsignal(WTERMSIG(status)));
        refuse(1, "plugin-crashed", line);
    }
    if (WIFEXITED(status) && WEXITSTATUS(status) == 3) refuse(1, "sandbox-unavailable", "this kernel cannot sandbox the plugin (Landlock ABI 3 and seccomp are needed); KEYBAY_PLUGIN_ISOLATION=none runs plugins in process");
    /* load() in the child has sent its REFUSED frame. */
    if (WIFEXITED(status) && WEXITSTATUS(status) == 1) _exit(1);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || malformed) refuse(1, "plugin-exited", "the plugin ended while it was loaded");
}

/* Empties the environment but for the declared variables. `environ` is an empty list, never
   NULL as clearenv leaves it: the Swift runtime reads it without checking. */
static void keep_environment(const char **names, size_t count) {
    static char *kept[SANDBOX_MAX_ENTRIES + 1];
    size_t n = 0;
    for (size_t i = 0; i < count; i++) {
        const char *v = getenv(names[i]);
        if (v == NULL) continue;
        size_t a = strlen(names[i]), b = strlen(v);
        char *entry = malloc(a + b + 2);
        if (entry == NULL) refuse(1, "plugin-host-failed", "out of memory");
        memcpy(entry, names[i], a); entry[a] = '='; memcpy(entry + a + 1, v, b + 1);
        kept[n++] = entry;
    }
    kept[n] = NULL;
    environ = kept;
}

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

/* ---- serving calls ---- */

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

/* HELLO, then one CALL at a time until the host closes the socket. */
static void serve_calls(void) {
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

int main(int argc, char **argv) {
    /* Die with the host; a host that is already gone gets no plugin run for it. */
    if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() == 1) _exit(0);
    if (argc != 2 || argv[1][0] != '/' || fcntl(HOST_FD, F_GETFD) < 0) {
        fprintf(stderr, "keybay-plugin-host is started by Keybay, not by hand\n");
        return 2;
    }
    close_range(HOST_FD + 1, ~0u, 0);
    const char *path = argv[1];
    const char *why = NULL;
    if (sandbox_limit_resources(&why) != 0) refuse(1, "sandbox-unavailable", why);
    sandbox_grant grant = { .plugin_path = path, .library_path = getenv("LD_LIBRARY_PATH") };
    const char *env_names[SANDBOX_MAX_ENTRIES];
    size_t env_count = 0;
    inspect(path, &grant, env_names, &env_count);
    keep_environment(env_names, env_count);
    if (sandbox_enter(&grant, &why) != 0) refuse(1, "sandbox-unavailable", why);
    int size = 0;
    copy_descriptor(load(path, &size));
    serve_calls();
}
