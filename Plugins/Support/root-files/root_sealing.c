// SPDX-License-Identifier: Apache-2.0
/* The provider state and the sealing of the roots that hold a 32-byte root key (file-root,
   secret-service, portal): see include/keybay_root_files.h and docs/format.md §4. */
#include <string.h>

#include <sodium.h>

#include "keybay_root_files.h"

void keybay_rf_provider_state(const char *label, const uint8_t *domain, const uint8_t *root, uint8_t out[32]) {
    crypto_hash_sha256_state h;
    const uint8_t zero = 0;
    crypto_hash_sha256_init(&h);
    crypto_hash_sha256_update(&h, (const uint8_t *)label, strlen(label));
    crypto_hash_sha256_update(&h, &zero, 1);
    crypto_hash_sha256_update(&h, domain, 32);
    crypto_hash_sha256_update(&h, root, 32);
    crypto_hash_sha256_final(&h, out);
    sodium_memzero(&h, sizeof h);
}

keybay_status keybay_rf_seal(const keybay_host *host, const uint8_t *root, const uint8_t *plaintext, size_t plaintext_length,
                             const uint8_t *aad, size_t aad_length, keybay_buffer *sealed_out) {
    /* The core never seals an empty package and refuses an empty one from root_open. */
    if (plaintext_length == 0) return keybay_rf_fail(host, KEYBAY_ERR_INTERNAL, "refusing to seal an empty key package");
    size_t length = crypto_aead_xchacha20poly1305_ietf_NPUBBYTES + plaintext_length + crypto_aead_xchacha20poly1305_ietf_ABYTES;
    if (!keybay_rf_buffer_alloc(sealed_out, length)) return keybay_rf_fail(host, KEYBAY_ERR_INTERNAL, "out of memory");
    uint8_t *nonce = sealed_out->data;
    randombytes_buf(nonce, crypto_aead_xchacha20poly1305_ietf_NPUBBYTES);
    unsigned long long written = 0;
    crypto_aead_xchacha20poly1305_ietf_encrypt(nonce + crypto_aead_xchacha20poly1305_ietf_NPUBBYTES, &written,
                                               plaintext, plaintext_length, aad, aad_length, NULL, nonce, root);
    return KEYBAY_OK;
}

keybay_status keybay_rf_open(const keybay_host *host, const uint8_t *root, const uint8_t *sealed, size_t sealed_length,
                             const uint8_t *aad, size_t aad_length, keybay_buffer *plaintext_out, const char *root_name) {
    const size_t overhead = crypto_aead_xchacha20poly1305_ietf_NPUBBYTES + crypto_aead_xchacha20poly1305_ietf_ABYTES;
    if (sealed_length <= overhead)
        return keybay_rf_fail(host, KEYBAY_ERR_INTEGRITY, "the sealed key package is too short for %s", root_name);
    if (!keybay_rf_buffer_alloc(plaintext_out, sealed_length - overhead))
        return keybay_rf_fail(host, KEYBAY_ERR_INTERNAL, "out of memory opening the key package with %s", root_name);
    unsigned long long written = 0;
    if (crypto_aead_xchacha20poly1305_ietf_decrypt(plaintext_out->data, &written, NULL,
                                                   sealed + crypto_aead_xchacha20poly1305_ietf_NPUBBYTES,
                                                   sealed_length - crypto_aead_xchacha20poly1305_ietf_NPUBBYTES,
                                                   aad, aad_length, sealed, root) != 0) {
        keybay_rf_free_buffer(plaintext_out);
        return keybay_rf_fail(host, KEYBAY_ERR_INTEGRITY, "the store's key package failed authentication with %s (the store file was modified)", root_name);
    }
    return KEYBAY_OK;
}
