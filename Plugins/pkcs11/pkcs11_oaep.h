// SPDX-License-Identifier: Apache-2.0
/*
 * EME-OAEP (RFC 8017 §7.1) with SHA-256, MGF1-SHA-256 and an empty label, for a 32-byte message:
 * the padding of RSA-OAEP, for tokens that decrypt raw RSA (CKM_RSA_X_509) but refuse
 * CKM_RSA_PKCS_OAEP with SHA-256 (SoftHSM 2.6 takes SHA-1 only). The ciphertext is the same
 * standard RSA-OAEP either way.
 */
#ifndef KEYBAY_PKCS11_OAEP_H
#define KEYBAY_PKCS11_OAEP_H

#include <stddef.h>
#include <stdint.h>

/* Linked into the plugin, exported by none (a plugin exports its entry point only). */
#pragma GCC visibility push(hidden)

/* Encodes the 32-byte `message` into `em` (k bytes, k the modulus size, 98 <= k <= 1024). */
void p11_oaep_encode(const uint8_t message[32], uint8_t *em, size_t k);
/* Decodes `em` (k bytes) into `message`; 0 when it is a valid encoding of 32 bytes, else -1.
   The checks do not branch on the secret bytes. `scratch` holds k bytes. */
int p11_oaep_decode(const uint8_t *em, size_t k, uint8_t *scratch, uint8_t message[32]);

#pragma GCC visibility pop

#endif
