// SPDX-License-Identifier: Apache-2.0
/* The libraries a plugin needs, read from its ELF file without running it (elf_dependencies.c). */
#ifndef KEYBAY_HELPER_ELF_DEPENDENCIES_H
#define KEYBAY_HELPER_ELF_DEPENDENCIES_H

#include "sandbox.h"

/* Adds to `grant` every library file outside the system directories that loading
   `plugin_path` would map, found as the dynamic loader finds it (`library_path` is
   LD_LIBRARY_PATH, or NULL). 0; or -1 when the plugin or one of those libraries carries a
   DT_AUDIT or DT_DEPAUDIT tag, with `*audited` naming that file: such a plugin is refused. */
int elf_add_dependencies(const char *plugin_path, const char *library_path, sandbox_grant *grant, const char **audited);

#endif
