// SPDX-License-Identifier: Apache-2.0
/*
 * What the files of the fido2 core share: the parameters, the operation's guarded secrets, the
 * enroll options, libfido2's table (opened on first use) and the functions one file calls in
 * another. Not installed; hidden in the plugin (it exports its entry point only).
 */
#ifndef KEYBAY_FIDO2_INTERNAL_H
#define KEYBAY_FIDO2_INTERNAL_H

#include <stddef.h>
#include <pthread.h>
#include <stdint.h>

#include <fido.h>
#include <fido/es256.h>

#include "keybay_fido2_core.h"
#include "keybay_lazy_library.h"

#define F2_MAX_PIN 63u
#define F2_CDH_BYTES 32u
#define F2_POLL_MS 50

#pragma GCC visibility push(hidden)

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

typedef struct f2_device_list {
    char paths[KEYBAY_FIDO2_MAX_DEVICES][KEYBAY_FIDO2_PATH_MAX];
    size_t count;
} f2_device_list;

typedef struct f2_options {
    const char *device; /* NULL: auto */
    char rp[KEYBAY_FIDO2_MAX_RP_BYTES + 1];
    int pin;      /* -1 default, 0 no, 1 required */
    int presence; /* likewise */
    int uv;
} f2_options;

/* fido.h gives only the types and prototypes. Every libfido2 function the core calls is in
   this list and called as F2(name)(...) through a table filled by dlopen/dlsym, once, by the
   first operation that needs it (describe and free_buffer never do). A library that links
   libfido2 itself (the test build) gets that same copy from dlopen. */
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

extern struct f2_lib {
    F2_FUNCTIONS(KEYBAY_LAZY_POINTER)
} f2_lib;
#define F2(name) (f2_lib.name)

/* libfido2 and the devices (fido2_devices.c) */
keybay_status f2_init(const keybay_host *host);
keybay_status f2_list(const keybay_host *host, f2_device_list *list);
void f2_close(fido_dev_t **dev);
fido_dev_t *f2_open(const char *path, int *rc);
keybay_status f2_check_device(const keybay_host *host, fido_dev_t *dev, const char *path);

/* the ceremonies: a touch awaited on a worker thread, the PIN, assertions (fido2_ceremony.c) */
int f2_run(const keybay_host *host, f2_job *job);
keybay_status f2_failure(const keybay_host *host, fido_dev_t *dev, int rc, const char *what, const char *path);
keybay_status f2_ask_pin(const keybay_host *host, fido_dev_t *dev, const char *path, f2_secret *secret);
const char *f2_mode_text(uint8_t modes);
keybay_status f2_assert(const keybay_host *host, fido_dev_t *dev, const char *path, const f2_params *p, const char *pin, const char *what, const char *touch_prompt, uint8_t out[KEYBAY_METHOD_SECRET_BYTES]);
int f2_holds(fido_dev_t *dev, const f2_params *p);

/* the public parameters and the enroll options (fido2_params.c) */
keybay_status f2_decode(const keybay_host *host, const uint8_t *params, size_t length, f2_params *out);
uint8_t *f2_encode(const f2_params *p, size_t *length_out);
keybay_status f2_parse_options(const keybay_host *host, const keybay_option *options, size_t count, f2_options *o);

#pragma GCC visibility pop

#endif /* KEYBAY_FIDO2_INTERNAL_H */
