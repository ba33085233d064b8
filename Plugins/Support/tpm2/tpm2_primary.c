// SPDX-License-Identifier: Apache-2.0
/* The storage primary, re-created from its fixed template under the owner hierarchy; a sealed
   object loaded under it; and policy sessions (ESAPI): see include/keybay_tpm2.h. */
#define _POSIX_C_SOURCE 200809L

#include "keybay_plugin_host.h"
#include "keybay_root_files.h"
#include "keybay_tpm2.h"

#define fail keybay_rf_fail

/* The primary storage key's fixed template (ECC P-256, AES-128-CFB; the TCG storage-key template
   with noDA) under the owner hierarchy. */
void keybay_tpm2_primary_template(TPM2B_PUBLIC *template) {
    *template = (TPM2B_PUBLIC){ .publicArea = {
        .type = TPM2_ALG_ECC,
        .nameAlg = TPM2_ALG_SHA256,
        .objectAttributes = TPMA_OBJECT_FIXEDTPM | TPMA_OBJECT_FIXEDPARENT | TPMA_OBJECT_SENSITIVEDATAORIGIN |
                            TPMA_OBJECT_USERWITHAUTH | TPMA_OBJECT_NODA | TPMA_OBJECT_RESTRICTED | TPMA_OBJECT_DECRYPT,
        .parameters.eccDetail = {
            .symmetric = { .algorithm = TPM2_ALG_AES, .keyBits.aes = 128, .mode.aes = TPM2_ALG_CFB },
            .scheme = { .scheme = TPM2_ALG_NULL },
            .curveID = TPM2_ECC_NIST_P256,
            .kdf = { .scheme = TPM2_ALG_NULL },
        },
    } };
}

keybay_status keybay_tpm2_primary_failed(const keybay_host *host, const keybay_tpm2 *t, TSS2_RC rc) {
    if (keybay_tpm2_rc_is_tpm(rc) && keybay_tpm2_rc_base(rc) == TPM2_RC_BAD_AUTH)
        return fail(host, KEYBAY_ERR_NOT_AVAILABLE, "the owner hierarchy of %s has a password; the %s needs it empty (%s)",
                    t->where, t->user, T(Tss2_RC_Decode)(rc));
    return keybay_tpm2_fail(host, t, rc, KEYBAY_ERR_INTERNAL, "cannot create the primary storage key");
}

keybay_status keybay_tpm2_create_primary(const keybay_host *host, keybay_tpm2 *t, ESYS_TR *primary) {
    TPM2B_SENSITIVE_CREATE sensitive = { 0 };
    TPM2B_PUBLIC template;
    keybay_tpm2_primary_template(&template);
    TPM2B_DATA outside = { 0 };
    TPML_PCR_SELECTION none = { 0 };
    TSS2_RC rc;
    for (int attempt = 0; attempt < 2; attempt++) {
        rc = T(Esys_CreatePrimary)(t->esys, ESYS_TR_RH_OWNER, ESYS_TR_PASSWORD, ESYS_TR_NONE, ESYS_TR_NONE, &sensitive, &template,
                                   &outside, &none, primary, NULL, NULL, NULL, NULL);
        if (rc == TSS2_RC_SUCCESS) return KEYBAY_OK;
        if (attempt || !keybay_tpm2_flush_leftovers(t, rc)) break;
    }
    *primary = ESYS_TR_NONE;
    return keybay_tpm2_primary_failed(host, t, rc);
}

keybay_status keybay_tpm2_load_sealed(const keybay_host *host, keybay_tpm2 *t, const TPM2B_PRIVATE *private, const TPM2B_PUBLIC *public,
                                      ESYS_TR *primary, ESYS_TR *object, TSS2_RC *rc) {
    *object = ESYS_TR_NONE;
    /* A full object memory flushes every transient object, the new primary too: make it again. */
    for (int attempt = 0; attempt < 2; attempt++) {
        *rc = TSS2_RC_SUCCESS;
        keybay_status s = keybay_tpm2_create_primary(host, t, primary);
        if (s != KEYBAY_OK) return s;
        *rc = T(Esys_Load)(t->esys, *primary, ESYS_TR_PASSWORD, ESYS_TR_NONE, ESYS_TR_NONE, private, public, object);
        if (*rc == TSS2_RC_SUCCESS) return KEYBAY_OK;
        *object = ESYS_TR_NONE;
        keybay_tpm2_flush(t, primary);
        if (attempt || !keybay_tpm2_flush_leftovers(t, *rc)) break;
    }
    return KEYBAY_ERR_INTERNAL;
}

keybay_status keybay_tpm2_policy_session(const keybay_host *host, keybay_tpm2 *t, TPM2_SE type, ESYS_TR salt_key, uint32_t pcr_mask,
                                         int auth_value, ESYS_TR *session) {
    TPMT_SYM_DEF symmetric = { .algorithm = TPM2_ALG_NULL };
    if (salt_key != ESYS_TR_NONE) symmetric = (TPMT_SYM_DEF){ .algorithm = TPM2_ALG_AES, .keyBits.aes = 128, .mode.aes = TPM2_ALG_CFB };
    TSS2_RC rc;
    for (int attempt = 0; attempt < 2; attempt++) {
        rc = T(Esys_StartAuthSession)(t->esys, salt_key, ESYS_TR_NONE, ESYS_TR_NONE, ESYS_TR_NONE, ESYS_TR_NONE, NULL, type,
                                      &symmetric, TPM2_ALG_SHA256, session);
        if (rc == TSS2_RC_SUCCESS) break;
        if (attempt || !keybay_tpm2_flush_leftovers(t, rc)) {
            *session = ESYS_TR_NONE;
            return keybay_tpm2_fail(host, t, rc, KEYBAY_ERR_INTERNAL, "cannot start a policy session");
        }
    }
    if (pcr_mask) {
        TPM2B_DIGEST current = { 0 };
        TPML_PCR_SELECTION pcrs = keybay_tpm2_pcr_selection(pcr_mask);
        rc = T(Esys_PolicyPCR)(t->esys, *session, ESYS_TR_NONE, ESYS_TR_NONE, ESYS_TR_NONE, &current, &pcrs);
        if (rc != TSS2_RC_SUCCESS) {
            keybay_tpm2_flush(t, session);
            return keybay_tpm2_fail(host, t, rc, KEYBAY_ERR_INTERNAL, "cannot read the PCRs into the policy");
        }
    }
    if (auth_value && (rc = T(Esys_PolicyAuthValue)(t->esys, *session, ESYS_TR_NONE, ESYS_TR_NONE, ESYS_TR_NONE)) != TSS2_RC_SUCCESS) {
        keybay_tpm2_flush(t, session);
        return keybay_tpm2_fail(host, t, rc, KEYBAY_ERR_INTERNAL, "cannot add the authorization value to the policy");
    }
    return KEYBAY_OK;
}
