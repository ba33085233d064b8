// SPDX-License-Identifier: Apache-2.0
/*
 * keybay_tpm2_session.h — a policy session salted with the storage primary, run on tss2's SAPI
 * with its cryptography computed here: the tpm2-pin method's unlock (PolicyAuthValue, the PIN
 * as the object's authValue, the unsealed secret encrypted on its way back).
 *
 * Why not ESAPI: tpm2-tss 3.2 on OpenSSL 3 makes a fresh OpenSSL library context for every hash,
 * HMAC and nonce it computes, and each one costs as much as a whole TPM command here
 * (docs/performance.md). The commands, the session and what crosses to the TPM are the ones
 * ESAPI would send (TPM 2.0 Part 1, 19.6 and 21; docs/tpm2-pin.md): the salt by ECDH with the
 * primary's P-256 key and KDFe, the session key by KDFa, the command and response HMACs over
 * cpHash and rpHash, the response parameter in AES-128-CFB under KDFa(sessionKey || authValue).
 * SHA-256, HMAC-SHA-256 and the random numbers are libsodium's; the P-256 point multiplications
 * and the AES block are libcrypto's (opened with tss2, which links it), called through the
 * functions that need no OpenSSL library context (keybay_tpm2.h's table).
 *
 * Not installed, not part of the ABI. Every failure has called set_error, except where a TSS2_RC
 * is returned for the caller to explain.
 */
#ifndef KEYBAY_TPM2_SESSION_H
#define KEYBAY_TPM2_SESSION_H

#include "keybay_tpm2.h"

#pragma GCC visibility push(hidden)

#define KEYBAY_TPM2_WORK_BYTES 512

/* One policy session: its handle, the TPM's latest nonce, the session key, the unsealed data and
   room for the secrets computed on the way (the salt, the HMAC key, the ephemeral scalar, Z, the
   AES key schedule). In guarded memory (keybay_method_secret_new), wiped when freed: one guarded
   allocation, not one per value (each costs several system calls). */
typedef struct keybay_tpm2_session {
    TPMI_SH_AUTH_SESSION handle; /* 0 when there is none (never started, flushed, or ended by the TPM) */
    TPM2B_NONCE nonce_tpm;
    uint8_t key[32];             /* sessionKey = KDFa(SHA-256, salt, "ATH", nonceTPM, nonceCaller, 256) */
    uint8_t salt[32];
    uint8_t value[32 + sizeof(TPMU_HA)]; /* sessionKey || authValue: the HMAC key and KDFa's for "CFB" */
    uint8_t key_iv[32];          /* AES-128 key || IV */
    uint8_t unsealed[TPM2_MAX_SYM_DATA];
    size_t unsealed_length;
    _Alignas(16) uint8_t work[KEYBAY_TPM2_WORK_BYTES];
} keybay_tpm2_session;

/* The storage primary of keybay_tpm2_create_primary (the same template, the same errors),
   created through the SAPI: its handle and its public area (the salt key's point). */
keybay_status keybay_tpm2_sys_create_primary(const keybay_host *host, keybay_tpm2 *t, TPM2_HANDLE *primary, TPM2B_PUBLIC *public);

/* Loads a sealed object under `parent`: its handle, and its name (nameAlg || H(public area)),
   which must be the one the TPM reports. Returns the TPM's answer (TSS2_RC_SUCCESS, or why not;
   TSS2_ESYS_RC_MALFORMED_RESPONSE for a name that differs); nothing is left loaded on failure. */
TSS2_RC keybay_tpm2_sys_load(keybay_tpm2 *t, TPM2_HANDLE parent, const TPM2B_PRIVATE *private, const TPM2B_PUBLIC *public,
                             TPM2_HANDLE *object, TPM2B_NAME *name);

/* A signed PCR policy's approval: PolicyAuthorize of `approved` (the PolicyPCR digest of the
   values now) by `key`, with the ticket of its verified signature. */
typedef struct keybay_tpm2_approval {
    const keybay_tpm2_signing_key *key;
    const uint8_t *approved;
    const TPMT_TK_VERIFIED *ticket;
} keybay_tpm2_approval;

/* Starts a policy session salted with `salt_key` (loaded; `salt_public` its P-256 public area),
   symmetric AES-128-CFB, SHA-256, then PolicyPCR over `pcr_mask` (when not 0), PolicyAuthorize
   (with an `approval`) and PolicyAuthValue (with `auth_value`). On failure nothing is left
   loaded and set_error was called. */
keybay_status keybay_tpm2_sys_policy_session(const keybay_host *host, keybay_tpm2 *t, TPM2_HANDLE salt_key, const TPM2B_PUBLIC *salt_public,
                                             uint32_t pcr_mask, const keybay_tpm2_approval *approval, int auth_value,
                                             keybay_tpm2_session *session);

/* TPM2_Unseal of `object` (named `name`) authorized by `session` with `auth` (at most 64 bytes)
   as the object's authValue, the response encrypted (TPMA_SESSION_ENCRYPT) and the session ended
   by the TPM when it succeeds (session->handle is then 0). The response's HMAC is checked before
   its parameter is decrypted into session->unsealed. Returns the TPM's answer, or
   TSS2_ESYS_RC_RSP_AUTH_FAILED for a response whose HMAC does not verify. */
TSS2_RC keybay_tpm2_sys_unseal(keybay_tpm2 *t, keybay_tpm2_session *session, TPM2_HANDLE object, const TPM2B_NAME *name,
                               const uint8_t *auth, size_t auth_length);

/* Flushes a handle the SAPI functions above returned (ignoring a failure), and sets it to 0. */
void keybay_tpm2_sys_flush(keybay_tpm2 *t, TPM2_HANDLE *handle);

/* ---- a secret under an authorization value (tpm2_auth_object.c): tpm2-pin's PIN, the tpm2 root's recovery secret ---- */

/* The dictionary-attack state: failures counted, the most allowed, seconds per failure forgiven. */
typedef struct keybay_tpm2_lockout {
    uint32_t counter, max, interval;
} keybay_tpm2_lockout;

keybay_status keybay_tpm2_read_lockout(const keybay_host *host, keybay_tpm2 *t, keybay_tpm2_lockout *l);
int32_t keybay_tpm2_tries_left(const keybay_tpm2_lockout *l);
/* LOCKED, reason "lockout" with 0 tries left, saying when the TPM takes a try again. */
keybay_status keybay_tpm2_locked_out(const keybay_host *host, const keybay_tpm2 *t, const keybay_tpm2_lockout *l);

/* The TPM refused an authorization value (TPM_RC_AUTH_FAIL, TPM_RC_BAD_AUTH) or is in lockout. */
int keybay_tpm2_is_auth_refusal(TSS2_RC rc);
/* That refusal: WRONG_SECRET with `reason` and the tries left (the lockout counters read), or
   LOCKED (keybay_tpm2_locked_out); `what` names the secret in the line ("PIN"). */
keybay_status keybay_tpm2_auth_refused(const keybay_host *host, keybay_tpm2 *t, TSS2_RC rc, const char *reason, const char *what);

/* Seals `sensitive` (userAuth: the authorization value; data: the secret) in a keyed-hash object
   under the storage primary: fixedTPM | fixedParent, no userWithAuth, not noDA (every wrong
   value counts towards the TPM's lockout), its policy PolicyPCR over `pcr_mask` (when not 0) then
   PolicyAuthValue; with a `key`, PolicyAuthorize for it (its signed PCR policy) then
   PolicyAuthValue. The sensitive part crosses to the TPM in a session salted with the primary. */
keybay_status keybay_tpm2_seal_with_auth(const keybay_host *host, keybay_tpm2 *t, uint32_t pcr_mask, const keybay_tpm2_signing_key *key,
                                         const TPM2B_SENSITIVE_CREATE *sensitive, TPM2B_PUBLIC *public_out, TPM2B_PRIVATE *private_out);

/* Loads such an object under a fresh primary and unseals it with `auth` in a policy session
   salted with the primary (keybay_tpm2_sys_unseal); `auth` NULL: an object whose policy has no
   PolicyAuthValue (the tpm2 root's under a signed policy), unsealed the same way: the secret in session->unsealed. A failed
   primary or session: its status, explained, *rc 0. A failed load (*loaded 0) or unseal: INTERNAL,
   unexplained, the TPM's answer in *rc for the caller to explain. Nothing is left loaded. */
keybay_status keybay_tpm2_unseal_with_auth(const keybay_host *host, keybay_tpm2 *t, const TPM2B_PUBLIC *public, const TPM2B_PRIVATE *private,
                                           uint32_t pcr_mask, const keybay_tpm2_approval *approval, const uint8_t *auth, size_t auth_length,
                                           keybay_tpm2_session *session, TSS2_RC *rc, int *loaded);

/* The cryptography, separately (tpm2_session_crypto.c). */

/* KDFa (TPM 2.0 Part 1, 11.4.10.2) with HMAC-SHA-256: `bits` (a multiple of 8) into `out`. */
void keybay_tpm2_kdfa(const uint8_t *key, size_t key_length, const char *label, const TPM2B_NONCE *context_u,
                      const TPM2B_NONCE *context_v, uint32_t bits, uint8_t *out);

/* The salt of a session salted with an ECC P-256 key (TPM 2.0 Part 1, C.6.1; 11.4.10.3 KDFe):
   an ephemeral key pair, its public point as TPM2_StartAuthSession's encryptedSalt
   (a marshaled TPMS_ECC_POINT) and salt = KDFe(SHA-256, Z, "SECRET", Qe.x, Qs.x, 256); `work`
   is guarded scratch memory. 0 when done; -1 when `key` is not a P-256 point on the curve or
   libcrypto failed (`salt` wiped). */
int keybay_tpm2_ecc_salt(const TPMS_ECC_POINT *key, TPM2B_ENCRYPTED_SECRET *encrypted_salt, uint8_t salt[32],
                         uint8_t work[KEYBAY_TPM2_WORK_BYTES]);

/* AES-128-CFB decryption in place with `key_iv` (the key, then the IV: 16 bytes each); `work` is
   guarded scratch memory. 0 when done; -1 when libcrypto failed (`data` wiped). */
int keybay_tpm2_aes128_cfb_decrypt(const uint8_t key_iv[32], uint8_t *data, size_t length, uint8_t work[KEYBAY_TPM2_WORK_BYTES]);

#pragma GCC visibility pop

#endif /* KEYBAY_TPM2_SESSION_H */
