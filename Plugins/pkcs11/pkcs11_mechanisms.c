// SPDX-License-Identifier: Apache-2.0
/*
 * The token's objects and the mechanisms the pkcs11 method uses on them: finding the key,
 * reading attributes, RSA-OAEP (on the token, or the padding made here over raw RSA), an
 * ephemeral P-256 key and ECDH. docs/pkcs11.md.
 */
#define _POSIX_C_SOURCE 200809L

#include "pkcs11_token.h"

#include <string.h>

#include <sodium.h>

#include "keybay_plugin_host.h"
#include "pkcs11_oaep.h"

/* ---------------------------------------------------------------- objects */

int p11_find_object(const keybay_host *host, p11_token *t, CK_OBJECT_CLASS klass, CK_KEY_TYPE key_type,
                    const CK_ATTRIBUTE *id, const CK_ATTRIBUTE *label, CK_OBJECT_HANDLE *out) {
    CK_ATTRIBUTE template[4];
    CK_ULONG n = 0;
    template[n++] = (CK_ATTRIBUTE){CKA_CLASS, &klass, sizeof klass};
    if (key_type != (CK_KEY_TYPE)-1) template[n++] = (CK_ATTRIBUTE){CKA_KEY_TYPE, &key_type, sizeof key_type};
    if (id != NULL) template[n++] = *id;
    if (label != NULL) template[n++] = *label;
    CK_RV rv = t->f->C_FindObjectsInit(t->session, template, n);
    if (rv != CKR_OK) {
        (void)p11_failure(host, t, rv, "search for the key");
        return -1;
    }
    CK_OBJECT_HANDLE found[2];
    CK_ULONG count = 0;
    rv = t->f->C_FindObjects(t->session, found, 2, &count);
    t->f->C_FindObjectsFinal(t->session);
    if (rv != CKR_OK) {
        (void)p11_failure(host, t, rv, "search for the key");
        return -1;
    }
    if (count == 0) return 1;
    if (count > 1) return 2;
    *out = found[0];
    return 0;
}

long p11_attribute(const keybay_host *host, p11_token *t, CK_OBJECT_HANDLE object, CK_ATTRIBUTE_TYPE type,
                   void *out, size_t capacity, const char *what) {
    CK_ATTRIBUTE a = {type, out, (CK_ULONG)capacity};
    CK_RV rv = t->f->C_GetAttributeValue(t->session, object, &a, 1);
    if (rv != CKR_OK || a.ulValueLen == (CK_ULONG)-1 || a.ulValueLen > capacity) {
        keybay_host_error(host, "pkcs11: cannot read %s from the token '%s' (CK_RV 0x%lx)", what, t->name, (unsigned long)rv);
        return -1;
    }
    return (long)a.ulValueLen;
}

/* ---------------------------------------------------------------- mechanisms */

static CK_RSA_PKCS_OAEP_PARAMS p11_oaep_params(void) {
    return (CK_RSA_PKCS_OAEP_PARAMS){.hashAlg = CKM_SHA256, .mgf = CKG_MGF1_SHA256, .source = CKZ_DATA_SPECIFIED,
                                     .pSourceData = NULL, .ulSourceDataLen = 0};
}

/* What a token answers when it does not take CKM_RSA_PKCS_OAEP with SHA-256. */
static int p11_refuses_oaep_sha256(CK_RV rv) {
    return rv == CKR_MECHANISM_INVALID || rv == CKR_MECHANISM_PARAM_INVALID || rv == CKR_ARGUMENTS_BAD;
}

keybay_status p11_rsa_oaep_encrypt(const keybay_host *host, p11_token *t, CK_OBJECT_HANDLE public_key, size_t k,
                                   const uint8_t message[32], uint8_t *out, uint8_t *padding_out) {
    CK_RSA_PKCS_OAEP_PARAMS params = p11_oaep_params();
    CK_MECHANISM oaep = {CKM_RSA_PKCS_OAEP, &params, sizeof params}, raw = {CKM_RSA_X_509, NULL, 0};
    uint8_t em[P11_MAX_RSA_BYTES]; /* the padded message is public once encrypted; M is wiped below */
    const uint8_t *input = message;
    size_t input_length = 32;
    CK_RV rv = t->f->C_EncryptInit(t->session, &oaep, public_key);
    *padding_out = P11_RSA_PADDING_TOKEN;
    if (p11_refuses_oaep_sha256(rv)) {
        /* The same RSA-OAEP ciphertext: the padding made here, the RSA on the token. */
        *padding_out = P11_RSA_PADDING_PLUGIN;
        p11_oaep_encode(message, em, k);
        input = em;
        input_length = k;
        rv = t->f->C_EncryptInit(t->session, &raw, public_key);
    }
    if (rv != CKR_OK) {
        sodium_memzero(em, sizeof em);
        return p11_failure(host, t, rv, "encrypt to its RSA public key (CKM_RSA_PKCS_OAEP with SHA-256, or CKM_RSA_X_509)");
    }
    CK_ULONG length = (CK_ULONG)k;
    rv = t->f->C_Encrypt(t->session, (CK_BYTE *)input, (CK_ULONG)input_length, out, &length);
    sodium_memzero(em, sizeof em);
    if (rv != CKR_OK) return p11_failure(host, t, rv, "encrypt to its RSA public key");
    if (length != k) {
        keybay_host_error(host, "pkcs11: the token '%s' returned %lu bytes of RSA ciphertext for a %zu-byte modulus", t->name, (unsigned long)length, k);
        return KEYBAY_ERR_INTERNAL;
    }
    return KEYBAY_OK;
}

keybay_status p11_rsa_oaep_decrypt(const keybay_host *host, p11_token *t, CK_OBJECT_HANDLE private_key, uint8_t padding,
                                   const uint8_t *cipher, size_t k, uint8_t *scratch, uint8_t message[32]) {
    CK_RSA_PKCS_OAEP_PARAMS params = p11_oaep_params();
    CK_MECHANISM oaep = {CKM_RSA_PKCS_OAEP, &params, sizeof params}, raw = {CKM_RSA_X_509, NULL, 0};
    CK_RV rv = t->f->C_DecryptInit(t->session, padding == P11_RSA_PADDING_TOKEN ? &oaep : &raw, private_key);
    if (rv != CKR_OK) return p11_failure(host, t, rv, "decrypt with its RSA key");
    /* scratch: 2 * P11_MAX_RSA_BYTES guarded bytes, the decrypted block then the decoder's. */
    CK_ULONG length = P11_MAX_RSA_BYTES;
    rv = t->f->C_Decrypt(t->session, (CK_BYTE *)cipher, (CK_ULONG)k, scratch, &length);
    int fits = rv == CKR_OK;
    if (fits && padding == P11_RSA_PADDING_TOKEN) {
        fits = length == 32;
        if (fits) memcpy(message, scratch, 32);
    } else if (fits) {
        if (length < k) { /* a raw result without its leading zero bytes */
            memmove(scratch + (k - length), scratch, length);
            memset(scratch, 0, k - length);
        }
        fits = length <= k && p11_oaep_decode(scratch, k, scratch + P11_MAX_RSA_BYTES, message) == 0;
    }
    sodium_memzero(scratch, 2 * P11_MAX_RSA_BYTES);
    if (rv != CKR_OK && rv != CKR_ENCRYPTED_DATA_INVALID && rv != CKR_ENCRYPTED_DATA_LEN_RANGE)
        return p11_failure(host, t, rv, "decrypt with its RSA key");
    if (!fits) {
        keybay_host_error(host, "pkcs11: the key on the token '%s' does not decrypt this method's ciphertext to a 32-byte secret (was the key replaced?)", t->name);
        return KEYBAY_ERR_NOT_AVAILABLE;
    }
    return KEYBAY_OK;
}

/* DER of the OID prime256v1 (1.2.840.10045.3.1.7): CKA_EC_PARAMS of a P-256 key. */
static const uint8_t p11_p256_oid[] = {0x06, 0x08, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x03, 0x01, 0x07};

/* CKA_EC_POINT is a DER OCTET STRING of the point; some tokens give the bare point. */
static int p11_point_from_attribute(const uint8_t *value, long length, uint8_t point[P11_POINT_BYTES]) {
    if (length == P11_POINT_BYTES + 2 && value[0] == 0x04 && value[1] == P11_POINT_BYTES) value += 2;
    else if (length != P11_POINT_BYTES) return -1;
    if (value[0] != 0x04) return -1;
    memcpy(point, value, P11_POINT_BYTES);
    return 0;
}

keybay_status p11_ec_public_point(const keybay_host *host, p11_token *t, CK_OBJECT_HANDLE public_key, uint8_t point[P11_POINT_BYTES]) {
    uint8_t value[128];
    long n = p11_attribute(host, t, public_key, CKA_EC_PARAMS, value, sizeof value, "the EC key's curve (CKA_EC_PARAMS)");
    if (n < 0) return KEYBAY_ERR_UNSUPPORTED;
    if ((size_t)n != sizeof p11_p256_oid || memcmp(value, p11_p256_oid, sizeof p11_p256_oid) != 0) {
        keybay_host_error(host, "pkcs11: the EC key on the token '%s' is not on P-256 (prime256v1), the one curve this method supports", t->name);
        return KEYBAY_ERR_UNSUPPORTED;
    }
    n = p11_attribute(host, t, public_key, CKA_EC_POINT, value, sizeof value, "the EC key's public point (CKA_EC_POINT)");
    if (n < 0) return KEYBAY_ERR_UNSUPPORTED;
    if (p11_point_from_attribute(value, n, point) != 0) {
        keybay_host_error(host, "pkcs11: the token '%s' gave an EC point that is not an uncompressed P-256 point", t->name);
        return KEYBAY_ERR_UNSUPPORTED;
    }
    return KEYBAY_OK;
}

keybay_status p11_ec_ephemeral(const keybay_host *host, p11_token *t, CK_OBJECT_HANDLE *private_key, uint8_t point[P11_POINT_BYTES]) {
    CK_BBOOL no = CK_FALSE, yes = CK_TRUE;
    CK_ATTRIBUTE public_template[] = {
        {CKA_TOKEN, &no, sizeof no},
        {CKA_EC_PARAMS, (void *)p11_p256_oid, sizeof p11_p256_oid},
    };
    CK_ATTRIBUTE private_template[] = {
        {CKA_TOKEN, &no, sizeof no},
        {CKA_PRIVATE, &yes, sizeof yes},
        {CKA_SENSITIVE, &yes, sizeof yes},
        {CKA_DERIVE, &yes, sizeof yes},
    };
    CK_MECHANISM mechanism = {CKM_EC_KEY_PAIR_GEN, NULL, 0};
    CK_OBJECT_HANDLE public_key;
    CK_RV rv = t->f->C_GenerateKeyPair(t->session, &mechanism, public_template, 2, private_template, 4, &public_key, private_key);
    if (rv != CKR_OK) return p11_failure(host, t, rv, "make an ephemeral P-256 key pair (session objects)");
    uint8_t value[128];
    long n = p11_attribute(host, t, public_key, CKA_EC_POINT, value, sizeof value, "the ephemeral key's public point");
    t->f->C_DestroyObject(t->session, public_key);
    if (n < 0 || p11_point_from_attribute(value, n, point) != 0) {
        if (n >= 0) keybay_host_error(host, "pkcs11: the token '%s' gave an ephemeral EC point that is not an uncompressed P-256 point", t->name);
        t->f->C_DestroyObject(t->session, *private_key);
        return KEYBAY_ERR_UNSUPPORTED;
    }
    return KEYBAY_OK;
}

keybay_status p11_ecdh(const keybay_host *host, p11_token *t, CK_OBJECT_HANDLE private_key, const uint8_t peer[P11_POINT_BYTES],
                       uint8_t shared[32]) {
    CK_ECDH1_DERIVE_PARAMS params = {.kdf = CKD_NULL, .ulSharedDataLen = 0, .pSharedData = NULL,
                                     .ulPublicDataLen = P11_POINT_BYTES, .pPublicData = (CK_BYTE *)peer};
    CK_MECHANISM mechanism = {CKM_ECDH1_DERIVE, &params, sizeof params};
    CK_OBJECT_CLASS klass = CKO_SECRET_KEY;
    CK_KEY_TYPE type = CKK_GENERIC_SECRET;
    CK_BBOOL no = CK_FALSE, yes = CK_TRUE;
    CK_ULONG length = 32;
    /* A session object, extractable: the shared secret comes to us (and only to us) for HKDF. */
    CK_ATTRIBUTE template[] = {
        {CKA_CLASS, &klass, sizeof klass},   {CKA_KEY_TYPE, &type, sizeof type},
        {CKA_TOKEN, &no, sizeof no},         {CKA_SENSITIVE, &no, sizeof no},
        {CKA_EXTRACTABLE, &yes, sizeof yes}, {CKA_VALUE_LEN, &length, sizeof length},
    };
    CK_OBJECT_HANDLE derived;
    CK_RV rv = t->f->C_DeriveKey(t->session, &mechanism, private_key, template, 6, &derived);
    if (rv != CKR_OK) return p11_failure(host, t, rv, "derive an ECDH secret (CKM_ECDH1_DERIVE)");
    CK_ATTRIBUTE value = {CKA_VALUE, shared, 32};
    rv = t->f->C_GetAttributeValue(t->session, derived, &value, 1);
    t->f->C_DestroyObject(t->session, derived);
    if (rv != CKR_OK || value.ulValueLen != 32) {
        sodium_memzero(shared, 32);
        return p11_failure(host, t, rv != CKR_OK ? rv : CKR_GENERAL_ERROR, "hand out the derived ECDH secret");
    }
    return KEYBAY_OK;
}
