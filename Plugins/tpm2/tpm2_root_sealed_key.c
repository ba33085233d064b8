// SPDX-License-Identifier: Apache-2.0
/* The root key sealed as the root's main object: sealed to the PCRs (or to this TPM alone),
   loaded under the storage primary, and unsealed (through ESAPI, or tss2's SAPI for a signed
   policy). */
#define _POSIX_C_SOURCE 200809L

#include <string.h>

#include <sodium.h>

#include "keybay_plugin_host.h"
#include "keybay_tpm2_session.h"
#include "tpm2_root_internal.h"

/* A policy (or trial) session with PolicyPCR over `mask` at the PCRs' current values. */
static keybay_status pcr_session(const keybay_host *host, tpm *t, TPM2_SE type, uint32_t mask, ESYS_TR *session) {
    return keybay_tpm2_policy_session(host, t, type, ESYS_TR_NONE, mask, 0, session);
}

/* Loads the sealed object (the caller flushes it); the primary is flushed. */
keybay_status load_object(const keybay_host *host, tpm *t, const root_file *f, const char *path, ESYS_TR *object) {
    ESYS_TR primary = ESYS_TR_NONE;
    TSS2_RC rc;
    keybay_status s = keybay_tpm2_load_sealed(host, t, &f->private, &f->public, &primary, object, &rc);
    if (s != KEYBAY_OK && rc != TSS2_RC_SUCCESS) {
        /* A foreign or damaged object is a format-one error on its parameters (integrity, size,
           key); a warning (memory, retry, lockout) is not the root's fault. */
        if (rc_layer_is_tpm(rc) && (rc & TPM2_RC_FMT1)) keybay_host_error_detail(host, "foreign-object", -1, path);
        s = rc_layer_is_tpm(rc) && (rc & TPM2_RC_FMT1) ? fail(host, KEYBAY_ERR_ROOT_MISMATCH, "platform key invalidated: %s cannot load the sealed root key %s "
                                       "(another machine's TPM, or its storage hierarchy was cleared): %s", t->where, path, T(Tss2_RC_Decode)(rc))
                                : tpm_fail(host, t, rc, KEYBAY_ERR_INTERNAL, "cannot load the sealed root key");
    }
    flush(t, &primary);
    return s;
}

/* A signed policy's unseal: the approving signature's ticket (kept, or verified now), then on
   tss2's SAPI as tpm2-pin does (keybay_tpm2_session.h) — a policy session salted with the
   primary, PolicyPCR, PolicyAuthorize, and the root key coming back encrypted — so that ESAPI's
   per-hash OpenSSL set-up stays out of every open (docs/performance.md). */
static keybay_status unseal_signed(const keybay_host *host, tpm *t, const root_file *f, const char *path, uint8_t *key) {
    uint8_t now[KEYBAY_TPM2_PCRS][32], policy[32];
    TPMT_TK_VERIFIED ticket;
    int have = 0, cached = 0, loaded = 0;
    TSS2_RC rc = TSS2_RC_SUCCESS;
    keybay_status s = keybay_tpm2_read_pcrs(host, t, f->pcrs, now);
    if (s == KEYBAY_OK) keybay_tpm2_pcr_policy(f->pcrs, (const uint8_t (*)[32])now, policy);
    if (s == KEYBAY_OK) s = signed_ticket(host, t, f, policy, 1, 0, &ticket, &have, &cached);
    if (s == KEYBAY_OK && !have) return pcr_mismatch(host, t, f);
    if (s != KEYBAY_OK) return s;
    keybay_tpm2_session *session = sodium_malloc(sizeof *session);
    if (!session) return fail(host, KEYBAY_ERR_INTERNAL, "out of memory");
    keybay_tpm2_approval approval = { &f->key, policy, &ticket };
    /* The PCRs could change between the read and PolicyPCR: the unseal then fails the policy. A
       kept ticket the TPM no longer takes (its owner hierarchy changed) fails the session's
       PolicyAuthorize: it is verified afresh, once. */
    s = keybay_tpm2_unseal_with_auth(cached ? NULL : host, t, &f->public, &f->private, f->pcrs, &approval, NULL, 0, session, &rc, &loaded);
    if (s != KEYBAY_OK && cached && loaded && rc == TSS2_RC_SUCCESS) {
        (void)keybay_rf_remove(NULL, f->context, TICKET_FILE);
        s = signed_ticket(host, t, f, policy, 0, 0, &ticket, &have, &cached);
        if (s == KEYBAY_OK && !have) s = pcr_mismatch(host, t, f);
        else if (s == KEYBAY_OK) s = keybay_tpm2_unseal_with_auth(host, t, &f->public, &f->private, f->pcrs, &approval, NULL, 0, session, &rc, &loaded);
    } else if (s != KEYBAY_OK && cached && rc == TSS2_RC_SUCCESS) {
        s = keybay_tpm2_unseal_with_auth(host, t, &f->public, &f->private, f->pcrs, &approval, NULL, 0, session, &rc, &loaded); /* its line */
    }
    if (s == KEYBAY_OK && session->unsealed_length == ROOT_KEY_BYTES) {
        memcpy(key, session->unsealed, ROOT_KEY_BYTES);
    } else if (s == KEYBAY_OK) {
        s = fail(host, KEYBAY_ERR_ROOT_MISMATCH, "platform key invalidated: the sealed object in %s holds %zu bytes, not a root key", path,
                 session->unsealed_length);
    } else if (rc == TSS2_RC_SUCCESS) {
        /* explained already: the primary, the session */
    } else if (!loaded && rc_layer_is_tpm(rc) && (rc & TPM2_RC_FMT1)) {
        keybay_host_error_detail(host, "foreign-object", -1, path);
        s = fail(host, KEYBAY_ERR_ROOT_MISMATCH, "platform key invalidated: %s cannot load the sealed root key %s (another machine's TPM, "
                 "or its storage hierarchy was cleared): %s", t->where, path, T(Tss2_RC_Decode)(rc));
    } else if (!loaded) {
        s = tpm_fail(host, t, rc, KEYBAY_ERR_INTERNAL, "cannot load the sealed root key");
    } else if (rc_layer_is_tpm(rc) && rc_base(rc) == TPM2_RC_POLICY_FAIL) {
        s = pcr_mismatch(host, t, f);
    } else {
        s = tpm_fail(host, t, rc, KEYBAY_ERR_INTERNAL, "cannot unseal the root key");
    }
    sodium_memzero(session, sizeof *session);
    sodium_free(session);
    return s;
}

/* Loads the sealed object and unseals the root key into `key` (guarded memory). */
keybay_status unseal_root(const keybay_host *host, tpm *t, const root_file *f, const char *path, uint8_t *key) {
    if (f->has_signed) return unseal_signed(host, t, f, path, key);
    ESYS_TR object = ESYS_TR_NONE, session = ESYS_TR_NONE;
    TSS2_RC rc;
    keybay_status s = load_object(host, t, f, path, &object);
    if (s == KEYBAY_OK && f->pcrs) {
        s = pcr_session(host, t, TPM2_SE_POLICY, f->pcrs, &session);
    }
    TPM2B_SENSITIVE_DATA *out = NULL;
    /* continueSession clear: the TPM ends the policy session once the unseal succeeds (one
       FlushContext fewer); a failed unseal leaves it, and it is flushed below. */
    if (s == KEYBAY_OK && session != ESYS_TR_NONE &&
        (rc = T(Esys_TRSess_SetAttributes)(t->esys, session, 0, TPMA_SESSION_CONTINUESESSION)) != TSS2_RC_SUCCESS)
        s = tpm_fail(host, t, rc, KEYBAY_ERR_INTERNAL, "cannot set the policy session's attributes");
    if (s == KEYBAY_OK) {
        rc = T(Esys_Unseal)(t->esys, object, f->pcrs ? session : ESYS_TR_PASSWORD, ESYS_TR_NONE, ESYS_TR_NONE, &out);
        if (rc == TSS2_RC_SUCCESS) session = ESYS_TR_NONE; /* ended by the TPM */
        if (rc != TSS2_RC_SUCCESS) {
            out = NULL;
            s = rc_layer_is_tpm(rc) && rc_base(rc) == TPM2_RC_POLICY_FAIL ? pcr_mismatch(host, t, f)
                                                                         : tpm_fail(host, t, rc, KEYBAY_ERR_INTERNAL, "cannot unseal the root key");
        } else if (out->size != ROOT_KEY_BYTES) {
            s = fail(host, KEYBAY_ERR_ROOT_MISMATCH, "platform key invalidated: the sealed object in %s holds %u bytes, not a root key", path, out->size);
        } else {
            memcpy(key, out->buffer, ROOT_KEY_BYTES);
        }
    }
    if (out) { sodium_memzero(out, sizeof *out); T(Esys_Free)(out); }
    flush(t, &session);
    flush(t, &object);
    return s;
}

/* Seals `key` (the root key) as the root's main object: bound to the PCRs of `f->pcrs` at their
   values now (recorded in the file), or, without PCRs, to this TPM alone (userWithAuth, empty
   password). Sets f->public, f->private and the PCR values. */
keybay_status seal_main(const keybay_host *host, tpm *t, root_file *f, const uint8_t *key) {
    TPM2B_SENSITIVE_CREATE *sensitive = sodium_malloc(sizeof *sensitive);
    if (!sensitive) return fail(host, KEYBAY_ERR_INTERNAL, "out of memory sealing the tpm2 root");
    keybay_status s = KEYBAY_OK;
    ESYS_TR primary = ESYS_TR_NONE, trial = ESYS_TR_NONE;
    TPM2B_PUBLIC template = { .publicArea = {
        .type = TPM2_ALG_KEYEDHASH,
        .nameAlg = TPM2_ALG_SHA256,
        .objectAttributes = TPMA_OBJECT_FIXEDTPM | TPMA_OBJECT_FIXEDPARENT | TPMA_OBJECT_NODA | (f->pcrs ? 0 : TPMA_OBJECT_USERWITHAUTH),
        .parameters.keyedHashDetail.scheme = { .scheme = TPM2_ALG_NULL },
    } };
    f->has_pcr_values = 0;
    if (f->has_signed) {
        /* The policy is the key's; the values now are recorded to name what changes later. */
        s = keybay_tpm2_read_pcrs(host, t, f->pcrs, f->pcr_values);
        template.publicArea.authPolicy.size = 32;
        memcpy(template.publicArea.authPolicy.buffer, f->key.policy, 32);
        if (s == KEYBAY_OK) f->has_pcr_values = 1;
    } else if (f->pcrs) {
        /* The values are read, then the TPM computes the policy of the values in effect: they
           must agree, or a PCR changed meanwhile (and the file would record the wrong ones). */
        s = keybay_tpm2_read_pcrs(host, t, f->pcrs, f->pcr_values);
        if (s == KEYBAY_OK) s = pcr_session(host, t, TPM2_SE_TRIAL, f->pcrs, &trial);
        TPM2B_DIGEST *policy = NULL;
        TSS2_RC rc;
        if (s == KEYBAY_OK && (rc = T(Esys_PolicyGetDigest)(t->esys, trial, ESYS_TR_NONE, ESYS_TR_NONE, ESYS_TR_NONE, &policy)) != TSS2_RC_SUCCESS)
            s = tpm_fail(host, t, rc, KEYBAY_ERR_INTERNAL, "cannot compute the PCR policy");
        uint8_t expected[32];
        keybay_tpm2_pcr_policy(f->pcrs, (const uint8_t (*)[32])f->pcr_values, expected);
        if (s == KEYBAY_OK && (policy->size != sizeof expected || memcmp(policy->buffer, expected, sizeof expected) != 0))
            s = fail(host, KEYBAY_ERR_INTERNAL, "the PCRs of %s changed while the tpm2 root was being sealed to them; try again", t->where);
        if (s == KEYBAY_OK) { template.publicArea.authPolicy = *policy; f->has_pcr_values = 1; }
        if (policy) T(Esys_Free)(policy);
        flush(t, &trial);
    }
    if (s == KEYBAY_OK) s = create_primary(host, t, &primary);
    if (s == KEYBAY_OK) {
        memset(sensitive, 0, sizeof *sensitive);
        sensitive->sensitive.data.size = ROOT_KEY_BYTES;
        memcpy(sensitive->sensitive.data.buffer, key, ROOT_KEY_BYTES);
        TPM2B_DATA outside = { 0 };
        TPML_PCR_SELECTION none = { 0 };
        TPM2B_PRIVATE *private = NULL;
        TPM2B_PUBLIC *public = NULL;
        TSS2_RC rc = T(Esys_Create)(t->esys, primary, ESYS_TR_PASSWORD, ESYS_TR_NONE, ESYS_TR_NONE, sensitive, &template, &outside, &none,
                                    &private, &public, NULL, NULL, NULL);
        if (rc != TSS2_RC_SUCCESS) s = tpm_fail(host, t, rc, KEYBAY_ERR_INTERNAL, "cannot seal the root key");
        else { f->private = *private; f->public = *public; }
        if (private) T(Esys_Free)(private);
        if (public) T(Esys_Free)(public);
    }
    flush(t, &primary);
    sodium_memzero(sensitive, sizeof *sensitive);
    sodium_free(sensitive);
    return s;
}
