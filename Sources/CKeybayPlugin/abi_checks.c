// SPDX-License-Identifier: Apache-2.0
/* Compile-time checks of the ABI's layout assumptions (this target is otherwise header-only). */
#include "keybay_plugin.h"

_Static_assert(offsetof(keybay_plugin, abi_version) == 0, "abi_version comes first");
_Static_assert(offsetof(keybay_plugin, struct_size) == 4, "struct_size comes second");
_Static_assert(offsetof(keybay_host, abi_version) == 0, "abi_version comes first");
_Static_assert(offsetof(keybay_host, struct_size) == 4, "struct_size comes second");
_Static_assert(sizeof(keybay_status) == sizeof(int), "statuses are int-sized");
_Static_assert(KEYBAY_PLUGIN_STRUCT_SIZE_V1_0 == offsetof(keybay_plugin, describe_with_host),
               "the first version-1 descriptor ends where the added fields begin");
_Static_assert(sizeof(keybay_plugin) == KEYBAY_PLUGIN_STRUCT_SIZE_V1_0 + KEYBAY_PLUGIN_FIELDS_ADDED_IN_V1 * sizeof(void (*)(void)),
               "KEYBAY_PLUGIN_FIELDS_ADDED_IN_V1 counts the pointers added after root_reset");
_Static_assert(offsetof(keybay_plugin, root_open_with_floor) == offsetof(keybay_plugin, root_protection) + sizeof(void (*)(void)),
               "the rollback-floor operations follow root_protection");
