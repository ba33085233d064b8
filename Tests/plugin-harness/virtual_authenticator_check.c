// SPDX-License-Identifier: Apache-2.0
/*
 * Check of the virtual authenticator through the real libfido2: make a credential (packed
 * self-attestation verified), hmac-secret assertions with and without the PIN (stable, and
 * different with UV), signatures verified, a wrong PIN refused (PIN_INVALID) and counted (one
 * retry fewer), the right PIN giving the retries back; PIN protocols 1 and 2, with and without
 * pinUvAuthToken permissions; skip-up answers a request for presence without the touch (UP clear,
 * still signed). Exits 1 on any failure. scripts/plugin-harness.sh builds and runs
 * it (scripts/test.sh runs that):
 *   cc -std=c11 -Wall -Wextra -ITests/VirtualAuthenticator/include \
 *      Tests/VirtualAuthenticator/virtual_authenticator.c Tests/plugin-harness/virtual_authenticator_check.c \
 *      -lfido2 -lcrypto -lpthread -o /tmp/va_check && /tmp/va_check
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fido.h>
#include <fido/es256.h>
#include "keybay_virtual_authenticator.h"

#define CHECK(x) do { int _r = (x); if (_r != FIDO_OK) { printf("FAIL %s: %s (%d) line %d\n", #x, fido_strerr(_r), _r, __LINE__); return 1; } } while (0)

static int open_dev(fido_dev_t **dev, const char *path) {
    *dev = keybay_va_new_device();
    return fido_dev_open(*dev, path);
}

static int run(const char *pin, const char *protocols, const char *perms) {
    keybay_va_reset();
    if (pin) keybay_va_set(0, "pin", pin);
    keybay_va_set(0, "protocols", protocols);
    keybay_va_set(0, "permissions", perms);
    fido_dev_t *dev;
    CHECK(open_dev(&dev, "virtual:0"));
    printf("protocols=%s perms=%s pin=%s: has_pin=%d fido2=%d\n", protocols, perms, pin ? pin : "-", fido_dev_has_pin(dev), fido_dev_is_fido2(dev));
    fido_cred_t *cred = fido_cred_new();
    unsigned char cdh[32] = {1}, uid[8] = {2};
    CHECK(fido_cred_set_type(cred, COSE_ES256));
    CHECK(fido_cred_set_clientdata_hash(cred, cdh, 32));
    CHECK(fido_cred_set_rp(cred, "keybay.local", "Keybay"));
    CHECK(fido_cred_set_user(cred, uid, sizeof uid, "keybay", NULL, NULL));
    CHECK(fido_cred_set_extensions(cred, FIDO_EXT_HMAC_SECRET));
    CHECK(fido_dev_make_cred(dev, cred, pin));
    CHECK(fido_cred_verify_self(cred));
    printf("  cred ok, id %zu bytes, fmt %s\n", fido_cred_id_len(cred), fido_cred_fmt(cred));
    unsigned char out[2][32];
    for (int uv = 0; uv < 2; uv++) {
        for (int rep = 0; rep < 2; rep++) {
            fido_assert_t *a = fido_assert_new();
            unsigned char salt[32] = {7};
            CHECK(fido_assert_set_clientdata_hash(a, cdh, 32));
            CHECK(fido_assert_set_rp(a, "keybay.local"));
            CHECK(fido_assert_allow_cred(a, fido_cred_id_ptr(cred), fido_cred_id_len(cred)));
            CHECK(fido_assert_set_extensions(a, FIDO_EXT_HMAC_SECRET));
            CHECK(fido_assert_set_hmac_salt(a, salt, 32));
            CHECK(fido_assert_set_up(a, FIDO_OPT_TRUE));
            CHECK(fido_dev_get_assert(dev, a, uv ? pin : NULL));
            es256_pk_t *pk = es256_pk_new();
            es256_pk_from_ptr(pk, fido_cred_pubkey_ptr(cred), fido_cred_pubkey_len(cred));
            if (uv) CHECK(fido_assert_set_uv(a, FIDO_OPT_TRUE));
            CHECK(fido_assert_verify(a, 0, COSE_ES256, pk));
            es256_pk_free(&pk);
            if (fido_assert_hmac_secret_len(a, 0) != 32) { printf("no hmac secret\n"); return 1; }
            if (rep == 0) memcpy(out[uv], fido_assert_hmac_secret_ptr(a, 0), 32);
            else if (memcmp(out[uv], fido_assert_hmac_secret_ptr(a, 0), 32) != 0) { printf("unstable\n"); return 1; }
            printf("  assert uv=%d flags=%02x ok\n", uv, fido_assert_flags(a, 0));
            fido_assert_free(&a);
            if (!pin) break;
        }
        if (!pin) break;
    }
    if (pin && memcmp(out[0], out[1], 32) == 0) { printf("uv and non-uv equal!\n"); return 1; }
    if (!pin) {
        /* skip-up: presence asked for, none tested; the UP flag clear, the answer still signed and
           its hmac-secret the same as with the touch (what the fido2 plugin must refuse by the flag). */
        keybay_va_set(0, "skip-up", "1");
        long touches = keybay_va_get(0, "touches");
        fido_assert_t *a = fido_assert_new();
        unsigned char salt[32] = {7};
        CHECK(fido_assert_set_clientdata_hash(a, cdh, 32));
        CHECK(fido_assert_set_rp(a, "keybay.local"));
        CHECK(fido_assert_allow_cred(a, fido_cred_id_ptr(cred), fido_cred_id_len(cred)));
        CHECK(fido_assert_set_extensions(a, FIDO_EXT_HMAC_SECRET));
        CHECK(fido_assert_set_hmac_salt(a, salt, 32));
        CHECK(fido_assert_set_up(a, FIDO_OPT_TRUE));
        CHECK(fido_dev_get_assert(dev, a, NULL));
        es256_pk_t *pk = es256_pk_new();
        es256_pk_from_ptr(pk, fido_cred_pubkey_ptr(cred), fido_cred_pubkey_len(cred));
        CHECK(fido_assert_set_up(a, FIDO_OPT_FALSE)); /* verify against the flags as they came */
        CHECK(fido_assert_verify(a, 0, COSE_ES256, pk));
        es256_pk_free(&pk);
        int flags = fido_assert_flags(a, 0);
        int same = fido_assert_hmac_secret_len(a, 0) == 32 && memcmp(out[0], fido_assert_hmac_secret_ptr(a, 0), 32) == 0;
        printf("  skip-up: flags=%02x, touches %ld -> %ld, hmac-secret %s\n", flags, touches, keybay_va_get(0, "touches"),
               same ? "the same" : "different");
        fido_assert_free(&a);
        if ((flags & 0x01) != 0 || keybay_va_get(0, "touches") != touches || !same) {
            printf("FAIL skip-up did not answer without the touch, signed, with the same hmac-secret\n");
            return 1;
        }
        keybay_va_set(0, "skip-up", "0");
    }
    if (pin) {
        int retries = -1;
        CHECK(fido_dev_get_retry_count(dev, &retries));
        fido_assert_t *a = fido_assert_new();
        fido_assert_set_clientdata_hash(a, cdh, 32);
        fido_assert_set_rp(a, "keybay.local");
        fido_assert_allow_cred(a, fido_cred_id_ptr(cred), fido_cred_id_len(cred));
        int r = fido_dev_get_assert(dev, a, "wrong");
        int r2 = -1; fido_dev_get_retry_count(dev, &r2);
        printf("  retries %d, wrong pin -> %s, retries %d\n", retries, fido_strerr(r), r2);
        fido_assert_free(&a);
        if (retries < 2 || r != FIDO_ERR_PIN_INVALID || r2 != retries - 1) {
            printf("FAIL a wrong PIN was not refused and counted (%s, retries %d -> %d)\n", fido_strerr(r), retries, r2);
            return 1;
        }
        /* The right PIN then gives the retries back. */
        a = fido_assert_new();
        fido_assert_set_clientdata_hash(a, cdh, 32);
        fido_assert_set_rp(a, "keybay.local");
        fido_assert_allow_cred(a, fido_cred_id_ptr(cred), fido_cred_id_len(cred));
        CHECK(fido_dev_get_assert(dev, a, pin));
        fido_assert_free(&a);
        int r3 = -1;
        CHECK(fido_dev_get_retry_count(dev, &r3));
        if (r3 != retries) { printf("FAIL the right PIN left %d retries, not %d\n", r3, retries); return 1; }
    }
    fido_cred_free(&cred);
    fido_dev_close(dev);
    fido_dev_free(&dev);
    return 0;
}

int main(void) {
    fido_init(getenv("FIDO_DEBUG") ? FIDO_DEBUG : 0);
    int rc = 0;
    rc |= run(NULL, "2,1", "1");
    rc |= run("1234", "2,1", "1");
    rc |= run("1234", "1", "1");
    rc |= run("1234", "1", "0");
    rc |= run("1234", "2", "0");
    printf(rc ? "FAILED\n" : "ALL OK\n");
    return rc;
}
