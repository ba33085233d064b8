// SPDX-License-Identifier: Apache-2.0
/* A secret sealed under an authorization value (a PIN, the tpm2 root's recovery secret) with the
   TPM's dictionary-attack lockout counting every wrong one, and that lockout's state: see
   include/keybay_tpm2_session.h. Shared by the tpm2-pin method and the tpm2 root's recovery. */
#define _POSIX_C_SOURCE 200809L

#include <string.h>

#include <sodium.h>

#include "keybay_plugin_host.h"
#include "keybay_root_files.h"
#include "keybay_tpm2_session.h"

#define fail keybay_rf_fail

keybay_status keybay_tpm2_read_lockout(const keybay_host *host, keybay_tpm2 *t, keybay_tpm2_lockout *l) {
    TPMS_CAPABILITY_DATA *data = NULL;
    TPMI_YES_NO more = 0;
    TSS2_RC rc = T(Esys_GetCapability)(t->esys, ESYS_TR_NONE, ESYS_TR_NONE, ESYS_TR_NONE, TPM2_CAP_TPM_PROPERTIES,
                                       TPM2_PT_LOCKOUT_COUNTER, 3, &more, &data);
    char what[80];
    snprintf(what, sizeof what, "%s: cannot read the dictionary-attack counters", t->plugin);
    if (rc != TSS2_RC_SUCCESS) return keybay_tpm2_fail(host, t, rc, KEYBAY_ERR_INTERNAL, what);
    int found = 0;
    for (UINT32 i = 0; i < data->data.tpmProperties.count; i++) {
        TPMS_TAGGED_PROPERTY *p = &data->data.tpmProperties.tpmProperty[i];
        if (p->property == TPM2_PT_LOCKOUT_COUNTER) { l->counter = p->value; found |= 1; }
        if (p->property == TPM2_PT_MAX_AUTH_FAIL) { l->max = p->value; found |= 2; }
        if (p->property == TPM2_PT_LOCKOUT_INTERVAL) { l->interval = p->value; found |= 4; }
    }
    T(Esys_Free)(data);
    if (found != 7) return fail(host, KEYBAY_ERR_INTERNAL, "%s: %s did not report its dictionary-attack counters", t->plugin, t->where);
    return KEYBAY_OK;
}

int32_t keybay_tpm2_tries_left(const keybay_tpm2_lockout *l) { return l->counter >= l->max ? 0 : (int32_t)(l->max - l->counter); }

keybay_status keybay_tpm2_locked_out(const keybay_host *host, const keybay_tpm2 *t, const keybay_tpm2_lockout *l) {
    keybay_host_error_detail(host, "lockout", 0, NULL);
    if (l->interval == 0)
        return fail(host, KEYBAY_ERR_LOCKED, "%s: %s is in dictionary-attack lockout after %u wrong authorizations and does not "
                    "recover by itself (TPM_PT_LOCKOUT_INTERVAL is 0): its lockout authorization must reset it (tpm2_dictionarylockout -c)",
                    t->plugin, t->where, (unsigned)l->counter);
    return fail(host, KEYBAY_ERR_LOCKED, "%s: %s is in dictionary-attack lockout after %u wrong authorizations; it allows one more "
                "try at most %u s from now (TPM_PT_LOCKOUT_INTERVAL), and one more every %u s after that",
                t->plugin, t->where, (unsigned)l->counter, (unsigned)l->interval, (unsigned)l->interval);
}

int keybay_tpm2_is_auth_refusal(TSS2_RC rc) {
    TSS2_RC base = keybay_tpm2_rc_base(rc);
    return keybay_tpm2_rc_is_tpm(rc) && (base == TPM2_RC_AUTH_FAIL || base == TPM2_RC_BAD_AUTH || base == TPM2_RC_LOCKOUT);
}

keybay_status keybay_tpm2_auth_refused(const keybay_host *host, keybay_tpm2 *t, TSS2_RC rc, const char *reason, const char *what) {
    keybay_tpm2_lockout l = { 0 };
    keybay_status s = keybay_tpm2_read_lockout(host, t, &l);
    if (s != KEYBAY_OK) return s;
    if (keybay_tpm2_rc_base(rc) == TPM2_RC_LOCKOUT) return keybay_tpm2_locked_out(host, t, &l);
    int32_t left = keybay_tpm2_tries_left(&l);
    keybay_host_error_detail(host, reason, left, NULL);
    return fail(host, KEYBAY_ERR_WRONG_SECRET, "%s: wrong %s for %s; %d tr%s left before the TPM locks out%s", t->plugin, what, t->where,
                left, left == 1 ? "y" : "ies", left == 0 ? " (it is in lockout now)" : "");
}

keybay_status keybay_tpm2_seal_with_auth(const keybay_host *host, keybay_tpm2 *t, uint32_t pcr_mask, const keybay_tpm2_signing_key *key,
                                         const TPM2B_SENSITIVE_CREATE *sensitive, TPM2B_PUBLIC *public_out, TPM2B_PRIVATE *private_out) {
    char what[120];
    ESYS_TR trial = ESYS_TR_NONE, primary = ESYS_TR_NONE, session = ESYS_TR_NONE;
    TPM2B_PUBLIC template = { .publicArea = {
        .type = TPM2_ALG_KEYEDHASH,
        .nameAlg = TPM2_ALG_SHA256,
        /* No userWithAuth: only the policy (which needs the value) unseals it. No noDA: every
           wrong value counts towards the TPM's lockout. */
        .objectAttributes = TPMA_OBJECT_FIXEDTPM | TPMA_OBJECT_FIXEDPARENT,
        .parameters.keyedHashDetail.scheme = { .scheme = TPM2_ALG_NULL },
    } };
    keybay_status s = KEYBAY_OK;
    if (key) {
        /* H(PolicyAuthorize's digest || TPM_CC_PolicyAuthValue): what the session holds after
           PolicyPCR, PolicyAuthorize and PolicyAuthValue */
        uint8_t code[4];
        keybay_tpm2_put_be(code, TPM2_CC_PolicyAuthValue, 4);
        crypto_hash_sha256_state h;
        crypto_hash_sha256_init(&h);
        crypto_hash_sha256_update(&h, key->policy, 32);
        crypto_hash_sha256_update(&h, code, 4);
        crypto_hash_sha256_final(&h, template.publicArea.authPolicy.buffer);
        template.publicArea.authPolicy.size = 32;
    } else {
        s = keybay_tpm2_policy_session(host, t, TPM2_SE_TRIAL, ESYS_TR_NONE, pcr_mask, 1, &trial);
    }
    if (s == KEYBAY_OK && !key) {
        TPM2B_DIGEST *policy = NULL;
        TSS2_RC rc = T(Esys_PolicyGetDigest)(t->esys, trial, ESYS_TR_NONE, ESYS_TR_NONE, ESYS_TR_NONE, &policy);
        snprintf(what, sizeof what, "%s: cannot compute the policy", t->plugin);
        if (rc != TSS2_RC_SUCCESS) s = keybay_tpm2_fail(host, t, rc, KEYBAY_ERR_INTERNAL, what);
        else template.publicArea.authPolicy = *policy;
        if (policy) T(Esys_Free)(policy);
    }
    if (trial != ESYS_TR_NONE) keybay_tpm2_flush(t, &trial);
    if (s == KEYBAY_OK) s = keybay_tpm2_create_primary(host, t, &primary);
    /* A session salted with the primary encrypts the sensitive part (value and secret) on its way in. */
    TSS2_RC rc = TSS2_RC_SUCCESS;
    if (s == KEYBAY_OK) {
        TPMT_SYM_DEF aes = { .algorithm = TPM2_ALG_AES, .keyBits.aes = 128, .mode.aes = TPM2_ALG_CFB };
        rc = T(Esys_StartAuthSession)(t->esys, primary, ESYS_TR_NONE, ESYS_TR_NONE, ESYS_TR_NONE, ESYS_TR_NONE, NULL, TPM2_SE_HMAC, &aes,
                                      TPM2_ALG_SHA256, &session);
        if (rc == TSS2_RC_SUCCESS) rc = T(Esys_TRSess_SetAttributes)(t->esys, session, TPMA_SESSION_DECRYPT, TPMA_SESSION_DECRYPT);
        snprintf(what, sizeof what, "%s: cannot start an encrypted session", t->plugin);
        if (rc != TSS2_RC_SUCCESS) s = keybay_tpm2_fail(host, t, rc, KEYBAY_ERR_INTERNAL, what);
    }
    if (s == KEYBAY_OK) {
        TPM2B_DATA outside = { 0 };
        TPML_PCR_SELECTION none = { 0 };
        TPM2B_PRIVATE *private = NULL;
        TPM2B_PUBLIC *public = NULL;
        rc = T(Esys_Create)(t->esys, primary, session, ESYS_TR_NONE, ESYS_TR_NONE, sensitive, &template, &outside, &none, &private, &public,
                            NULL, NULL, NULL);
        snprintf(what, sizeof what, "%s: cannot seal the secret", t->plugin);
        if (rc != TSS2_RC_SUCCESS) s = keybay_tpm2_fail(host, t, rc, KEYBAY_ERR_INTERNAL, what);
        else { *private_out = *private; *public_out = *public; }
        if (private) T(Esys_Free)(private);
        if (public) T(Esys_Free)(public);
    }
    keybay_tpm2_flush(t, &session);
    keybay_tpm2_flush(t, &primary);
    return s;
}

keybay_status keybay_tpm2_unseal_with_auth(const keybay_host *host, keybay_tpm2 *t, const TPM2B_PUBLIC *public, const TPM2B_PRIVATE *private,
                                           uint32_t pcr_mask, const keybay_tpm2_approval *approval, const uint8_t *auth, size_t auth_length,
                                           keybay_tpm2_session *session, TSS2_RC *rc_out, int *loaded) {
    TPM2_HANDLE primary = 0, object = 0;
    TPM2B_PUBLIC primary_public;
    TPM2B_NAME name;
    keybay_status s = KEYBAY_OK;
    TSS2_RC rc = TSS2_RC_SUCCESS;
    *loaded = 0;
    /* A full object memory flushes every transient object, the new primary too: make it again. */
    for (int attempt = 0; attempt < 2; attempt++) {
        if ((s = keybay_tpm2_sys_create_primary(host, t, &primary, &primary_public)) != KEYBAY_OK) { *rc_out = TSS2_RC_SUCCESS; return s; }
        rc = keybay_tpm2_sys_load(t, primary, private, public, &object, &name);
        if (rc == TSS2_RC_SUCCESS) break;
        keybay_tpm2_sys_flush(t, &primary);
        if (attempt || !keybay_tpm2_flush_leftovers(t, rc)) break;
    }
    *rc_out = rc;
    if (rc != TSS2_RC_SUCCESS) return KEYBAY_ERR_INTERNAL;
    *loaded = 1;
    s = keybay_tpm2_sys_policy_session(host, t, primary, &primary_public, pcr_mask, approval, auth != NULL, session);
    keybay_tpm2_sys_flush(t, &primary);
    if (s == KEYBAY_OK) {
        rc = keybay_tpm2_sys_unseal(t, session, object, &name, auth, auth_length);
        *rc_out = rc;
        if (rc != TSS2_RC_SUCCESS) s = KEYBAY_ERR_INTERNAL;
    } else {
        *rc_out = TSS2_RC_SUCCESS;
    }
    keybay_tpm2_sys_flush(t, &session->handle); /* 0 once the TPM ended it */
    keybay_tpm2_sys_flush(t, &object);
    return s;
}
