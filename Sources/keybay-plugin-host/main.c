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
#include "plugin_host.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

extern char **environ;

keybay_plugin plugin;
const char *application_id;

/* Tells the host the plugin could not be loaded, and ends. `failed` 1: the plugin failed (it
   crashed, the sandbox is not available); 0: it was refused (the loader's checks). */
void _Noreturn refuse(int failed, const char *reason, const char *line) {
    keybay_frame_out f;
    keybay_frame_begin(&f, KEYBAY_FRAME_REFUSED);
    keybay_frame_add_u32(&f, (uint32_t)failed);
    keybay_frame_add_string(&f, reason);
    keybay_frame_add_string(&f, line);
    (void)keybay_frame_send(HOST_FD, &f);
    _exit(1);
}

const keybay_plugin *load(const char *path, int *struct_size) {
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
void copy_descriptor(const keybay_plugin *d) {
    memset(&plugin, 0, sizeof plugin);
    size_t n = d->struct_size < sizeof plugin ? d->struct_size : sizeof plugin;
    if (n >= 8) memcpy(&plugin, d, n);
    else { plugin.abi_version = d->abi_version; plugin.struct_size = d->struct_size; }
}

int declares_sandbox(void) {
    return plugin.struct_size >= offsetof(keybay_plugin, sandbox) + sizeof(plugin.sandbox) && plugin.sandbox != NULL;
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
