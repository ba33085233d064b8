// SPDX-License-Identifier: Apache-2.0
/* Root recovery: the root key sealed a second time under a recovery key shown once (bound to no
   PCR), and `root reseal`, which opens it with that key and seals the root again to the PCRs'
   values now in effect. */
#define _POSIX_C_SOURCE 200809L

#include <string.h>

#include <sodium.h>

#include "keybay_plugin_host.h"
#include "keybay_recovery_key.h"
#include "keybay_tpm2_session.h"
#include "tpm2_root_internal.h"

static const char recovery_auth_label[] = "keybay tpm2 root recovery v1 auth value";

/* Root recovery's secrets, in guarded memory. */
typedef struct recovery_secret {
    uint8_t raw[KEYBAY_RK_RAW_BYTES];
    uint8_t symbols[KEYBAY_RK_SYMBOLS];
    uint8_t hash[KEYBAY_RK_HASH_BYTES];
    uint8_t auth[32];
    char text[KEYBAY_RK_TEXT_BYTES + 1];
    TPM2B_SENSITIVE_CREATE sensitive;
} recovery_secret;

/* The recovery object's authValue: keyed BLAKE2b-256 of the recovery key K over the label. */
static void recovery_auth(recovery_secret *r) {
    crypto_generichash(r->auth, sizeof r->auth, (const unsigned char *)recovery_auth_label, sizeof recovery_auth_label - 1, r->raw,
                       KEYBAY_RK_KEY_BYTES);
}

/* Root recovery: a new recovery key, the root key sealed a second time under it (PolicyAuthValue,
   no PCRs, counted by the TPM's lockout), and the key shown to the user through the host. */
keybay_status seal_recovery(const keybay_host *host, tpm *t, root_file *f, const uint8_t *key) {
    recovery_secret *r = sodium_malloc(sizeof *r);
    if (!r) return fail(host, KEYBAY_ERR_INTERNAL, "out of memory sealing the tpm2 root's recovery");
    memset(r, 0, sizeof *r);
    keybay_rk_generate(r->raw, r->hash);
    recovery_auth(r);
    r->sensitive.sensitive.userAuth.size = sizeof r->auth;
    memcpy(r->sensitive.sensitive.userAuth.buffer, r->auth, sizeof r->auth);
    r->sensitive.sensitive.data.size = ROOT_KEY_BYTES;
    memcpy(r->sensitive.sensitive.data.buffer, key, ROOT_KEY_BYTES);
    keybay_status s = keybay_tpm2_seal_with_auth(host, t, 0, NULL, &r->sensitive, &f->recovery_public, &f->recovery_private);
    if (s == KEYBAY_OK) {
        f->has_recovery = 1;
        keybay_rk_encode(r->raw, r->text);
        size_t size = 0;
        char *picture = keybay_rk_picture(host, "tpm2", r->text, &size);
        s = host->show_secret(host->context, KEYBAY_SECRET_RECOVERY_KEY, r->text, picture);
        keybay_rk_picture_free(picture, size);
    }
    sodium_memzero(r, sizeof *r);
    sodium_free(r);
    return s;
}

/* Opens root recovery's copy of the root key with the recovery key the user typed (`secret`). */
static keybay_status unseal_recovery(const keybay_host *host, tpm *t, const root_file *f, const char *path, const uint8_t *secret,
                                     size_t secret_length, uint8_t *key) {
    if (!f->has_recovery) {
        keybay_host_error_reason(host, "no-root-recovery");
        return fail(host, KEYBAY_ERR_UNSUPPORTED, "the tpm2 root %s has no root recovery (it is made with init --opt recovery=yes)", path);
    }
    if (secret_length > KEYBAY_RK_INPUT_BYTES) {
        keybay_host_error_reason(host, "too-long");
        return fail(host, KEYBAY_ERR_WRONG_SECRET, "tpm2: the recovery key is longer than %u bytes", KEYBAY_RK_INPUT_BYTES);
    }
    recovery_secret *r = sodium_malloc(sizeof *r);
    keybay_tpm2_session *session = sodium_malloc(sizeof *session);
    keybay_status s = r && session ? KEYBAY_OK : fail(host, KEYBAY_ERR_INTERNAL, "out of memory");
    /* A typo is told before the TPM is asked: it counts nothing towards the lockout. */
    if (s == KEYBAY_OK) s = keybay_rk_decode(host, "tpm2", secret, secret_length, r->symbols, r->hash, r->raw);
    TSS2_RC rc = TSS2_RC_SUCCESS;
    int loaded = 0;
    if (s == KEYBAY_OK) {
        recovery_auth(r);
        s = keybay_tpm2_unseal_with_auth(host, t, &f->recovery_public, &f->recovery_private, 0, NULL, r->auth, sizeof r->auth, session, &rc,
                                         &loaded);
    }
    if (s == KEYBAY_OK && session->unsealed_length == ROOT_KEY_BYTES) {
        memcpy(key, session->unsealed, ROOT_KEY_BYTES);
    } else if (s == KEYBAY_OK) {
        s = fail(host, KEYBAY_ERR_ROOT_MISMATCH, "platform key invalidated: the recovery object in %s holds %zu bytes, not a root key", path,
                 session->unsealed_length);
    } else if (rc == TSS2_RC_SUCCESS) {
        /* explained already: a typo, the primary, the session */
    } else if (!loaded && rc_layer_is_tpm(rc) && (rc & TPM2_RC_FMT1)) {
        keybay_host_error_detail(host, "foreign-object", -1, path);
        s = fail(host, KEYBAY_ERR_ROOT_MISMATCH, "platform key invalidated: %s cannot load the recovery object in %s (another machine's "
                 "TPM, or its storage hierarchy was cleared): %s", t->where, path, T(Tss2_RC_Decode)(rc));
    } else if (!loaded) {
        s = tpm_fail(host, t, rc, KEYBAY_ERR_INTERNAL, "cannot load the root's recovery object");
    } else if (keybay_tpm2_is_auth_refusal(rc)) {
        s = keybay_tpm2_auth_refused(host, t, rc, "wrong-recovery-key", "root recovery key");
    } else {
        s = tpm_fail(host, t, rc, KEYBAY_ERR_INTERNAL, "cannot unseal the root's recovery object");
    }
    if (r) { sodium_memzero(r, sizeof *r); sodium_free(r); }
    if (session) { sodium_memzero(session, sizeof *session); sodium_free(session); }
    return s;
}

/* Root recovery: the root key from the recovery object, sealed again to the PCRs' values now in
   effect, checked (the new object unseals to the same key, the provider state still names the
   file) and put in place by one rename (keybay_rf_replace), then read back. Until the rename the
   old file is the root; after it, the new one; both hold the same root key. */
keybay_status root_reseal(const keybay_host *host, const keybay_root_context *c, const uint8_t *state, size_t state_length,
                          const uint8_t *secret, size_t secret_length) {
    tpm t;
    keybay_status s = tpm_open(host, c, 0, &t);
    if (s != KEYBAY_OK) return s;
    char path[KEYBAY_ROOT_PATH_BYTES];
    keybay_rf_path(c, FILE_NAME, path, sizeof path);
    root_file *f = sodium_malloc(sizeof *f), *back = sodium_malloc(sizeof *back);
    uint8_t *key = sodium_malloc(ROOT_KEY_BYTES), *again = sodium_malloc(ROOT_KEY_BYTES);
    if (!f || !back || !key || !again) s = fail(host, KEYBAY_ERR_INTERNAL, "out of memory");
    if (s == KEYBAY_OK) s = load_file(host, c, state, state_length, f);
    if (s == KEYBAY_OK) s = unseal_recovery(host, &t, f, path, secret, secret_length, key);
    if (s == KEYBAY_OK) s = seal_main(host, &t, f, key);
    if (s == KEYBAY_OK) s = encode_file(host, f);
    uint8_t now[STATE_BYTES];
    if (s == KEYBAY_OK) {
        provider_state(f, c->storage_domain, now);
        if (state_length != STATE_BYTES || sodium_memcmp(now, state, STATE_BYTES) != 0)
            s = fail(host, KEYBAY_ERR_INTERNAL, "the re-sealed tpm2 root file would no longer belong to the store; nothing was changed");
    }
    if (s == KEYBAY_OK) s = unseal_root(host, &t, f, path, again);
    if (s == KEYBAY_OK && sodium_memcmp(again, key, ROOT_KEY_BYTES) != 0)
        s = fail(host, KEYBAY_ERR_INTERNAL, "the re-sealed root key does not unseal to the root key; nothing was changed");
    if (s == KEYBAY_OK) s = keybay_rf_replace(host, c, FILE_NAME, f->bytes, f->length);
    if (s == KEYBAY_OK) s = keybay_rf_read(host, c, FILE_NAME, "the tpm2 root file", back->bytes, sizeof back->bytes, &back->length);
    if (s == KEYBAY_OK && (back->length != f->length || memcmp(back->bytes, f->bytes, f->length) != 0)) {
        keybay_host_error_detail(host, "read-back-mismatch", -1, path);
        s = fail(host, KEYBAY_ERR_IO, "the re-sealed tpm2 root file %s does not read back as written", path);
    }
    if (f) sodium_free(f);
    if (back) sodium_free(back);
    if (key) sodium_free(key);
    if (again) sodium_free(again);
    tpm_close(&t);
    return s;
}
