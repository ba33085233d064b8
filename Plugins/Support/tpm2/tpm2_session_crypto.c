// SPDX-License-Identifier: Apache-2.0
/* The cryptography of a salted policy session: see include/keybay_tpm2_session.h. */
#define _POSIX_C_SOURCE 200809L

#include <string.h>

#include <openssl/obj_mac.h>
#include <sodium.h>

#include "keybay_tpm2_session.h"

/* ---------------------------------------------------------------- the KDFs */

static void put_u32(uint8_t out[4], uint32_t v) { keybay_tpm2_put_be(out, v, 4); }

void keybay_tpm2_kdfa(const uint8_t *key, size_t key_length, const char *label, const TPM2B_NONCE *context_u,
                      const TPM2B_NONCE *context_v, uint32_t bits, uint8_t *out) {
    crypto_auth_hmacsha256_state st;
    uint8_t block[crypto_auth_hmacsha256_BYTES], number[4];
    size_t bytes = bits / 8;
    for (uint32_t counter = 1; bytes > 0; counter++) {
        crypto_auth_hmacsha256_init(&st, key, key_length);
        put_u32(number, counter);
        crypto_auth_hmacsha256_update(&st, number, 4);
        crypto_auth_hmacsha256_update(&st, (const uint8_t *)label, strlen(label) + 1); /* the label's NUL too */
        crypto_auth_hmacsha256_update(&st, context_u->buffer, context_u->size);
        crypto_auth_hmacsha256_update(&st, context_v->buffer, context_v->size);
        put_u32(number, bits);
        crypto_auth_hmacsha256_update(&st, number, 4);
        crypto_auth_hmacsha256_final(&st, block);
        size_t n = bytes < sizeof block ? bytes : sizeof block;
        memcpy(out, block, n);
        out += n;
        bytes -= n;
    }
    sodium_memzero(block, sizeof block);
    sodium_memzero(&st, sizeof st);
}

/* KDFe with SHA-256 for 256 bits: one block, H(counter 1 || Z || "SECRET\0" || U || V). */
static void kdfe_salt(const uint8_t z[32], const TPM2B_ECC_PARAMETER *party_u, const TPM2B_ECC_PARAMETER *party_v, uint8_t salt[32]) {
    static const uint8_t one[4] = { 0, 0, 0, 1 };
    crypto_hash_sha256_state st;
    crypto_hash_sha256_init(&st);
    crypto_hash_sha256_update(&st, one, sizeof one);
    crypto_hash_sha256_update(&st, z, 32);
    crypto_hash_sha256_update(&st, (const uint8_t *)"SECRET", sizeof "SECRET");
    crypto_hash_sha256_update(&st, party_u->buffer, party_u->size);
    crypto_hash_sha256_update(&st, party_v->buffer, party_v->size);
    crypto_hash_sha256_final(&st, salt);
    sodium_memzero(&st, sizeof st);
}

/* ---------------------------------------------------------------- the salt: ECDH on P-256 */

#define P256_BYTES 32

/* The scratch memory's layout, in the caller's guarded `work`. */
struct ecdh_work { uint8_t scalar[P256_BYTES], z[P256_BYTES]; };
struct aes_work { AES_KEY schedule; uint8_t chain[16]; };
_Static_assert(sizeof(struct ecdh_work) <= KEYBAY_TPM2_WORK_BYTES && sizeof(struct aes_work) <= KEYBAY_TPM2_WORK_BYTES,
               "the session's scratch memory is too small");

int keybay_tpm2_ecc_salt(const TPMS_ECC_POINT *key, TPM2B_ENCRYPTED_SECRET *encrypted_salt, uint8_t salt[32],
                         uint8_t work[KEYBAY_TPM2_WORK_BYTES]) {
    sodium_memzero(salt, 32);
    if (key->x.size == 0 || key->x.size > P256_BYTES || key->y.size == 0 || key->y.size > P256_BYTES) return -1;
    struct ecdh_work *w = (struct ecdh_work *)work;
    int ok = 0;
    EC_GROUP *group = T(EC_GROUP_new_by_curve_name)(NID_X9_62_prime256v1);
    BN_CTX *ctx = T(BN_CTX_new)();
    EC_POINT *tpm_point = group ? T(EC_POINT_new)(group) : NULL, *ephemeral = group ? T(EC_POINT_new)(group) : NULL,
             *shared = group ? T(EC_POINT_new)(group) : NULL;
    BIGNUM *x = T(BN_new)(), *y = T(BN_new)(), *k = NULL;
    TPMS_ECC_POINT q = { .x.size = P256_BYTES, .y.size = P256_BYTES };
    if (!group || !ctx || !tpm_point || !ephemeral || !shared || !x || !y) goto done;
    /* The TPM's point, which must lie on the curve. */
    if (!T(BN_bin2bn)(key->x.buffer, key->x.size, x) || !T(BN_bin2bn)(key->y.buffer, key->y.size, y) ||
        T(EC_POINT_set_affine_coordinates)(group, tpm_point, x, y, ctx) != 1 || T(EC_POINT_is_on_curve)(group, tpm_point, ctx) != 1)
        goto done;
    /* The ephemeral private key: uniform in [1, n-1] by rejection (a retry is a 2^-32 event). */
    const BIGNUM *order = T(EC_GROUP_get0_order)(group);
    for (int attempt = 0; attempt < 16 && !k; attempt++) {
        randombytes_buf(w->scalar, P256_BYTES);
        k = T(BN_bin2bn)(w->scalar, P256_BYTES, NULL);
        if (k && (T(BN_is_zero)(k) || T(BN_cmp)(k, order) >= 0)) { T(BN_clear_free)(k); k = NULL; }
    }
    if (!k) goto done;
    /* Qe = k·G, sent; Z = k·Qs, whose x feeds KDFe. */
    if (T(EC_POINT_mul)(group, ephemeral, k, NULL, NULL, ctx) != 1 || T(EC_POINT_mul)(group, shared, NULL, tpm_point, k, ctx) != 1 ||
        T(EC_POINT_is_at_infinity)(group, shared))
        goto done;
    if (T(EC_POINT_get_affine_coordinates)(group, ephemeral, x, y, ctx) != 1 || T(BN_bn2binpad)(x, q.x.buffer, P256_BYTES) != P256_BYTES ||
        T(BN_bn2binpad)(y, q.y.buffer, P256_BYTES) != P256_BYTES)
        goto done;
    if (T(EC_POINT_get_affine_coordinates)(group, shared, x, y, ctx) != 1 || T(BN_bn2binpad)(x, w->z, P256_BYTES) != P256_BYTES) goto done;
    size_t offset = 0;
    if (T(Tss2_MU_TPMS_ECC_POINT_Marshal)(&q, encrypted_salt->secret, sizeof encrypted_salt->secret, &offset) != TSS2_RC_SUCCESS) goto done;
    encrypted_salt->size = (UINT16)offset;
    kdfe_salt(w->z, &q.x, &key->x, salt);
    ok = 1;
done:
    if (k) T(BN_clear_free)(k);
    if (x) T(BN_clear_free)(x);
    if (y) T(BN_clear_free)(y);
    if (shared) T(EC_POINT_clear_free)(shared);
    if (ephemeral) T(EC_POINT_clear_free)(ephemeral);
    if (tpm_point) T(EC_POINT_clear_free)(tpm_point);
    if (ctx) T(BN_CTX_free)(ctx);
    if (group) T(EC_GROUP_free)(group);
    sodium_memzero(w, sizeof *w);
    if (!ok) sodium_memzero(salt, 32);
    return ok ? 0 : -1;
}

/* ---------------------------------------------------------------- AES-128-CFB */

int keybay_tpm2_aes128_cfb_decrypt(const uint8_t key_iv[32], uint8_t *data, size_t length, uint8_t work[KEYBAY_TPM2_WORK_BYTES]) {
    struct aes_work *w = (struct aes_work *)work;
    int ok = T(AES_set_encrypt_key)(key_iv, 128, &w->schedule) == 0;
    if (ok) {
        int used = 0;
        memcpy(w->chain, key_iv + 16, 16);
        T(AES_cfb128_encrypt)(data, data, length, &w->schedule, w->chain, &used, AES_DECRYPT);
    } else {
        sodium_memzero(data, length); /* nothing half-decrypted comes back */
    }
    sodium_memzero(w, sizeof *w);
    return ok ? 0 : -1;
}
