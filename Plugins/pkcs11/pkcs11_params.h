// SPDX-License-Identifier: Apache-2.0
/*
 * The pkcs11 method's public parameters (docs/pkcs11.md, "Parameters"): which module, token and
 * key, and what the token's key protects M with. Encoding and strict decoding, no PKCS#11 calls.
 */
#ifndef KEYBAY_PKCS11_PARAMS_H
#define KEYBAY_PKCS11_PARAMS_H

#include <stddef.h>
#include <stdint.h>

/* Linked into the plugin, exported by none (a plugin exports its entry point only). */
#pragma GCC visibility push(hidden)

#define P11_PARAMS_VERSION 1u
#define P11_KIND_RSA_OAEP 1u   /* M encrypted with RSA-OAEP (SHA-256, MGF1-SHA-256, no label) */
#define P11_KIND_ECDH_P256 2u  /* M = HKDF over an ECDH on P-256 with an ephemeral key */

/* Where the RSA-OAEP padding is made and removed; the ciphertext is the same standard RSA-OAEP. */
#define P11_RSA_PADDING_TOKEN 1u  /* CKM_RSA_PKCS_OAEP with SHA-256 on the token */
#define P11_RSA_PADDING_PLUGIN 2u /* by the plugin, around CKM_RSA_X_509 (raw RSA) on the token */

#define P11_MAX_MODULE_PATH 255u
#define P11_LABEL_BYTES 32u    /* CK_TOKEN_INFO.label, blank-padded */
#define P11_SERIAL_BYTES 16u   /* CK_TOKEN_INFO.serialNumber, blank-padded */
#define P11_MAX_ID 255u
#define P11_MIN_RSA_BYTES 256u /* RSA-2048 and up */
#define P11_MAX_RSA_BYTES 1024u
#define P11_POINT_BYTES 65u    /* an uncompressed P-256 point: 0x04 || X || Y */

typedef struct p11_params {
    uint8_t kind;
    char module[P11_MAX_MODULE_PATH + 1]; /* "" for p11-kit's list of modules */
    uint8_t label[P11_LABEL_BYTES];
    uint8_t serial[P11_SERIAL_BYTES];
    uint8_t id_length;
    uint8_t id[P11_MAX_ID];
    uint8_t rsa_padding;                  /* RSA: P11_RSA_PADDING_* */
    uint16_t ciphertext_length;           /* RSA */
    uint8_t ciphertext[P11_MAX_RSA_BYTES];
    uint8_t token_point[P11_POINT_BYTES];     /* EC: the token key's public point */
    uint8_t ephemeral_point[P11_POINT_BYTES]; /* EC: the enrollment's ephemeral public point */
} p11_params;

/* A token label (blank-padded) as one line of text for messages: padding cut, control bytes '?'. */
void p11_label_text(const uint8_t label[P11_LABEL_BYTES], char out[P11_LABEL_BYTES + 1]);

/* The encoded length of `p`. */
size_t p11_params_size(const p11_params *p);
/* Writes p11_params_size(p) bytes to `out`. */
void p11_params_encode(const p11_params *p, uint8_t *out);
/* Decodes exactly `length` bytes; 0 on success, else -1 with `why` (a static string) saying what is wrong. */
int p11_params_decode(const uint8_t *data, size_t length, p11_params *p, const char **why);

#pragma GCC visibility pop

#endif
