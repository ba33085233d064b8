// SPDX-License-Identifier: Apache-2.0
/*
 * keybay_recovery_key.h — the recovery key as people see it, shared by the `recovery` method and
 * the `tpm2` root's recovery: 32 random bytes K and a 3-byte checksum (keyed BLAKE2b of K), in
 * Crockford base32, 56 characters in 7 groups of 8 (docs/recovery.md specifies it byte for
 * byte), and its QR code in Unicode half blocks (libqrencode.so.4, opened on first use; without
 * it there is no picture, never an error). Not installed, not part of the ABI. Every buffer
 * passed in that holds K, its text, its picture or a derived value is the caller's guarded memory.
 */
#ifndef KEYBAY_RECOVERY_KEY_H
#define KEYBAY_RECOVERY_KEY_H

#include <stddef.h>
#include <stdint.h>

#include "keybay_plugin.h"

#pragma GCC visibility push(hidden)

#define KEYBAY_RK_KEY_BYTES 32u
#define KEYBAY_RK_CHECKSUM_BYTES 3u
#define KEYBAY_RK_RAW_BYTES (KEYBAY_RK_KEY_BYTES + KEYBAY_RK_CHECKSUM_BYTES) /* 35 bytes = 280 bits */
#define KEYBAY_RK_SYMBOLS (KEYBAY_RK_RAW_BYTES * 8u / 5u)                     /* 56 characters of 5 bits */
#define KEYBAY_RK_GROUP 8u
#define KEYBAY_RK_TEXT_BYTES (KEYBAY_RK_SYMBOLS + KEYBAY_RK_SYMBOLS / KEYBAY_RK_GROUP - 1u) /* 7 groups, 6 dashes: 62 */
#define KEYBAY_RK_INPUT_BYTES 256u /* what a typed key may take, separators included */
#define KEYBAY_RK_HASH_BYTES 32u

/* The 3 checksum bytes of K (raw's first 32 bytes) into `out`; `hash` is scratch. */
void keybay_rk_checksum(const uint8_t raw[KEYBAY_RK_RAW_BYTES], uint8_t hash[KEYBAY_RK_HASH_BYTES], uint8_t out[KEYBAY_RK_CHECKSUM_BYTES]);

/* A new key into `raw`: K from libsodium's generator, then its checksum. */
void keybay_rk_generate(uint8_t raw[KEYBAY_RK_RAW_BYTES], uint8_t hash[KEYBAY_RK_HASH_BYTES]);

/* raw -> "ABCDEFGH-JKMNPQRS-…" (7 groups of 8), NUL-terminated. */
void keybay_rk_encode(const uint8_t raw[KEYBAY_RK_RAW_BYTES], char text[KEYBAY_RK_TEXT_BYTES + 1]);

/* A typed key (`length` bytes; separators, case and Crockford's substitutions allowed) -> raw,
   its checksum checked. WRONG_SECRET with a reason (typo-character, typo-length, typo-checksum)
   and a line starting "<who>: " for a key that is not one; `symbols` and `hash` are scratch. */
keybay_status keybay_rk_decode(const keybay_host *host, const char *who, const uint8_t *input, size_t length,
                               uint8_t symbols[KEYBAY_RK_SYMBOLS], uint8_t hash[KEYBAY_RK_HASH_BYTES], uint8_t raw[KEYBAY_RK_RAW_BYTES]);

/* The QR code of `text` (guarded memory, keybay_rk_picture_free), or NULL when libqrencode is
   missing or fails, logged at info as "<who>: no QR code: …". */
char *keybay_rk_picture(const keybay_host *host, const char *who, const char *text, size_t *size_out);
void keybay_rk_picture_free(char *picture, size_t size);

#pragma GCC visibility pop

#endif /* KEYBAY_RECOVERY_KEY_H */
