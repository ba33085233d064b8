// SPDX-License-Identifier: Apache-2.0
/*
 * keybay_passphrase.h — the public parameters of the `passphrase` method plugin
 * (libkeybay-passphrase.so), for readers of stored parameters and for tests. The plugin exports
 * nothing but keybay_plugin_entry_v1; these are layout constants only.
 *
 * Layout (integers big-endian), KEYBAY_PASSPHRASE_PARAMS_BYTES = 33:
 *   format u8 (= 1) | argon2 version u32 (= 0x13) | memory_kib u32 | iterations u32 |
 *   lanes u32 | salt[16]
 * M = Argon2id v1.3(passphrase, salt, t = iterations, m = memory_kib, p = lanes), 32 bytes.
 */
#ifndef KEYBAY_PASSPHRASE_H
#define KEYBAY_PASSPHRASE_H

#define KEYBAY_PASSPHRASE_FORMAT 1u
#define KEYBAY_PASSPHRASE_ARGON2_VERSION 0x13u
#define KEYBAY_PASSPHRASE_SALT_BYTES 16u
#define KEYBAY_PASSPHRASE_PARAMS_BYTES 33u

#define KEYBAY_PASSPHRASE_OFFSET_FORMAT 0u
#define KEYBAY_PASSPHRASE_OFFSET_VERSION 1u
#define KEYBAY_PASSPHRASE_OFFSET_MEMORY_KIB 5u
#define KEYBAY_PASSPHRASE_OFFSET_ITERATIONS 9u
#define KEYBAY_PASSPHRASE_OFFSET_LANES 13u
#define KEYBAY_PASSPHRASE_OFFSET_SALT 17u

/* Caps checked when decoding (and on enroll options). */
#define KEYBAY_PASSPHRASE_MAX_MEMORY_KIB 2097152u /* 2 GiB; at least 8 x lanes */
#define KEYBAY_PASSPHRASE_MAX_ITERATIONS 16u
#define KEYBAY_PASSPHRASE_MAX_LANES 8u
#define KEYBAY_PASSPHRASE_MAX_PASSPHRASE_BYTES 1024u

#endif /* KEYBAY_PASSPHRASE_H */
