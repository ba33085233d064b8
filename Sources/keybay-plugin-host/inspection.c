// SPDX-License-Identifier: Apache-2.0
/* Inspection (plugin_host.h): the plugin's libraries and its sandbox declaration, learnt without
   running any of its code outside a sandbox. */
#define _GNU_SOURCE
#include "elf_dependencies.h"
#include "plugin_host.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

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

void inspect(const char *path, sandbox_grant *grant, const char **env_names, size_t *env_count) {
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
