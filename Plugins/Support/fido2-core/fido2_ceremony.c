// SPDX-License-Identifier: Apache-2.0
/* The fido2 core's ceremonies with a security key: fido2_internal.h. */
#define _POSIX_C_SOURCE 200809L

#include "fido2_internal.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <sodium.h>

#include "keybay_plugin_host.h"

/* ---------------------------------------------------------------- ceremonies */

static void f2_job_run(f2_job *job) {
    job->rc = job->cred != NULL ? F2(fido_dev_make_cred)(job->dev, job->cred, job->pin)
                                : F2(fido_dev_get_assert)(job->dev, job->assert, job->pin);
}

static void *f2_worker(void *arg) {
    f2_job *job = arg;
    f2_job_run(job);
    pthread_mutex_lock(&job->lock);
    job->done = 1;
    pthread_cond_signal(&job->cond);
    pthread_mutex_unlock(&job->lock);
    return NULL;
}

/* Returns the libfido2 result, or FIDO_ERR_KEEPALIVE_CANCEL whenever the host cancelled (the
   key was told), even if the key finished anyway. */
int f2_run(const keybay_host *host, f2_job *job) {
    if (!KEYBAY_HOST_HAS(host, is_cancelled)) {
        f2_job_run(job);
        return job->rc;
    }
    if (keybay_host_cancelled(host)) return FIDO_ERR_KEEPALIVE_CANCEL;
    int cancelled = 0;
    pthread_t thread;
    pthread_mutex_init(&job->lock, NULL);
    pthread_cond_init(&job->cond, NULL);
    job->done = 0;
    if (pthread_create(&thread, NULL, f2_worker, job) != 0) {
        pthread_mutex_destroy(&job->lock);
        pthread_cond_destroy(&job->cond);
        f2_job_run(job);
        return job->rc;
    }
    pthread_mutex_lock(&job->lock);
    while (!job->done) {
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_nsec += F2_POLL_MS * 1000000L;
        if (until.tv_nsec >= 1000000000L) {
            until.tv_sec++;
            until.tv_nsec -= 1000000000L;
        }
        int w = pthread_cond_timedwait(&job->cond, &job->lock, &until);
        if (job->done || w != ETIMEDOUT || cancelled) continue;
        pthread_mutex_unlock(&job->lock);
        if (keybay_host_cancelled(host)) {
            cancelled = 1;
            F2(fido_dev_cancel)(job->dev);
        }
        pthread_mutex_lock(&job->lock);
    }
    pthread_mutex_unlock(&job->lock);
    pthread_join(thread, NULL);
    pthread_mutex_destroy(&job->lock);
    pthread_cond_destroy(&job->cond);
    return cancelled ? FIDO_ERR_KEEPALIVE_CANCEL : job->rc;
}

/* The failures whose line names the key alone: the codes (FIDO_OK ends the list), the reason,
   the status and the line (its one %s the key's path), the same for every operation. */
static const struct f2_plain_failure {
    int rc[4];
    const char *reason;
    keybay_status status;
    const char *line;
} f2_plain_failures[] = {
    {{FIDO_ERR_PIN_AUTH_BLOCKED}, "pin-auth-blocked", KEYBAY_ERR_LOCKED,
     "fido2: too many wrong PINs in a row; remove and re-insert the key at %s, then try again"},
    {{FIDO_ERR_UV_BLOCKED}, "uv-blocked", KEYBAY_ERR_LOCKED,
     "fido2: built-in user verification of the key at %s is blocked; use its PIN to unblock it"},
    {{FIDO_ERR_UV_INVALID}, "uv-failed", KEYBAY_ERR_WRONG_SECRET,
     "fido2: the key at %s did not verify the user"},
    {{FIDO_ERR_PIN_NOT_SET}, "no-pin-set", KEYBAY_ERR_UNSUPPORTED,
     "fido2: the key at %s has no PIN set"},
    {{FIDO_ERR_OPERATION_DENIED}, "touch-refused", KEYBAY_ERR_CANCELLED,
     "fido2: the touch was refused on the key at %s"},
    {{FIDO_ERR_KEEPALIVE_CANCEL}, "cancelled", KEYBAY_ERR_CANCELLED,
     "fido2: cancelled while waiting for the key at %s"},
    {{FIDO_ERR_USER_ACTION_TIMEOUT, FIDO_ERR_ACTION_TIMEOUT, FIDO_ERR_TIMEOUT}, "touch-timeout", KEYBAY_ERR_TIMED_OUT,
     "fido2: nobody touched the key at %s in time"},
    {{FIDO_ERR_NO_CREDENTIALS, FIDO_ERR_INVALID_CREDENTIAL}, "credential-not-held", KEYBAY_ERR_NOT_AVAILABLE,
     "fido2: the key at %s does not hold this method's credential (is it the key that was enrolled?)"},
};

/* Maps a libfido2 failure of `what` to a status, with one line for the user (after a wrong PIN,
   with the retries the key has left). */
keybay_status f2_failure(const keybay_host *host, fido_dev_t *dev, int rc, const char *what, const char *path) {
    for (size_t i = 0; i < sizeof f2_plain_failures / sizeof f2_plain_failures[0]; i++) {
        const struct f2_plain_failure *f = &f2_plain_failures[i];
        for (const int *code = f->rc; *code != FIDO_OK; code++) {
            if (*code != rc) continue;
            keybay_host_error_reason(host, f->reason);
            keybay_host_error(host, f->line, path);
            return f->status;
        }
    }
    switch (rc) {
    case FIDO_ERR_PIN_INVALID: {
        int retries = -1;
        int known = dev != NULL && F2(fido_dev_get_retry_count)(dev, &retries) == FIDO_OK;
        keybay_host_error_detail(host, "wrong-pin", known ? retries : -1, NULL);
        if (known)
            keybay_host_error(host, "fido2: wrong PIN for the key at %s; %d tr%s left before the key blocks its PIN",
                     path, retries, retries == 1 ? "y" : "ies");
        else
            keybay_host_error(host, "fido2: wrong PIN for the key at %s", path);
        return KEYBAY_ERR_WRONG_SECRET;
    }
    case FIDO_ERR_PIN_BLOCKED:
        keybay_host_error_detail(host, "pin-blocked", 0, NULL);
        keybay_host_error(host, "fido2: the PIN of the key at %s is blocked; only a reset of the key (which "
                       "deletes its credentials) unblocks it", path);
        return KEYBAY_ERR_LOCKED;
    case FIDO_ERR_PIN_REQUIRED:
        keybay_host_error_reason(host, "pin-required");
        keybay_host_error(host, "fido2: the key at %s requires its PIN to %s", path, what);
        return KEYBAY_ERR_PIN_REQUIRED;
    case FIDO_ERR_UNSUPPORTED_OPTION:
    case FIDO_ERR_INVALID_OPTION:
    case FIDO_ERR_UNSUPPORTED_EXTENSION:
    case FIDO_ERR_UNSUPPORTED_ALGORITHM:
        keybay_host_error_reason(host, "unsupported-mode");
        keybay_host_error(host, "fido2: the key at %s cannot %s in this mode (%s)", path, what, F2(fido_strerr)(rc));
        return KEYBAY_ERR_UNSUPPORTED;
    case FIDO_ERR_TX:
    case FIDO_ERR_RX:
        keybay_host_error_reason(host, "device-gone");
        keybay_host_error(host, "fido2: the key at %s stopped answering while trying to %s (was it removed?)", path, what);
        return KEYBAY_ERR_NOT_AVAILABLE;
    default:
        keybay_host_error(host, "fido2: could not %s with the key at %s: %s", what, path, F2(fido_strerr)(rc));
        return KEYBAY_ERR_INTERNAL;
    }
}

/* Asks for the PIN (once); the retries left come from the key. */
keybay_status f2_ask_pin(const keybay_host *host, fido_dev_t *dev, const char *path, f2_secret *secret) {
    int retries = -1;
    int rc = F2(fido_dev_get_retry_count)(dev, &retries);
    if (rc != FIDO_OK) retries = -1;
    if (rc == FIDO_OK && retries == 0) {
        keybay_host_error_detail(host, "pin-blocked", 0, NULL);
        keybay_host_error(host, "fido2: the PIN of the key at %s is blocked (no tries left); only a reset of the key unblocks it", path);
        return KEYBAY_ERR_LOCKED;
    }
    if (!KEYBAY_HOST_HAS(host, ask_secret)) {
        keybay_host_error(host, "fido2: the key's PIN is needed but the host cannot ask for one");
        return KEYBAY_ERR_INTERACTION_UNAVAILABLE;
    }
    size_t length = 0;
    keybay_status status = host->ask_secret(host->context, KEYBAY_SECRET_PIN, 0, "PIN of the security key",
                                            retries, (uint8_t *)secret->pin, F2_MAX_PIN + 1, &length);
    if (status != KEYBAY_OK) return status; /* CANCELLED, INTERACTION_UNAVAILABLE: as is */
    if (length > F2_MAX_PIN + 1) {
        keybay_host_error(host, "fido2: the host reported more bytes than the buffer holds");
        return KEYBAY_ERR_INTERNAL;
    }
    if (length < 4 || length > F2_MAX_PIN || memchr(secret->pin, 0, length) != NULL) {
        sodium_memzero(secret->pin, sizeof secret->pin);
        keybay_host_error(host, "fido2: a FIDO2 PIN is 4 to %u bytes without NUL bytes", F2_MAX_PIN);
        return KEYBAY_ERR_INVALID_OPTION;
    }
    secret->pin[length] = '\0';
    return KEYBAY_OK;
}

/* The WebAuthn PRF salt for an input: SHA-256("WebAuthn PRF" | 0x00 | input). */
static void f2_prf_salt(const uint8_t input[KEYBAY_FIDO2_PRF_INPUT_BYTES], uint8_t salt[32]) {
    static const char label[] = "WebAuthn PRF"; /* sizeof includes the 0x00 separator */
    crypto_hash_sha256_state st;
    crypto_hash_sha256_init(&st);
    crypto_hash_sha256_update(&st, (const uint8_t *)label, sizeof label);
    crypto_hash_sha256_update(&st, input, KEYBAY_FIDO2_PRF_INPUT_BYTES);
    crypto_hash_sha256_final(&st, salt);
}

const char *f2_mode_text(uint8_t modes) {
    static const char *const text[8] = {
        "no PIN, no touch",      "PIN, no touch",      "touch",         "PIN and touch",
        "built-in verification, no touch", "PIN, no touch",   "built-in verification and touch",
        "PIN and touch",
    };
    return text[modes & 7u];
}

/* One hmac-secret assertion in `modes`; writes the 32-byte output. The UV and UP flags of the
   answer and its signature are checked against the modes and the public key. `what` names the
   purpose in failure lines ("unlock"). */
keybay_status f2_assert(const keybay_host *host, fido_dev_t *dev, const char *path,
                               const f2_params *p, const char *pin, const char *what, const char *touch_prompt,
                               uint8_t out[KEYBAY_METHOD_SECRET_BYTES]) {
    uint8_t cdh[F2_CDH_BYTES], salt[32];
    randombytes_buf(cdh, sizeof cdh);
    f2_prf_salt(p->prf_input, salt);
    int presence = (p->modes & KEYBAY_FIDO2_MODE_PRESENCE) != 0;
    int use_pin = (p->modes & KEYBAY_FIDO2_MODE_PIN) != 0;
    int expect_uv = (p->modes & (KEYBAY_FIDO2_MODE_PIN | KEYBAY_FIDO2_MODE_UV)) != 0;
    keybay_status status = KEYBAY_ERR_INTERNAL;
    fido_assert_t *a = F2(fido_assert_new)();
    es256_pk_t *pk = F2(es256_pk_new)();
    if (a == NULL || pk == NULL) goto done;
    if (F2(fido_assert_set_clientdata_hash)(a, cdh, sizeof cdh) != FIDO_OK || F2(fido_assert_set_rp)(a, p->rp) != FIDO_OK ||
        F2(fido_assert_allow_cred)(a, p->cred_id, p->cred_id_length) != FIDO_OK ||
        F2(fido_assert_set_extensions)(a, FIDO_EXT_HMAC_SECRET) != FIDO_OK ||
        F2(fido_assert_set_hmac_salt)(a, salt, sizeof salt) != FIDO_OK ||
        F2(fido_assert_set_up)(a, presence ? FIDO_OPT_TRUE : FIDO_OPT_FALSE) != FIDO_OK ||
        F2(fido_assert_set_uv)(a, expect_uv && !use_pin ? FIDO_OPT_TRUE : FIDO_OPT_OMIT) != FIDO_OK) {
        keybay_host_error(host, "fido2: could not prepare the assertion");
        goto done;
    }
    if (presence && touch_prompt != NULL) {
        status = keybay_host_message(host, KEYBAY_MESSAGE_INFO, "%s", touch_prompt);
        if (status != KEYBAY_OK) goto done;
    }
    f2_job job = {.dev = dev, .assert = a, .pin = use_pin ? pin : NULL};
    int rc = f2_run(host, &job);
    if (rc != FIDO_OK) {
        status = f2_failure(host, dev, rc, what, path);
        goto done;
    }
    if (F2(fido_assert_count)(a) != 1) {
        keybay_host_error(host, "fido2: the key at %s answered with %zu assertions, expected one", path, F2(fido_assert_count)(a));
        goto done;
    }
    uint8_t flags = F2(fido_assert_flags)(a, 0);
    int got_uv = (flags & 0x04) != 0, got_up = (flags & 0x01) != 0;
    if (got_uv != expect_uv) {
        keybay_host_error_reason(host, "uv-mismatch");
        keybay_host_error(host, "fido2: the key at %s %s user verification, but this method was enrolled %s it "
                       "(mode: %s); its hmac-secret differs between the two, so it cannot unlock in this mode",
                 path, got_uv ? "performed" : "did not perform", expect_uv ? "with" : "without", f2_mode_text(p->modes));
        status = KEYBAY_ERR_UNSUPPORTED;
        goto done;
    }
    if (presence && !got_up) {
        keybay_host_error_reason(host, "touch-not-confirmed");
        keybay_host_error(host, "fido2: the key at %s did not confirm the touch this method was enrolled with", path);
        status = KEYBAY_ERR_UNSUPPORTED;
        goto done;
    }
    if (F2(es256_pk_from_ptr)(pk, p->public_key, sizeof p->public_key) != FIDO_OK ||
        F2(fido_assert_verify)(a, 0, COSE_ES256, pk) != FIDO_OK) {
        keybay_host_error(host, "fido2: the answer of the key at %s is not signed by the enrolled credential", path);
        status = KEYBAY_ERR_WRONG_SECRET;
        goto done;
    }
    if (F2(fido_assert_hmac_secret_len)(a, 0) != KEYBAY_METHOD_SECRET_BYTES) {
        keybay_host_error(host, "fido2: the key at %s returned no hmac-secret output", path);
        goto done;
    }
    memcpy(out, F2(fido_assert_hmac_secret_ptr)(a, 0), KEYBAY_METHOD_SECRET_BYTES);
    status = KEYBAY_OK;
done:
    sodium_memzero(salt, sizeof salt);
    F2(es256_pk_free)(&pk);
    F2(fido_assert_free)(&a); /* libfido2 wipes the hmac-secret it held */
    return status;
}

/* Does the key at `dev` hold the credential? Asks without touch, PIN or extension. Returns 1
   yes, 0 no, -1 could not tell. */
int f2_holds(fido_dev_t *dev, const f2_params *p) {
    uint8_t cdh[F2_CDH_BYTES];
    randombytes_buf(cdh, sizeof cdh);
    fido_assert_t *a = F2(fido_assert_new)();
    if (a == NULL) return -1;
    int rc = FIDO_ERR_INTERNAL;
    if (F2(fido_assert_set_clientdata_hash)(a, cdh, sizeof cdh) == FIDO_OK && F2(fido_assert_set_rp)(a, p->rp) == FIDO_OK &&
        F2(fido_assert_allow_cred)(a, p->cred_id, p->cred_id_length) == FIDO_OK &&
        F2(fido_assert_set_up)(a, FIDO_OPT_FALSE) == FIDO_OK)
        rc = F2(fido_dev_get_assert)(dev, a, NULL);
    F2(fido_assert_free)(&a);
    if (rc == FIDO_OK) return 1;
    if (rc == FIDO_ERR_NO_CREDENTIALS || rc == FIDO_ERR_INVALID_CREDENTIAL) return 0;
    return -1;
}

