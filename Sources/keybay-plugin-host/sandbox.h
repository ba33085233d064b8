// SPDX-License-Identifier: Apache-2.0
/* The helper's sandbox (docs/plugins.md, "Isolation: the sandbox"). */
#ifndef KEYBAY_HELPER_SANDBOX_H
#define KEYBAY_HELPER_SANDBOX_H

#include <stddef.h>

#define SANDBOX_MAX_ENTRIES 32u
#define SANDBOX_MAX_ENTRY 255u
#define SANDBOX_MAX_LIBRARIES 256u

/* What one plugin gets: its declaration, parsed, and the library files it was seen to load. */
typedef struct sandbox_grant {
    const char *plugin_path;
    const char *device[SANDBOX_MAX_ENTRIES];
    size_t device_count;
    const char *read[SANDBOX_MAX_ENTRIES];
    size_t read_count;
    const char *library[SANDBOX_MAX_LIBRARIES];
    size_t library_count;
    /* The host's LD_LIBRARY_PATH (the dynamic loader keeps searching it after the environment is
       emptied): its absolute directories are granted read, as the host would have read them. */
    const char *library_path;
} sandbox_grant;

/* Checks one declaration entry and adds it to `grant` (env: entries are the caller's). 0 when
   it is well formed; -1 with `why` set when not. */
int sandbox_add_declaration(sandbox_grant *grant, const char *entry, const char **why);

/* Whether `path` lies in one of the system library directories, which every sandbox may read. */
int sandbox_is_system_library(const char *path);

/* Whether `path` is a regular ELF file (not followed through a final symbolic link). */
int sandbox_is_elf_file(const char *path);

/* Limits that hold whatever the plugin declares: no core dumps, not dumpable (no ptrace of the
   helper by its user), memory, CPU time, open files. 0, or -1 with `why`. */
int sandbox_limit_resources(const char **why);

/* Landlock (files, TCP, abstract sockets, signals) and then the seccomp allow-list, for this
   thread and every thread it starts. No way back. 0, or -1 with `why` (a kernel without
   Landlock ABI 3 or seccomp: the plugin is not run). */
int sandbox_enter(const sandbox_grant *grant, const char **why);

#endif
