// SPDX-License-Identifier: Apache-2.0
/*
 * keybay_plugin_descriptor.h — what every first-party descriptor says alike, said once, so that
 * each plugin's descriptor holds its own facts only (id, name, version, kind, flags, options,
 * operations). The bytes of the descriptor are those of keybay_plugin.h: these are initialisers.
 *
 *   static const keybay_plugin descriptor = {
 *       KEYBAY_DESCRIPTOR("pkcs11", "PKCS#11 token (smart card, HSM)", "1", KEYBAY_KIND_METHOD, KEYBAY_FLAG_INTERACTIVE),
 *       KEYBAY_DESCRIPTOR_OPTIONS(p11_options),
 *       .free_buffer = keybay_method_free_buffer,
 *       KEYBAY_METHOD_OPERATIONS(p11_),
 *   };
 *   KEYBAY_PLUGIN_ENTRY(descriptor)
 *
 * Not installed, not part of the ABI.
 */
#ifndef KEYBAY_PLUGIN_DESCRIPTOR_H
#define KEYBAY_PLUGIN_DESCRIPTOR_H

#include "keybay_plugin.h"

/* This ABI's version and size, then the plugin's own facts. */
#define KEYBAY_DESCRIPTOR(id_, name_, version_, kind_, flags_)                                     \
    .abi_version = KEYBAY_PLUGIN_ABI_VERSION, .struct_size = sizeof(keybay_plugin), .id = (id_),   \
    .name = (name_), .version = (version_), .kind = (kind_), .flags = (flags_)

/* The option specs and their number. */
#define KEYBAY_DESCRIPTOR_OPTIONS(specs) .options = (specs), .option_count = sizeof(specs) / sizeof((specs)[0])

/* A method's operations, named <prefix>probe, <prefix>enroll, <prefix>unwrap and <prefix>describe. */
#define KEYBAY_METHOD_OPERATIONS(prefix)                                                           \
    .probe = prefix##probe, .enroll = prefix##enroll, .unwrap = prefix##unwrap,                     \
    .describe_with_host = prefix##describe

/* The entry point, the one symbol a plugin exports. */
#define KEYBAY_PLUGIN_ENTRY(descriptor)                                                            \
    KEYBAY_EXPORT const keybay_plugin *keybay_plugin_entry_v1(void) { return &(descriptor); }

/* The same for a plugin whose every operation needs libsodium: NULL (no plugin) when it cannot
   be initialised. Needs <sodium.h>. */
#define KEYBAY_PLUGIN_ENTRY_AFTER_SODIUM(descriptor)                                               \
    KEYBAY_EXPORT const keybay_plugin *keybay_plugin_entry_v1(void) {                              \
        return sodium_init() < 0 ? NULL : &(descriptor);                                           \
    }

#endif /* KEYBAY_PLUGIN_DESCRIPTOR_H */
