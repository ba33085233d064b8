// SPDX-License-Identifier: Apache-2.0
/*
 * The `fido2` method (Keybay plugin ABI v1): M is the 32-byte output of the CTAP2 hmac-secret
 * extension of a non-resident credential on a FIDO2 security key, via libfido2. docs/fido2.md
 * specifies the public parameters, the modes (pin, presence, uv), the options, the enrollment
 * and unlock ceremonies and what each error means.
 *
 * Non-obvious choices:
 * - libfido2 is not linked: it is opened on first use (below), so loading the plugin stays cheap
 *   and a process that only lists plugins or uses other methods never maps libfido2 and its
 *   dependencies.
 * - The salt sent to the key is the WebAuthn PRF salt of the stored input, so a browser passkey's
 *   PRF over the same input gives the same secret.
 * - CTAP 2.1 keys derive a different hmac-secret with and without user verification, so unlock
 *   checks the answer's UV (and UP) flags against the recorded mode and refuses a mismatch
 *   instead of returning a secret that cannot open the store.
 * - While a touch is awaited a worker thread talks to the key and the calling thread polls
 *   host->is_cancelled, so a cancel reaches the key (CTAPHID_CANCEL).
 */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <fido.h>
#include <fido/es256.h>
#include <sodium.h>

#include "keybay_fido2_core.h"
#include "keybay_lazy_library.h"
#include "keybay_plugin_host.h"

#define F2_MAX_PIN 63u
#define F2_CDH_BYTES 32u
#define F2_POLL_MS 50

_Static_assert(KEYBAY_FIDO2_OFFSET_PUBLIC_KEY == KEYBAY_FIDO2_OFFSET_PRF_INPUT + KEYBAY_FIDO2_PRF_INPUT_BYTES, "layout");
_Static_assert(KEYBAY_FIDO2_OFFSET_RP_LENGTH == KEYBAY_FIDO2_OFFSET_PUBLIC_KEY + KEYBAY_FIDO2_PUBLIC_KEY_BYTES, "layout");
_Static_assert(KEYBAY_FIDO2_FIXED_BYTES == KEYBAY_FIDO2_OFFSET_RP + 2u, "layout");

typedef struct f2_params {
    uint8_t modes;
    uint8_t prf_input[KEYBAY_FIDO2_PRF_INPUT_BYTES];
    uint8_t public_key[KEYBAY_FIDO2_PUBLIC_KEY_BYTES];
    char rp[KEYBAY_FIDO2_MAX_RP_BYTES + 1];
    size_t cred_id_length;
    const uint8_t *cred_id; /* points into the caller's buffer */
} f2_params;

/* Guarded memory for the secrets of one operation. */
typedef struct f2_secret {
    char pin[F2_MAX_PIN + 2];            /* one spare byte detects an overlong answer, one NUL */
    uint8_t output[2][KEYBAY_METHOD_SECRET_BYTES];
} f2_secret;

/* ---------------------------------------------------------------- libfido2, opened on first use */

/* fido.h gives only the types and prototypes. Every libfido2 function the core calls is in
   this list and called as F2(name)(...) through a table filled by dlopen/dlsym, once, by the
   first operation that needs it (describe and free_buffer never do). A library that links
   libfido2 itself (the test build) gets that same copy from dlopen. */
#define F2_LIBRARY "libfido2.so.1"
#define F2_FUNCTIONS(X) \
    X(es256_pk_free) \
    X(es256_pk_from_ptr) \
    X(es256_pk_new) \
    X(fido_assert_allow_cred) \
    X(fido_assert_count) \
    X(fido_assert_flags) \
    X(fido_assert_free) \
    X(fido_assert_hmac_secret_len) \
    X(fido_assert_hmac_secret_ptr) \
    X(fido_assert_new) \
    X(fido_assert_set_clientdata_hash) \
    X(fido_assert_set_extensions) \
    X(fido_assert_set_hmac_salt) \
    X(fido_assert_set_rp) \
    X(fido_assert_set_up) \
    X(fido_assert_set_uv) \
    X(fido_assert_verify) \
    X(fido_cbor_info_extensions_len) \
    X(fido_cbor_info_extensions_ptr) \
    X(fido_cbor_info_free) \
    X(fido_cbor_info_new) \
    X(fido_cred_free) \
    X(fido_cred_id_len) \
    X(fido_cred_id_ptr) \
    X(fido_cred_new) \
    X(fido_cred_pubkey_len) \
    X(fido_cred_pubkey_ptr) \
    X(fido_cred_set_clientdata_hash) \
    X(fido_cred_set_extensions) \
    X(fido_cred_set_rk) \
    X(fido_cred_set_rp) \
    X(fido_cred_set_type) \
    X(fido_cred_set_user) \
    X(fido_cred_type) \
    X(fido_cred_verify) \
    X(fido_cred_verify_self) \
    X(fido_cred_x5c_len) \
    X(fido_dev_cancel) \
    X(fido_dev_close) \
    X(fido_dev_free) \
    X(fido_dev_get_assert) \
    X(fido_dev_get_cbor_info) \
    X(fido_dev_get_retry_count) \
    X(fido_dev_has_pin) \
    X(fido_dev_has_uv) \
    X(fido_dev_info_free) \
    X(fido_dev_info_manifest) \
    X(fido_dev_info_new) \
    X(fido_dev_info_path) \
    X(fido_dev_info_ptr) \
    X(fido_dev_is_fido2) \
    X(fido_dev_make_cred) \
    X(fido_dev_new) \
    X(fido_dev_open) \
    X(fido_init) \
    X(fido_strerr)

static struct {
    F2_FUNCTIONS(KEYBAY_LAZY_POINTER)
} f2_lib; /* filled only when every symbol resolved; used only after f2_init succeeded */
#define F2(name) (f2_lib.name)
static const char *const f2_names[] = { F2_FUNCTIONS(KEYBAY_LAZY_NAME) };
KEYBAY_LAZY_LIBRARY(f2_library, F2_LIBRARY, RTLD_NOW, f2_names, f2_lib);

static pthread_once_t f2_once = PTHREAD_ONCE_INIT;
static int f2_sodium_ok;
static const char *f2_lib_error; /* why libfido2 could not be loaded, NULL when it was */

static void f2_init_once(void) {
    f2_lib_error = keybay_lazy_library_open(&f2_library);
    if (f2_lib_error == NULL) F2(fido_init)(0);
    f2_sodium_ok = sodium_init() >= 0;
}

/* Loads libfido2 and libsodium once; every operation that touches a key calls this first. */
static keybay_status f2_init(const keybay_host *host) {
    pthread_once(&f2_once, f2_init_once);
    if (f2_lib_error != NULL) {
        keybay_host_error_reason(host, "library-missing");
        keybay_host_error(host, "fido2: cannot load " F2_LIBRARY " (%s); FIDO2 security keys need libfido2 (Debian: libfido2-1)",
                 f2_lib_error);
        return KEYBAY_ERR_NOT_AVAILABLE;
    }
    if (!f2_sodium_ok) {
        keybay_host_error(host, "fido2: libsodium could not be initialised");
        return KEYBAY_ERR_INTERNAL;
    }
    return KEYBAY_OK;
}

/* ---------------------------------------------------------------- devices */

static int f2_real_list(char paths[][KEYBAY_FIDO2_PATH_MAX], size_t capacity, size_t *count) {
    *count = 0;
    fido_dev_info_t *list = F2(fido_dev_info_new)(capacity);
    if (list == NULL) return -1;
    size_t found = 0;
    if (F2(fido_dev_info_manifest)(list, capacity, &found) != FIDO_OK) {
        F2(fido_dev_info_free)(&list, capacity);
        return -1;
    }
    for (size_t i = 0; i < found && *count < capacity; i++) {
        const char *path = F2(fido_dev_info_path)(F2(fido_dev_info_ptr)(list, i));
        if (path == NULL || strlen(path) >= KEYBAY_FIDO2_PATH_MAX) continue;
        strcpy(paths[(*count)++], path);
    }
    F2(fido_dev_info_free)(&list, capacity);
    return 0;
}

static fido_dev_t *f2_real_new_device(const char *path) {
    (void)path;
    return F2(fido_dev_new)();
}

static const keybay_fido2_device_opener f2_real_opener = {f2_real_list, f2_real_new_device};
static const keybay_fido2_device_opener *f2_opener = &f2_real_opener;

void keybay_fido2_set_device_opener(const keybay_fido2_device_opener *opener) {
    f2_opener = opener != NULL ? opener : &f2_real_opener;
}

typedef struct f2_device_list {
    char paths[KEYBAY_FIDO2_MAX_DEVICES][KEYBAY_FIDO2_PATH_MAX];
    size_t count;
} f2_device_list;

/* Every use of the device opener starts here, so nothing reaches a device (or libfido2) before
   f2_init succeeded; the opener's fido_dev_t must come from that same libfido2.so.1. */
static keybay_status f2_list(const keybay_host *host, f2_device_list *list) {
    keybay_status status = f2_init(host);
    if (status != KEYBAY_OK) return status;
    if (f2_opener->list(list->paths, KEYBAY_FIDO2_MAX_DEVICES, &list->count) != 0) {
        keybay_host_error(host, "fido2: cannot list FIDO devices");
        return KEYBAY_ERR_NOT_AVAILABLE;
    }
    if (list->count > KEYBAY_FIDO2_MAX_DEVICES) list->count = KEYBAY_FIDO2_MAX_DEVICES;
    return KEYBAY_OK;
}

static void f2_close(fido_dev_t **dev) {
    if (*dev == NULL) return;
    F2(fido_dev_close)(*dev);
    F2(fido_dev_free)(dev);
}

/* Opens `path`; returns NULL (and the libfido2 error in *rc) if it cannot be opened. */
static fido_dev_t *f2_open(const char *path, int *rc) {
    fido_dev_t *dev = f2_opener->new_device(path);
    if (dev == NULL) {
        *rc = FIDO_ERR_INTERNAL;
        return NULL;
    }
    if ((*rc = F2(fido_dev_open)(dev, path)) != FIDO_OK) {
        F2(fido_dev_free)(&dev);
        return NULL;
    }
    return dev;
}

/* Does the (open) device speak CTAP2 and offer hmac-secret? */
static keybay_status f2_check_device(const keybay_host *host, fido_dev_t *dev, const char *path) {
    if (!F2(fido_dev_is_fido2)(dev)) {
        keybay_host_error_reason(host, "u2f-only");
        keybay_host_error(host, "fido2: %s is a U2F-only key; hmac-secret needs a FIDO2 key", path);
        return KEYBAY_ERR_UNSUPPORTED;
    }
    fido_cbor_info_t *info = F2(fido_cbor_info_new)();
    if (info == NULL) return KEYBAY_ERR_INTERNAL;
    int rc = F2(fido_dev_get_cbor_info)(dev, info);
    int hmac = 0;
    if (rc == FIDO_OK) {
        char **ext = F2(fido_cbor_info_extensions_ptr)(info);
        for (size_t i = 0; i < F2(fido_cbor_info_extensions_len)(info); i++)
            if (strcmp(ext[i], "hmac-secret") == 0) hmac = 1;
    }
    F2(fido_cbor_info_free)(&info);
    if (rc != FIDO_OK) {
        keybay_host_error(host, "fido2: %s did not describe itself (%s)", path, F2(fido_strerr)(rc));
        return KEYBAY_ERR_NOT_AVAILABLE;
    }
    if (!hmac) {
        keybay_host_error_reason(host, "no-hmac-secret");
        keybay_host_error(host, "fido2: the key at %s does not offer the hmac-secret extension", path);
        return KEYBAY_ERR_UNSUPPORTED;
    }
    return KEYBAY_OK;
}

/* ---------------------------------------------------------------- ceremonies */

/* One libfido2 call that may wait for the user, run on a worker thread so that the calling
   thread can poll host->is_cancelled and send a CTAPHID_CANCEL. */
typedef struct f2_job {
    fido_dev_t *dev;
    fido_cred_t *cred;     /* make a credential, or */
    fido_assert_t *assert; /* get an assertion */
    const char *pin;
    int rc;
    int done;
    pthread_mutex_t lock;
    pthread_cond_t cond;
} f2_job;

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
static int f2_run(const keybay_host *host, f2_job *job) {
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

/* Maps a libfido2 failure of `what` to a status, with one line for the user (after a wrong PIN,
   with the retries the key has left). */
static keybay_status f2_failure(const keybay_host *host, fido_dev_t *dev, int rc, const char *what, const char *path) {
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
    case FIDO_ERR_PIN_AUTH_BLOCKED:
        keybay_host_error_reason(host, "pin-auth-blocked");
        keybay_host_error(host, "fido2: too many wrong PINs in a row; remove and re-insert the key at %s, then try again", path);
        return KEYBAY_ERR_LOCKED;
    case FIDO_ERR_UV_BLOCKED:
        keybay_host_error_reason(host, "uv-blocked");
        keybay_host_error(host, "fido2: built-in user verification of the key at %s is blocked; use its PIN to unblock it", path);
        return KEYBAY_ERR_LOCKED;
    case FIDO_ERR_UV_INVALID:
        keybay_host_error_reason(host, "uv-failed");
        keybay_host_error(host, "fido2: the key at %s did not verify the user", path);
        return KEYBAY_ERR_WRONG_SECRET;
    case FIDO_ERR_PIN_REQUIRED:
        keybay_host_error_reason(host, "pin-required");
        keybay_host_error(host, "fido2: the key at %s requires its PIN to %s", path, what);
        return KEYBAY_ERR_PIN_REQUIRED;
    case FIDO_ERR_PIN_NOT_SET:
        keybay_host_error_reason(host, "no-pin-set");
        keybay_host_error(host, "fido2: the key at %s has no PIN set", path);
        return KEYBAY_ERR_UNSUPPORTED;
    case FIDO_ERR_OPERATION_DENIED:
        keybay_host_error_reason(host, "touch-refused");
        keybay_host_error(host, "fido2: the touch was refused on the key at %s", path);
        return KEYBAY_ERR_CANCELLED;
    case FIDO_ERR_KEEPALIVE_CANCEL:
        keybay_host_error_reason(host, "cancelled");
        keybay_host_error(host, "fido2: cancelled while waiting for the key at %s", path);
        return KEYBAY_ERR_CANCELLED;
    case FIDO_ERR_USER_ACTION_TIMEOUT:
    case FIDO_ERR_ACTION_TIMEOUT:
    case FIDO_ERR_TIMEOUT:
        keybay_host_error_reason(host, "touch-timeout");
        keybay_host_error(host, "fido2: nobody touched the key at %s in time", path);
        return KEYBAY_ERR_TIMED_OUT;
    case FIDO_ERR_NO_CREDENTIALS:
    case FIDO_ERR_INVALID_CREDENTIAL:
        keybay_host_error_reason(host, "credential-not-held");
        keybay_host_error(host, "fido2: the key at %s does not hold this method's credential (is it the key that was enrolled?)", path);
        return KEYBAY_ERR_NOT_AVAILABLE;
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
static keybay_status f2_ask_pin(const keybay_host *host, fido_dev_t *dev, const char *path, f2_secret *secret) {
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

static const char *f2_mode_text(uint8_t modes) {
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
static keybay_status f2_assert(const keybay_host *host, fido_dev_t *dev, const char *path,
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
static int f2_holds(fido_dev_t *dev, const f2_params *p) {
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

/* ---------------------------------------------------------------- parameters */

static int f2_valid_rp(const char *rp, size_t length) {
    if (length < 1 || length > KEYBAY_FIDO2_MAX_RP_BYTES) return 0;
    for (size_t i = 0; i < length; i++) {
        char c = rp[i];
        int alnum = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
        if (!alnum && (i == 0 || (c != '.' && c != '-'))) return 0;
    }
    return 1;
}

/* The relying party a credential gets when no rp= option is given: the application's own, so
 * two applications' credentials are for different parties (except ids that differ only in case
 * or in '_' against '-', which map to one rp id; the credential itself is still per store). The
 * application id
 * ([A-Za-z0-9][A-Za-z0-9._-]{0,119}) lowercased, '_' as '-', then ".keybay.local"; a host that
 * names no application (an older host, plugin-check) gets "keybay.local" itself. */
static void f2_default_rp(const keybay_host *host, char out[KEYBAY_FIDO2_MAX_RP_BYTES + 1]) {
    const char *app = KEYBAY_HOST_HAS(host, application_id) ? host->application_id : NULL;
    size_t n = app != NULL ? strlen(app) : 0;
    if (n == 0 || n > 120) {
        strcpy(out, KEYBAY_FIDO2_DEFAULT_RP);
        return;
    }
    for (size_t i = 0; i < n; i++) {
        char c = app[i];
        out[i] = c >= 'A' && c <= 'Z' ? (char)(c - 'A' + 'a') : c == '_' ? '-' : c;
    }
    out[n] = '.';
    strcpy(out + n + 1, KEYBAY_FIDO2_DEFAULT_RP);
    if (!f2_valid_rp(out, strlen(out))) strcpy(out, KEYBAY_FIDO2_DEFAULT_RP); /* not an application id */
}

static uint16_t f2_get_u16(const uint8_t *p) { return (uint16_t)((p[0] << 8) | p[1]); }

/* Strict decoding; allocates nothing, asks nothing. `host` may be NULL (describe). */
static keybay_status f2_decode(const keybay_host *host, const uint8_t *params, size_t length, f2_params *out) {
    if (params == NULL) length = 0;
    if (length < KEYBAY_FIDO2_FIXED_BYTES + 1 + KEYBAY_FIDO2_MIN_CREDENTIAL_ID_BYTES) {
        keybay_host_error(host, "fido2 params: length is %zu bytes, at least %u expected", length,
                 KEYBAY_FIDO2_FIXED_BYTES + 1 + KEYBAY_FIDO2_MIN_CREDENTIAL_ID_BYTES);
        return KEYBAY_ERR_MALFORMED_PARAMS;
    }
    if (params[KEYBAY_FIDO2_OFFSET_FORMAT] != KEYBAY_FIDO2_FORMAT) {
        keybay_host_error(host, "fido2 params: format %u is not supported (expected %u)", params[0], KEYBAY_FIDO2_FORMAT);
        return KEYBAY_ERR_MALFORMED_PARAMS;
    }
    uint8_t modes = params[KEYBAY_FIDO2_OFFSET_MODES];
    if ((modes & ~KEYBAY_FIDO2_MODE_MASK) != 0) {
        keybay_host_error(host, "fido2 params: modes 0x%02x has unknown bits", modes);
        return KEYBAY_ERR_MALFORMED_PARAMS;
    }
    size_t rp_length = params[KEYBAY_FIDO2_OFFSET_RP_LENGTH];
    if (rp_length < 1 || rp_length > KEYBAY_FIDO2_MAX_RP_BYTES ||
        length < KEYBAY_FIDO2_FIXED_BYTES + rp_length) {
        keybay_host_error(host, "fido2 params: rp_length %zu is out of range (1 to %u, within %zu bytes)", rp_length,
                 KEYBAY_FIDO2_MAX_RP_BYTES, length);
        return KEYBAY_ERR_MALFORMED_PARAMS;
    }
    const char *rp = (const char *)params + KEYBAY_FIDO2_OFFSET_RP;
    if (!f2_valid_rp(rp, rp_length)) {
        keybay_host_error(host, "fido2 params: rp_id is not [a-z0-9][a-z0-9.-]*");
        return KEYBAY_ERR_MALFORMED_PARAMS;
    }
    size_t cred_length = f2_get_u16(params + KEYBAY_FIDO2_OFFSET_RP + rp_length);
    if (cred_length < KEYBAY_FIDO2_MIN_CREDENTIAL_ID_BYTES || cred_length > KEYBAY_FIDO2_MAX_CREDENTIAL_ID_BYTES) {
        keybay_host_error(host, "fido2 params: cred_id_length %zu is out of range (%u to %u)", cred_length,
                 KEYBAY_FIDO2_MIN_CREDENTIAL_ID_BYTES, KEYBAY_FIDO2_MAX_CREDENTIAL_ID_BYTES);
        return KEYBAY_ERR_MALFORMED_PARAMS;
    }
    if (length != KEYBAY_FIDO2_FIXED_BYTES + rp_length + cred_length) {
        keybay_host_error(host, "fido2 params: length is %zu bytes, the fields add up to %zu", length,
                 (size_t)KEYBAY_FIDO2_FIXED_BYTES + rp_length + cred_length);
        return KEYBAY_ERR_MALFORMED_PARAMS;
    }
    out->modes = modes;
    memcpy(out->prf_input, params + KEYBAY_FIDO2_OFFSET_PRF_INPUT, KEYBAY_FIDO2_PRF_INPUT_BYTES);
    memcpy(out->public_key, params + KEYBAY_FIDO2_OFFSET_PUBLIC_KEY, KEYBAY_FIDO2_PUBLIC_KEY_BYTES);
    memcpy(out->rp, rp, rp_length);
    out->rp[rp_length] = '\0';
    out->cred_id_length = cred_length;
    out->cred_id = params + KEYBAY_FIDO2_FIXED_BYTES + rp_length;
    return KEYBAY_OK;
}

static uint8_t *f2_encode(const f2_params *p, size_t *length_out) {
    size_t rp_length = strlen(p->rp);
    size_t length = KEYBAY_FIDO2_FIXED_BYTES + rp_length + p->cred_id_length;
    uint8_t *out = malloc(length);
    if (out == NULL) return NULL;
    out[KEYBAY_FIDO2_OFFSET_FORMAT] = KEYBAY_FIDO2_FORMAT;
    out[KEYBAY_FIDO2_OFFSET_MODES] = p->modes;
    memcpy(out + KEYBAY_FIDO2_OFFSET_PRF_INPUT, p->prf_input, KEYBAY_FIDO2_PRF_INPUT_BYTES);
    memcpy(out + KEYBAY_FIDO2_OFFSET_PUBLIC_KEY, p->public_key, KEYBAY_FIDO2_PUBLIC_KEY_BYTES);
    out[KEYBAY_FIDO2_OFFSET_RP_LENGTH] = (uint8_t)rp_length;
    memcpy(out + KEYBAY_FIDO2_OFFSET_RP, p->rp, rp_length);
    out[KEYBAY_FIDO2_OFFSET_RP + rp_length] = (uint8_t)(p->cred_id_length >> 8);
    out[KEYBAY_FIDO2_OFFSET_RP + rp_length + 1] = (uint8_t)p->cred_id_length;
    memcpy(out + KEYBAY_FIDO2_FIXED_BYTES + rp_length, p->cred_id, p->cred_id_length);
    *length_out = length;
    return out;
}

/* ---------------------------------------------------------------- options */

typedef struct f2_options {
    const char *device; /* NULL: auto */
    char rp[KEYBAY_FIDO2_MAX_RP_BYTES + 1];
    int pin;      /* -1 default, 0 no, 1 required */
    int presence; /* likewise */
    int uv;
} f2_options;

static int f2_parse_mode(const char *value) {
    if (value == NULL) return -2;
    if (strcmp(value, "required") == 0) return 1;
    if (strcmp(value, "no") == 0) return 0;
    return -2;
}

static keybay_status f2_parse_options(const keybay_host *host, const keybay_option *options, size_t count,
                                      f2_options *o) {
    memset(o, 0, sizeof *o);
    o->pin = o->presence = o->uv = -1;
    f2_default_rp(host, o->rp);
    int seen_rp = 0, seen_device = 0;
    if (count > 0 && options == NULL) {
        keybay_host_error(host, "fido2: %zu options announced but none passed", count);
        return KEYBAY_ERR_INVALID_OPTION;
    }
    for (size_t i = 0; i < count; i++) {
        const char *name = options[i].name, *value = options[i].value;
        if (name == NULL || value == NULL) {
            keybay_host_error(host, "fido2: option %zu has no name or value", i + 1);
            return KEYBAY_ERR_INVALID_OPTION;
        }
        int *mode = NULL;
        if (strcmp(name, "pin") == 0) mode = &o->pin;
        else if (strcmp(name, "presence") == 0) mode = &o->presence;
        else if (strcmp(name, "uv") == 0) mode = &o->uv;
        if (mode != NULL) {
            if (*mode != -1) goto twice;
            *mode = f2_parse_mode(value);
            if (*mode < 0) {
                keybay_host_error(host, "fido2: option %s must be 'required' or 'no', not '%.32s'", name, value);
                return KEYBAY_ERR_INVALID_OPTION;
            }
        } else if (strcmp(name, "rp") == 0) {
            if (seen_rp++) goto twice;
            size_t l = strlen(value);
            if (!f2_valid_rp(value, l)) {
                keybay_host_error(host, "fido2: option rp must be 1 to %u characters of [a-z0-9.-] starting with a letter or digit",
                         KEYBAY_FIDO2_MAX_RP_BYTES);
                return KEYBAY_ERR_INVALID_OPTION;
            }
            memcpy(o->rp, value, l + 1);
        } else if (strcmp(name, "device") == 0) {
            if (seen_device++) goto twice;
            if (*value == '\0' || strlen(value) >= KEYBAY_FIDO2_PATH_MAX) {
                keybay_host_error(host, "fido2: option device must be a device path or 'auto'");
                return KEYBAY_ERR_INVALID_OPTION;
            }
            o->device = strcmp(value, "auto") == 0 ? NULL : value;
        } else {
            keybay_host_error(host, "fido2: unknown option '%.64s' (accepted: device, rp, pin, presence, uv)", name);
            return KEYBAY_ERR_INVALID_OPTION;
        }
        continue;
    twice:
        keybay_host_error(host, "fido2: option '%s' is given more than once", name);
        return KEYBAY_ERR_INVALID_OPTION;
    }
    return KEYBAY_OK;
}

/* ---------------------------------------------------------------- operations */

void keybay_fido2_free_buffer(keybay_buffer *buffer) { keybay_method_free_buffer(buffer); }

keybay_status keybay_fido2_probe(const keybay_host *host) {
    keybay_status status = f2_init(host);
    if (status != KEYBAY_OK) return status;
    f2_device_list list;
    status = f2_list(host, &list);
    if (status != KEYBAY_OK) return status;
    for (size_t i = 0; i < list.count; i++) {
        int rc;
        fido_dev_t *dev = f2_open(list.paths[i], &rc);
        if (dev == NULL) continue;
        int fido2 = F2(fido_dev_is_fido2)(dev);
        f2_close(&dev);
        if (fido2) return KEYBAY_OK;
    }
    keybay_host_error_reason(host, "no-device");
    keybay_host_error(host, list.count == 0 ? "no FIDO2 security key is plugged in"
                                   : "no FIDO2 security key is plugged in (only U2F-only or unusable devices)");
    return KEYBAY_ERR_NOT_AVAILABLE;
}

/* Picks the enrollment device: the one named, or the only one present. */
static keybay_status f2_pick_enroll_device(const keybay_host *host, const f2_options *o, char path[KEYBAY_FIDO2_PATH_MAX]) {
    f2_device_list list;
    keybay_status status = f2_list(host, &list);
    if (status != KEYBAY_OK) return status;
    if (o->device != NULL) {
        for (size_t i = 0; i < list.count; i++)
            if (strcmp(list.paths[i], o->device) == 0) {
                strcpy(path, o->device);
                return KEYBAY_OK;
            }
        keybay_host_error_reason(host, "no-such-device");
        keybay_host_error(host, "fido2: no FIDO device at %.200s (%zu present)", o->device, list.count);
        return KEYBAY_ERR_NOT_AVAILABLE;
    }
    if (list.count == 0) {
        keybay_host_error_reason(host, "no-device");
        keybay_host_error(host, "fido2: no FIDO2 security key is plugged in; insert one and try again");
        return KEYBAY_ERR_NOT_AVAILABLE;
    }
    if (list.count > 1) {
        char names[256] = "";
        size_t used = 0;
        for (size_t i = 0; i < list.count && used < sizeof names; i++) {
            int n = snprintf(names + used, sizeof names - used, "%s%s", i ? ", " : "", list.paths[i]);
            if (n < 0) break;
            used += (size_t)n;
        }
        keybay_host_error_reason(host, "several-devices");
        keybay_host_error(host, "fido2: %zu security keys are plugged in (%s); choose one with --opt device=PATH", list.count, names);
        return KEYBAY_ERR_INVALID_OPTION;
    }
    strcpy(path, list.paths[0]);
    return KEYBAY_OK;
}

static keybay_status f2_make_credential(const keybay_host *host, fido_dev_t *dev, const char *path, const char *rp,
                                        const char *pin, fido_cred_t *cred) {
    uint8_t cdh[F2_CDH_BYTES], user_id[16];
    randombytes_buf(cdh, sizeof cdh);
    randombytes_buf(user_id, sizeof user_id);
    if (F2(fido_cred_set_type)(cred, COSE_ES256) != FIDO_OK ||
        F2(fido_cred_set_clientdata_hash)(cred, cdh, sizeof cdh) != FIDO_OK ||
        F2(fido_cred_set_rp)(cred, rp, "Keybay") != FIDO_OK ||
        F2(fido_cred_set_user)(cred, user_id, sizeof user_id, "keybay", "Keybay store", NULL) != FIDO_OK ||
        F2(fido_cred_set_extensions)(cred, FIDO_EXT_HMAC_SECRET) != FIDO_OK ||
        F2(fido_cred_set_rk)(cred, FIDO_OPT_OMIT) != FIDO_OK) {
        keybay_host_error(host, "fido2: could not prepare the credential");
        return KEYBAY_ERR_INTERNAL;
    }
    keybay_status status = keybay_host_message(host, KEYBAY_MESSAGE_INFO, "Touch your security key to create the Keybay credential");
    if (status != KEYBAY_OK) return status;
    f2_job job = {.dev = dev, .cred = cred, .pin = pin};
    int rc = f2_run(host, &job);
    if (rc != FIDO_OK) return f2_failure(host, dev, rc, "create a credential", path);
    rc = F2(fido_cred_x5c_len)(cred) > 0 ? F2(fido_cred_verify)(cred) : F2(fido_cred_verify_self)(cred);
    if (rc != FIDO_OK) {
        keybay_host_error(host, "fido2: the new credential's attestation does not verify (%s)", F2(fido_strerr)(rc));
        return KEYBAY_ERR_INTERNAL;
    }
    if (F2(fido_cred_type)(cred) != COSE_ES256 || F2(fido_cred_pubkey_len)(cred) != KEYBAY_FIDO2_PUBLIC_KEY_BYTES ||
        F2(fido_cred_id_len)(cred) < KEYBAY_FIDO2_MIN_CREDENTIAL_ID_BYTES ||
        F2(fido_cred_id_len)(cred) > KEYBAY_FIDO2_MAX_CREDENTIAL_ID_BYTES) {
        keybay_host_error(host, "fido2: the key at %s made a credential this plugin cannot store (type %d, id %zu bytes)", path,
                 F2(fido_cred_type)(cred), F2(fido_cred_id_len)(cred));
        return KEYBAY_ERR_UNSUPPORTED;
    }
    return KEYBAY_OK;
}

keybay_status keybay_fido2_enroll(const keybay_host *host, const keybay_option *options, size_t option_count,
                                  keybay_buffer *params_out, uint8_t secret_out[KEYBAY_METHOD_SECRET_BYTES]) {
    keybay_status status = keybay_method_enroll_begin(host, "fido2", params_out, secret_out);
    if (status != KEYBAY_OK) return status;
    f2_options o;
    status = f2_parse_options(host, options, option_count, &o);
    if (status != KEYBAY_OK) return status;
    if ((status = f2_init(host)) != KEYBAY_OK) return status;
    char path[KEYBAY_FIDO2_PATH_MAX];
    if ((status = f2_pick_enroll_device(host, &o, path)) != KEYBAY_OK) return status;

    f2_secret *secret = NULL;
    fido_cred_t *cred = NULL;
    int rc;
    fido_dev_t *dev = f2_open(path, &rc);
    if (dev == NULL) {
        keybay_host_error(host, "fido2: cannot open the key at %s (%s)", path, F2(fido_strerr)(rc));
        return KEYBAY_ERR_NOT_AVAILABLE;
    }
    if ((status = f2_check_device(host, dev, path)) != KEYBAY_OK) goto done;

    int has_pin = F2(fido_dev_has_pin)(dev);
    int pin = o.pin >= 0 ? o.pin : has_pin;
    int presence = o.presence >= 0 ? o.presence : 1;
    int uv = o.uv >= 0 ? o.uv : 0;
    if (pin && !has_pin) {
        keybay_host_error_reason(host, "no-pin-set");
        keybay_host_error(host, "fido2: the key at %s has no PIN set; set one first (e.g. fido2-token -S %s) or enroll with --opt pin=no",
                 path, path);
        status = KEYBAY_ERR_UNSUPPORTED;
        goto done;
    }
    if (uv && !pin && !F2(fido_dev_has_uv)(dev)) {
        keybay_host_error_reason(host, "no-builtin-uv");
        keybay_host_error(host, "fido2: the key at %s has no built-in user verification; use --opt pin=required for uv=required",
                 path);
        status = KEYBAY_ERR_UNSUPPORTED;
        goto done;
    }
    f2_params p;
    memset(&p, 0, sizeof p);
    p.modes = (uint8_t)((pin ? KEYBAY_FIDO2_MODE_PIN : 0) | (presence ? KEYBAY_FIDO2_MODE_PRESENCE : 0) |
                        (uv ? KEYBAY_FIDO2_MODE_UV : 0));
    strcpy(p.rp, o.rp);

    if ((secret = keybay_method_secret_new(host, "fido2", sizeof(f2_secret))) == NULL) {
        status = KEYBAY_ERR_INTERNAL;
        goto done;
    }
    /* A key with a PIN set wants it for makeCredential, whatever the unlock mode. */
    int need_pin = pin || has_pin;
    if (need_pin && (status = f2_ask_pin(host, dev, path, secret)) != KEYBAY_OK) goto done;

    if ((cred = F2(fido_cred_new)()) == NULL) {
        status = KEYBAY_ERR_INTERNAL;
        goto done;
    }
    status = f2_make_credential(host, dev, path, p.rp, need_pin ? secret->pin : NULL, cred);
    if (status != KEYBAY_OK) goto done;
    memcpy(p.public_key, F2(fido_cred_pubkey_ptr)(cred), KEYBAY_FIDO2_PUBLIC_KEY_BYTES);
    p.cred_id = F2(fido_cred_id_ptr)(cred);
    p.cred_id_length = F2(fido_cred_id_len)(cred);
    randombytes_buf(p.prf_input, sizeof p.prf_input);

    /* Two assertions in the recorded mode must give the same secret. */
    status = f2_assert(host, dev, path, &p, secret->pin, "check the credential",
                       "Touch your security key again (1 of 2) to check the credential", secret->output[0]);
    if (status != KEYBAY_OK) goto done;
    status = f2_assert(host, dev, path, &p, secret->pin, "check the credential", "Touch your security key once more (2 of 2)",
                       secret->output[1]);
    if (status != KEYBAY_OK) goto done;
    if (sodium_memcmp(secret->output[0], secret->output[1], KEYBAY_METHOD_SECRET_BYTES) != 0) {
        keybay_host_error(host, "fido2: the key at %s gave two different hmac-secret outputs for the same input; it cannot be used",
                 path);
        status = KEYBAY_ERR_UNSUPPORTED;
        goto done;
    }
    size_t length = 0;
    uint8_t *encoded = f2_encode(&p, &length);
    if (encoded == NULL) {
        keybay_host_error(host, "fido2: out of memory");
        status = KEYBAY_ERR_INTERNAL;
        goto done;
    }
    memcpy(secret_out, secret->output[0], KEYBAY_METHOD_SECRET_BYTES);
    params_out->data = encoded;
    params_out->length = length;
    keybay_host_log(host, KEYBAY_LOG_DEBUG, "fido2: enrolled on %s, rp %s, %s, credential id %zu bytes", path, p.rp, f2_mode_text(p.modes),
           p.cred_id_length);
    status = KEYBAY_OK;
done:
    F2(fido_cred_free)(&cred);
    keybay_method_secret_free(secret, sizeof *secret);
    f2_close(&dev);
    return status;
}

/* Finds the key that holds the credential among those present. */
static keybay_status f2_find_device(const keybay_host *host, const f2_params *p, fido_dev_t **dev_out,
                                    char path[KEYBAY_FIDO2_PATH_MAX]) {
    f2_device_list list;
    keybay_status status = f2_list(host, &list);
    if (status != KEYBAY_OK) return status;
    if (list.count == 0) {
        keybay_host_error_reason(host, "no-device");
        keybay_host_error(host, "fido2: no FIDO2 security key is plugged in; insert the key this method was enrolled with");
        return KEYBAY_ERR_NOT_AVAILABLE;
    }
    fido_dev_t *maybe = NULL;
    size_t maybe_index = 0, opened = 0;
    for (size_t i = 0; i < list.count; i++) {
        int rc;
        fido_dev_t *dev = f2_open(list.paths[i], &rc);
        if (dev == NULL) continue;
        opened++;
        int holds = F2(fido_dev_is_fido2)(dev) ? f2_holds(dev, p) : 0;
        if (holds == 1) {
            f2_close(&maybe);
            *dev_out = dev;
            strcpy(path, list.paths[i]);
            return KEYBAY_OK;
        }
        if (holds < 0 && maybe == NULL) {
            maybe = dev; /* could not tell: try it if nothing better turns up */
            maybe_index = i;
            continue;
        }
        f2_close(&dev);
    }
    if (maybe != NULL) {
        *dev_out = maybe;
        strcpy(path, list.paths[maybe_index]);
        return KEYBAY_OK;
    }
    if (opened == 0) {
        keybay_host_error_reason(host, "device-unopenable");
        keybay_host_error(host, "fido2: none of the %zu FIDO devices present could be opened", list.count);
        return KEYBAY_ERR_NOT_AVAILABLE;
    }
    keybay_host_error_reason(host, "credential-not-held");
    if (list.count == 1)
        keybay_host_error(host, "fido2: the key at %s does not hold this method's credential (is it the key that was enrolled?)",
                 list.paths[0]);
    else
        keybay_host_error(host, "fido2: none of the %zu keys present holds this method's credential; insert the enrolled key",
                 list.count);
    return KEYBAY_ERR_NOT_AVAILABLE;
}

keybay_status keybay_fido2_unwrap(const keybay_host *host, const uint8_t *params, size_t params_length,
                                  uint8_t secret_out[KEYBAY_METHOD_SECRET_BYTES]) {
    keybay_status status = keybay_method_unwrap_begin(host, "fido2", secret_out);
    if (status != KEYBAY_OK) return status;
    f2_params p;
    status = f2_decode(host, params, params_length, &p);
    if (status != KEYBAY_OK) return status;
    if ((status = f2_init(host)) != KEYBAY_OK) return status;
    if (keybay_host_cancelled(host)) {
        keybay_host_error(host, "fido2: unlock cancelled");
        return KEYBAY_ERR_CANCELLED;
    }
    fido_dev_t *dev = NULL;
    char path[KEYBAY_FIDO2_PATH_MAX];
    if ((status = f2_find_device(host, &p, &dev, path)) != KEYBAY_OK) return status;
    f2_secret *secret = NULL;
    if ((status = f2_check_device(host, dev, path)) != KEYBAY_OK) goto done;
    int pin = (p.modes & KEYBAY_FIDO2_MODE_PIN) != 0, uv = (p.modes & KEYBAY_FIDO2_MODE_UV) != 0;
    if (pin && !F2(fido_dev_has_pin)(dev)) {
        keybay_host_error_reason(host, "no-pin-set");
        keybay_host_error(host, "fido2: this method was enrolled with the key's PIN, but the key at %s has no PIN set", path);
        status = KEYBAY_ERR_UNSUPPORTED;
        goto done;
    }
    if (uv && !pin && !F2(fido_dev_has_uv)(dev)) {
        keybay_host_error_reason(host, "no-builtin-uv");
        keybay_host_error(host, "fido2: this method was enrolled with built-in user verification, which the key at %s does not "
                       "offer now", path);
        status = KEYBAY_ERR_UNSUPPORTED;
        goto done;
    }
    if ((secret = keybay_method_secret_new(host, "fido2", sizeof(f2_secret))) == NULL) {
        status = KEYBAY_ERR_INTERNAL;
        goto done;
    }
    if (pin && (status = f2_ask_pin(host, dev, path, secret)) != KEYBAY_OK) goto done;
    status = f2_assert(host, dev, path, &p, secret->pin, "unlock", "Touch your security key to unlock", secret->output[0]);
    if (status == KEYBAY_OK) memcpy(secret_out, secret->output[0], KEYBAY_METHOD_SECRET_BYTES);
done:
    keybay_method_secret_free(secret, sizeof *secret);
    f2_close(&dev);
    return status;
}

keybay_status keybay_fido2_describe(const keybay_host *host, const uint8_t *params, size_t params_length,
                                    keybay_buffer *text_out) {
    keybay_status status = keybay_method_describe_begin(text_out);
    if (status != KEYBAY_OK) return status;
    f2_params p;
    status = f2_decode(host, params, params_length, &p);
    if (status != KEYBAY_OK) return status;
    char line[400];
    int n = snprintf(line, sizeof line, "FIDO2 hmac-secret, rp %s, %s, credential %02x%02x%02x%02x…", p.rp,
                     f2_mode_text(p.modes), p.cred_id[0], p.cred_id[1], p.cred_id[2], p.cred_id[3]);
    if (n < 0 || (size_t)n >= sizeof line) return KEYBAY_ERR_INTERNAL;
    return keybay_method_text(line, (size_t)n, text_out);
}

const keybay_option_spec keybay_fido2_option_specs[KEYBAY_FIDO2_OPTION_COUNT] = {
    {"device", "the key's device path, or auto (the default: the only FIDO2 key plugged in)"},
    {"rp", "relying-party id of the credential, [a-z0-9.-] (default <app>.keybay.local)"},
    {"pin", "required|no: ask for the key's PIN at every unlock (default: required if the key has a PIN)"},
    {"presence", "required|no: the key must be touched at every unlock (default required)"},
    {"uv", "required|no: user verification at every unlock, by the PIN or the key's built-in sensor (default no)"},
};
