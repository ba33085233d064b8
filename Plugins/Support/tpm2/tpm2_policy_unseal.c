// SPDX-License-Identifier: Apache-2.0
/* A salted policy session and an unseal through it, on tss2's SAPI: see include/keybay_tpm2_session.h. */
#define _POSIX_C_SOURCE 200809L

#include <string.h>

#include <sodium.h>

#include "keybay_plugin_host.h"
#include "keybay_root_files.h"
#include "keybay_tpm2_session.h"

#define fail keybay_rf_fail

/* A TPM busy with itself answers RETRY, YIELDED or TESTING to a command it did not run; ESAPI
   sends it again, up to five times in all, and so does this. */
#define SUBMISSIONS 5
static int again(TSS2_RC rc) { return rc == TPM2_RC_RETRY || rc == TPM2_RC_YIELDED || rc == TPM2_RC_TESTING; }
#define SUBMIT(rc, call) do { int n_ = 0; do { (rc) = (call); } while (again(rc) && ++n_ < SUBMISSIONS); } while (0)

/* The SAPI context under the operation's ESAPI one: the same TCTI, so the same bound and lock. */
static TSS2_SYS_CONTEXT *sys_of(keybay_tpm2 *t) {
    TSS2_SYS_CONTEXT *sys = NULL;
    return t->esys && T(Esys_GetSysContext)(t->esys, &sys) == TSS2_RC_SUCCESS ? sys : NULL;
}

/* The empty password of the owner hierarchy and of the primary. */
static const TSS2L_SYS_AUTH_COMMAND empty_password = { .count = 1, .auths = { { .sessionHandle = TPM2_RS_PW } } };

void keybay_tpm2_sys_flush(keybay_tpm2 *t, TPM2_HANDLE *handle) {
    TSS2_SYS_CONTEXT *sys = sys_of(t);
    TSS2_RC rc;
    if (*handle && sys) SUBMIT(rc, T(Tss2_Sys_FlushContext)(sys, *handle));
    *handle = 0;
}

keybay_status keybay_tpm2_sys_create_primary(const keybay_host *host, keybay_tpm2 *t, TPM2_HANDLE *primary, TPM2B_PUBLIC *public) {
    TPM2B_SENSITIVE_CREATE sensitive = { 0 };
    TPM2B_PUBLIC template;
    keybay_tpm2_primary_template(&template);
    TPM2B_DATA outside = { 0 };
    TPML_PCR_SELECTION none = { 0 };
    TSS2_SYS_CONTEXT *sys = sys_of(t);
    TSS2_RC rc = TSS2_ESYS_RC_BAD_REFERENCE;
    *primary = 0;
    for (int attempt = 0; sys && attempt < 2; attempt++) {
        TSS2L_SYS_AUTH_RESPONSE answer;
        SUBMIT(rc, (memset(public, 0, sizeof *public), /* tss2 fills only an empty TPM2B_PUBLIC */
                    T(Tss2_Sys_CreatePrimary)(sys, TPM2_RH_OWNER, &empty_password, &sensitive, &template, &outside, &none, primary,
                                              public, NULL, NULL, NULL, NULL, &answer)));
        if (rc == TSS2_RC_SUCCESS) return KEYBAY_OK;
        *primary = 0;
        if (attempt || !keybay_tpm2_flush_leftovers(t, rc)) break;
    }
    return keybay_tpm2_primary_failed(host, t, rc);
}

/* nameAlg || H(the marshaled TPMT_PUBLIC): the object's name (SHA-256 names only). */
static TSS2_RC object_name(const TPM2B_PUBLIC *public, TPM2B_NAME *name) {
    uint8_t area[sizeof(TPMT_PUBLIC)];
    size_t size = 0;
    if (public->publicArea.nameAlg != TPM2_ALG_SHA256) return TSS2_ESYS_RC_BAD_VALUE;
    TSS2_RC rc = T(Tss2_MU_TPMT_PUBLIC_Marshal)(&public->publicArea, area, sizeof area, &size);
    if (rc != TSS2_RC_SUCCESS) return rc;
    keybay_tpm2_put_be(name->name, TPM2_ALG_SHA256, 2);
    crypto_hash_sha256(name->name + 2, area, size);
    name->size = 2 + crypto_hash_sha256_BYTES;
    return TSS2_RC_SUCCESS;
}

TSS2_RC keybay_tpm2_sys_load(keybay_tpm2 *t, TPM2_HANDLE parent, const TPM2B_PRIVATE *private, const TPM2B_PUBLIC *public,
                             TPM2_HANDLE *object, TPM2B_NAME *name) {
    TSS2_SYS_CONTEXT *sys = sys_of(t);
    *object = 0;
    TSS2_RC rc = sys ? object_name(public, name) : TSS2_ESYS_RC_BAD_REFERENCE;
    if (rc != TSS2_RC_SUCCESS) return rc;
    TPM2B_NAME reported = { 0 };
    TSS2L_SYS_AUTH_RESPONSE answer;
    SUBMIT(rc, T(Tss2_Sys_Load)(sys, parent, &empty_password, private, public, object, &reported, &answer));
    if (rc != TSS2_RC_SUCCESS) { *object = 0; return rc; }
    /* As ESAPI does: the TPM must have loaded the object these parameters describe. */
    if (reported.size != name->size || memcmp(reported.name, name->name, name->size) != 0) {
        keybay_tpm2_sys_flush(t, object);
        return TSS2_ESYS_RC_MALFORMED_RESPONSE;
    }
    return TSS2_RC_SUCCESS;
}

keybay_status keybay_tpm2_sys_policy_session(const keybay_host *host, keybay_tpm2 *t, TPM2_HANDLE salt_key, const TPM2B_PUBLIC *salt_public,
                                             uint32_t pcr_mask, const keybay_tpm2_approval *approval, int auth_value,
                                             keybay_tpm2_session *s) {
    TSS2_SYS_CONTEXT *sys = sys_of(t);
    s->handle = 0;
    const TPMT_PUBLIC *area = &salt_public->publicArea;
    TPM2B_ENCRYPTED_SECRET encrypted_salt = { 0 };
    if (!sys || area->type != TPM2_ALG_ECC || area->parameters.eccDetail.curveID != TPM2_ECC_NIST_P256 ||
        keybay_tpm2_ecc_salt(&area->unique.ecc, &encrypted_salt, s->salt, s->work) != 0)
        return fail(host, KEYBAY_ERR_INTERNAL, "cannot salt a session with the primary storage key of %s (not a P-256 point, or "
                    "libcrypto failed)", t->where);
    TPMT_SYM_DEF symmetric = { .algorithm = TPM2_ALG_AES, .keyBits.aes = 128, .mode.aes = TPM2_ALG_CFB };
    TPM2B_NONCE caller = { .size = 32 };
    randombytes_buf(caller.buffer, caller.size);
    TSS2_RC rc = TSS2_RC_SUCCESS;
    for (int attempt = 0; attempt < 2; attempt++) {
        SUBMIT(rc, (s->nonce_tpm.size = 0, T(Tss2_Sys_StartAuthSession)(sys, salt_key, TPM2_RH_NULL, NULL, &caller, &encrypted_salt,
                                                                          TPM2_SE_POLICY, &symmetric, TPM2_ALG_SHA256, &s->handle,
                                                                          &s->nonce_tpm, NULL)));
        if (rc == TSS2_RC_SUCCESS || attempt || !keybay_tpm2_flush_leftovers(t, rc)) break;
    }
    if (rc != TSS2_RC_SUCCESS) {
        s->handle = 0;
        sodium_memzero(s->salt, sizeof s->salt);
        return keybay_tpm2_fail(host, t, rc, KEYBAY_ERR_INTERNAL, "cannot start a policy session");
    }
    /* Unbound (TPM_RH_NULL), so the key comes from the salt alone. */
    keybay_tpm2_kdfa(s->salt, sizeof s->salt, "ATH", &s->nonce_tpm, &caller, 256, s->key);
    sodium_memzero(s->salt, sizeof s->salt);
    if (pcr_mask) {
        TPM2B_DIGEST current = { 0 };
        TPML_PCR_SELECTION pcrs = keybay_tpm2_pcr_selection(pcr_mask);
        SUBMIT(rc, T(Tss2_Sys_PolicyPCR)(sys, s->handle, NULL, &current, &pcrs, NULL));
        if (rc != TSS2_RC_SUCCESS) {
            keybay_tpm2_sys_flush(t, &s->handle);
            return keybay_tpm2_fail(host, t, rc, KEYBAY_ERR_INTERNAL, "cannot read the PCRs into the policy");
        }
    }
    if (approval) {
        TPM2B_DIGEST approved = { .size = 32 };
        memcpy(approved.buffer, approval->approved, 32);
        TPM2B_NONCE reference = { 0 };
        SUBMIT(rc, T(Tss2_Sys_PolicyAuthorize)(sys, s->handle, NULL, &approved, &reference, &approval->key->name, approval->ticket, NULL));
        if (rc != TSS2_RC_SUCCESS) {
            keybay_tpm2_sys_flush(t, &s->handle);
            return keybay_tpm2_fail(host, t, rc, KEYBAY_ERR_INTERNAL, "cannot authorize the PCR policy with its signature");
        }
    }
    if (auth_value) SUBMIT(rc, T(Tss2_Sys_PolicyAuthValue)(sys, s->handle, NULL, NULL));
    if (rc != TSS2_RC_SUCCESS) {
        keybay_tpm2_sys_flush(t, &s->handle);
        return keybay_tpm2_fail(host, t, rc, KEYBAY_ERR_INTERNAL, "cannot add the authorization value to the policy");
    }
    return KEYBAY_OK;
}

/* HMAC(sessionKey || authValue, pHash || nonceNewer || nonceOlder || sessionAttributes): the
   command's (cpHash, nonceCaller, nonceTPM) and the response's (rpHash, nonceTPM, nonceCaller). */
static void session_hmac(const keybay_tpm2_session *s, size_t value_length, const uint8_t p_hash[32], const TPM2B_NONCE *newer,
                         const TPM2B_NONCE *older, TPMA_SESSION attributes, uint8_t out[32]) {
    crypto_auth_hmacsha256_state st;
    uint8_t attribute_byte = (uint8_t)attributes;
    crypto_auth_hmacsha256_init(&st, s->value, value_length);
    crypto_auth_hmacsha256_update(&st, p_hash, 32);
    crypto_auth_hmacsha256_update(&st, newer->buffer, newer->size);
    crypto_auth_hmacsha256_update(&st, older->buffer, older->size);
    crypto_auth_hmacsha256_update(&st, &attribute_byte, 1);
    crypto_auth_hmacsha256_final(&st, out);
    sodium_memzero(&st, sizeof st);
}

TSS2_RC keybay_tpm2_sys_unseal(keybay_tpm2 *t, keybay_tpm2_session *s, TPM2_HANDLE object, const TPM2B_NAME *name,
                               const uint8_t *auth, size_t auth_length) {
    TSS2_SYS_CONTEXT *sys = sys_of(t);
    s->unsealed_length = 0;
    if (!sys || !s->handle || auth_length > sizeof(TPMU_HA)) return TSS2_ESYS_RC_BAD_VALUE;
    /* The session value: sessionKey || authValue (PolicyAuthValue puts the authValue in the HMAC key). */
    memcpy(s->value, s->key, sizeof s->key);
    if (auth_length) memcpy(s->value + sizeof s->key, auth, auth_length);
    size_t value_length = sizeof s->key + auth_length;
    uint8_t code[4], hash[32];
    keybay_tpm2_put_be(code, TPM2_CC_Unseal, 4);
    /* cpHash = H(commandCode || name(itemHandle)); Unseal has no command parameters. */
    crypto_hash_sha256_state h;
    crypto_hash_sha256_init(&h);
    crypto_hash_sha256_update(&h, code, 4);
    crypto_hash_sha256_update(&h, name->name, name->size);
    crypto_hash_sha256_final(&h, hash);
    /* A fresh nonceCaller; continueSession clear: the TPM ends the session once the unseal succeeds. */
    TPM2B_NONCE caller = { .size = 32 };
    randombytes_buf(caller.buffer, caller.size);
    TSS2L_SYS_AUTH_COMMAND command = { .count = 1 };
    TPMS_AUTH_COMMAND *a = &command.auths[0];
    a->sessionHandle = s->handle;
    a->nonce = caller;
    a->sessionAttributes = TPMA_SESSION_ENCRYPT;
    a->hmac.size = 32;
    session_hmac(s, value_length, hash, &caller, &s->nonce_tpm, a->sessionAttributes, a->hmac.buffer);
    TSS2_RC rc = T(Tss2_Sys_Unseal_Prepare)(sys, object);
    if (rc == TSS2_RC_SUCCESS) rc = T(Tss2_Sys_SetCmdAuths)(sys, &command);
    if (rc == TSS2_RC_SUCCESS) SUBMIT(rc, T(Tss2_Sys_Execute)(sys));
    TSS2L_SYS_AUTH_RESPONSE answer;
    const uint8_t *parameters = NULL;
    size_t parameters_size = 0;
    if (rc == TSS2_RC_SUCCESS) rc = T(Tss2_Sys_GetRspAuths)(sys, &answer);
    if (rc == TSS2_RC_SUCCESS && answer.count != 1) rc = TSS2_ESYS_RC_GENERAL_FAILURE;
    if (rc == TSS2_RC_SUCCESS) rc = T(Tss2_Sys_GetRpBuffer)(sys, &parameters_size, &parameters);
    if (rc == TSS2_RC_SUCCESS) {
        /* rpHash = H(responseCode (0) || commandCode || the response parameters as sent, encrypted). */
        static const uint8_t success[4] = { 0 };
        uint8_t expected[32];
        crypto_hash_sha256_init(&h);
        crypto_hash_sha256_update(&h, success, 4);
        crypto_hash_sha256_update(&h, code, 4);
        crypto_hash_sha256_update(&h, parameters, parameters_size);
        crypto_hash_sha256_final(&h, hash);
        TPMS_AUTH_RESPONSE *r = &answer.auths[0];
        s->nonce_tpm = r->nonce;
        session_hmac(s, value_length, hash, &s->nonce_tpm, &caller, r->sessionAttributes, expected);
        if (r->hmac.size != sizeof expected || sodium_memcmp(r->hmac.buffer, expected, sizeof expected) != 0) rc = TSS2_ESYS_RC_RSP_AUTH_FAILED;
    }
    TPM2B_SENSITIVE_DATA data = { 0 };
    if (rc == TSS2_RC_SUCCESS) rc = T(Tss2_Sys_Unseal_Complete)(sys, &data);
    if (rc == TSS2_RC_SUCCESS) {
        s->handle = 0; /* ended by the TPM */
        /* The first response parameter's bytes, in AES-128-CFB under KDFa(value, "CFB", nonceTPM, nonceCaller). */
        keybay_tpm2_kdfa(s->value, value_length, "CFB", &s->nonce_tpm, &caller, 256, s->key_iv);
        memcpy(s->unsealed, data.buffer, data.size);
        if (keybay_tpm2_aes128_cfb_decrypt(s->key_iv, s->unsealed, data.size, s->work) == 0) s->unsealed_length = data.size;
        else rc = TSS2_ESYS_RC_GENERAL_FAILURE;
    }
    sodium_memzero(s->value, sizeof s->value);
    sodium_memzero(s->key_iv, sizeof s->key_iv);
    return rc;
}
