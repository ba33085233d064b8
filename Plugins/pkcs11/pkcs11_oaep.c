// SPDX-License-Identifier: Apache-2.0
/* EME-OAEP with SHA-256 (RFC 8017 §7.1.1 step 2, §7.1.2 step 3) for a 32-byte message. */
#include "pkcs11_oaep.h"

#include <string.h>

#include <sodium.h>

#define H 32u /* SHA-256 */

/* MGF1-SHA-256 (RFC 8017 B.2.1): XORs the mask of `seed` into `out`. */
static void p11_mgf1_xor(const uint8_t *seed, size_t seed_length, uint8_t *out, size_t length) {
    uint8_t block[H];
    for (uint32_t counter = 0; length > 0; counter++) {
        uint8_t c[4] = {(uint8_t)(counter >> 24), (uint8_t)(counter >> 16), (uint8_t)(counter >> 8), (uint8_t)counter};
        crypto_hash_sha256_state st;
        crypto_hash_sha256_init(&st);
        crypto_hash_sha256_update(&st, seed, seed_length);
        crypto_hash_sha256_update(&st, c, sizeof c);
        crypto_hash_sha256_final(&st, block);
        size_t n = length < H ? length : H;
        for (size_t i = 0; i < n; i++) out[i] ^= block[i];
        out += n;
        length -= n;
    }
    sodium_memzero(block, sizeof block);
}

void p11_oaep_encode(const uint8_t message[32], uint8_t *em, size_t k) {
    /* EM = 0x00 || maskedSeed (H) || maskedDB (k-H-1); DB = lHash || PS || 0x01 || M */
    uint8_t *seed = em + 1, *db = em + 1 + H;
    size_t db_length = k - H - 1;
    em[0] = 0;
    crypto_hash_sha256(db, NULL, 0); /* lHash of the empty label */
    memset(db + H, 0, db_length - H - 32 - 1);
    db[db_length - 32 - 1] = 0x01;
    memcpy(db + db_length - 32, message, 32);
    randombytes_buf(seed, H);
    p11_mgf1_xor(seed, H, db, db_length);
    p11_mgf1_xor(db, db_length, seed, H);
}

int p11_oaep_decode(const uint8_t *em, size_t k, uint8_t *scratch, uint8_t message[32]) {
    size_t db_length = k - H - 1;
    uint8_t *seed = scratch, *db = scratch + H;
    memcpy(seed, em + 1, H);
    memcpy(db, em + 1 + H, db_length);
    p11_mgf1_xor(db, db_length, seed, H);
    p11_mgf1_xor(seed, H, db, db_length);
    uint8_t label_hash[H];
    crypto_hash_sha256(label_hash, NULL, 0);
    /* With the message length known, every byte has a fixed place: one pass, no early exit. */
    uint8_t bad = em[0];
    for (size_t i = 0; i < H; i++) bad |= db[i] ^ label_hash[i];
    for (size_t i = H; i < db_length - 32 - 1; i++) bad |= db[i];
    bad |= db[db_length - 32 - 1] ^ 0x01;
    memcpy(message, db + db_length - 32, 32);
    sodium_memzero(scratch, k);
    if (bad != 0) {
        sodium_memzero(message, 32);
        return -1;
    }
    return 0;
}
