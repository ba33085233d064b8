// SPDX-License-Identifier: Apache-2.0
/*
 * The `fido2` method (Keybay plugin ABI v1): M is the 32-byte output of the CTAP2 hmac-secret
 * extension of a non-resident credential on a FIDO2 security key, via libfido2. docs/fido2.md
 * specifies the public parameters, the modes (pin, presence, uv), the options, the enrollment
 * and unlock ceremonies and what each error means.
 *
 * Non-obvious choices:
 * - libfido2 is not linked: it is opened on first use (fido2_devices.c), so loading the plugin stays cheap
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

#include <sodium.h>

#include "fido2_internal.h"
#include "keybay_plugin_host.h"

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
