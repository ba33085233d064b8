// SPDX-License-Identifier: Apache-2.0
/* The pkcs11 method's parameters: docs/pkcs11.md, "Parameters", byte for byte. */
#include "pkcs11_params.h"

#include <string.h>

void p11_label_text(const uint8_t label[P11_LABEL_BYTES], char out[P11_LABEL_BYTES + 1]) {
    size_t n = P11_LABEL_BYTES;
    while (n > 0 && (label[n - 1] == ' ' || label[n - 1] == 0)) n--;
    for (size_t i = 0; i < n; i++) out[i] = (label[i] < 0x20 || label[i] == 0x7f) ? '?' : (char)label[i];
    out[n] = '\0';
}

size_t p11_params_size(const p11_params *p) {
    size_t n = 2 + 1 + strlen(p->module) + P11_LABEL_BYTES + P11_SERIAL_BYTES + 1 + p->id_length;
    return n + (p->kind == P11_KIND_RSA_OAEP ? 3u + p->ciphertext_length : 2u * P11_POINT_BYTES);
}

void p11_params_encode(const p11_params *p, uint8_t *out) {
    size_t module_length = strlen(p->module);
    *out++ = P11_PARAMS_VERSION;
    *out++ = p->kind;
    *out++ = (uint8_t)module_length;
    memcpy(out, p->module, module_length), out += module_length;
    memcpy(out, p->label, P11_LABEL_BYTES), out += P11_LABEL_BYTES;
    memcpy(out, p->serial, P11_SERIAL_BYTES), out += P11_SERIAL_BYTES;
    *out++ = p->id_length;
    memcpy(out, p->id, p->id_length), out += p->id_length;
    if (p->kind == P11_KIND_RSA_OAEP) {
        *out++ = p->rsa_padding;
        *out++ = (uint8_t)(p->ciphertext_length >> 8);
        *out++ = (uint8_t)p->ciphertext_length;
        memcpy(out, p->ciphertext, p->ciphertext_length);
    } else {
        memcpy(out, p->token_point, P11_POINT_BYTES);
        memcpy(out + P11_POINT_BYTES, p->ephemeral_point, P11_POINT_BYTES);
    }
}

/* Takes `n` bytes from the cursor, or fails. */
#define TAKE(n)                                                     \
    do {                                                            \
        if ((size_t)(end - at) < (size_t)(n)) { *why = "they end early"; return -1; } \
    } while (0)

int p11_params_decode(const uint8_t *data, size_t length, p11_params *p, const char **why) {
    memset(p, 0, sizeof *p);
    if (data == NULL || length == 0) { *why = "they are empty"; return -1; }
    const uint8_t *at = data, *end = data + length;
    TAKE(3);
    if (at[0] != P11_PARAMS_VERSION) { *why = "their version is not 1"; return -1; }
    p->kind = at[1];
    if (p->kind != P11_KIND_RSA_OAEP && p->kind != P11_KIND_ECDH_P256) { *why = "their key kind is neither 1 (RSA) nor 2 (EC P-256)"; return -1; }
    size_t module_length = at[2];
    at += 3;
    TAKE(module_length);
    memcpy(p->module, at, module_length);
    if (memchr(p->module, 0, module_length) != NULL || (module_length > 0 && p->module[0] != '/')) {
        *why = "their module path is not an absolute path"; return -1;
    }
    at += module_length;
    TAKE(P11_LABEL_BYTES + P11_SERIAL_BYTES + 1);
    memcpy(p->label, at, P11_LABEL_BYTES), at += P11_LABEL_BYTES;
    memcpy(p->serial, at, P11_SERIAL_BYTES), at += P11_SERIAL_BYTES;
    p->id_length = *at++;
    if (p->id_length == 0) { *why = "their key id is empty"; return -1; }
    TAKE(p->id_length);
    memcpy(p->id, at, p->id_length), at += p->id_length;
    if (p->kind == P11_KIND_RSA_OAEP) {
        TAKE(3);
        p->rsa_padding = at[0];
        if (p->rsa_padding != P11_RSA_PADDING_TOKEN && p->rsa_padding != P11_RSA_PADDING_PLUGIN) {
            *why = "their RSA padding is neither 1 (on the token) nor 2 (by the plugin)"; return -1;
        }
        p->ciphertext_length = (uint16_t)(at[1] << 8 | at[2]);
        at += 3;
        if (p->ciphertext_length < P11_MIN_RSA_BYTES || p->ciphertext_length > P11_MAX_RSA_BYTES) {
            *why = "their RSA ciphertext length is outside 256..1024 bytes"; return -1;
        }
        TAKE(p->ciphertext_length);
        memcpy(p->ciphertext, at, p->ciphertext_length), at += p->ciphertext_length;
    } else {
        TAKE(2 * P11_POINT_BYTES);
        memcpy(p->token_point, at, P11_POINT_BYTES), at += P11_POINT_BYTES;
        memcpy(p->ephemeral_point, at, P11_POINT_BYTES), at += P11_POINT_BYTES;
        if (p->token_point[0] != 0x04 || p->ephemeral_point[0] != 0x04) { *why = "an EC point is not in uncompressed form"; return -1; }
    }
    if (at != end) { *why = "they have bytes after the end"; return -1; }
    return 0;
}
