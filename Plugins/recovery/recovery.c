// SPDX-License-Identifier: Apache-2.0
/*
 * libkeybay-recovery.so — the first-party `recovery` method plugin (Keybay plugin ABI v1).
 *
 * Enrollment makes a 256-bit random key K and shows it to the user once (host->show_secret),
 * written to be typed back: K and a 3-byte checksum in Crockford base32, 56 characters in 7
 * groups of 8. M = keyed BLAKE2b of K; the 17-byte public parameters hold a format byte and a
 * 16-byte check value, which is all unwrap needs to tell "a typo" (the checksum fails) from "a
 * valid key, but not this store's" (the check value differs). No KDF: K has 256 bits. The
 * derivations and the text format are specified byte for byte in docs/recovery.md.
 *
 * On enrollment the key is also drawn as a QR code (Unicode half blocks) for a phone to
 * photograph. libqrencode is opened with dlopen on the first enrollment, never linked; without
 * it the picture is simply left out. The key's text and picture are Plugins/Support/recovery-key's
 * (the tpm2 root's recovery shows its secret the same way). Every buffer that holds K, its text or its picture is
 * guarded memory (sodium_malloc), wiped before it is freed.
 */
#define _POSIX_C_SOURCE 200809L

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "keybay_plugin.h"
#include "keybay_plugin_descriptor.h"
#include "keybay_plugin_host.h"
#include "keybay_recovery_key.h"

#define RK_FORMAT 1u
#define RK_KEY_BYTES KEYBAY_RK_KEY_BYTES
#define RK_CHECK_BYTES 16u
#define RK_PARAMS_BYTES (1u + RK_CHECK_BYTES)
#define RK_RAW_BYTES KEYBAY_RK_RAW_BYTES
#define RK_SYMBOLS KEYBAY_RK_SYMBOLS
#define RK_TEXT_BYTES KEYBAY_RK_TEXT_BYTES
#define RK_INPUT_BYTES KEYBAY_RK_INPUT_BYTES

/* Keyed BLAKE2b-256 messages (the key is K): one label per derived value (the checksum's is
   keybay_recovery_key.h's). */
static const char rk_label_check[] = "keybay recovery v1 check";
static const char rk_label_secret[] = "keybay recovery v1 method secret";

/* Everything secret, in guarded memory (byte arrays only: sodium_malloc's placement against the
   guard page is unaligned). */
typedef struct rk_secret {
    uint8_t raw[RK_RAW_BYTES];                  /* K | checksum */
    uint8_t hash[crypto_generichash_BYTES];     /* one BLAKE2b-256 output at a time */
    uint8_t secret[KEYBAY_METHOD_SECRET_BYTES]; /* M */
    char text[RK_TEXT_BYTES + 1];               /* the key as shown */
    uint8_t input[RK_INPUT_BYTES + 1];          /* the key as typed; a spare byte detects an overlong one */
    uint8_t symbols[RK_SYMBOLS];                /* the typed key, one 5-bit value each */
} rk_secret;

/* ---- the key ---- */

/* BLAKE2b-256 keyed with K over `label` into secret->hash. */
static void rk_derive(rk_secret *s, const char *label) {
    crypto_generichash(s->hash, sizeof s->hash, (const unsigned char *)label, strlen(label), s->raw, RK_KEY_BYTES);
}

/* M and the check value from K. */
static void rk_secret_and_check(rk_secret *s, uint8_t check[RK_CHECK_BYTES]) {
    rk_derive(s, rk_label_check);
    memcpy(check, s->hash, RK_CHECK_BYTES);
    rk_derive(s, rk_label_secret);
    memcpy(s->secret, s->hash, KEYBAY_METHOD_SECRET_BYTES);
    sodium_memzero(s->hash, sizeof s->hash);
}

/* ---- parameters ---- */

/* Strict decoding into `check`; `host` may be NULL. */
static keybay_status rk_decode_params(const keybay_host *host, const uint8_t *params, size_t length,
                                      uint8_t check[RK_CHECK_BYTES]) {
    if (params == NULL) length = 0;
    if (length != RK_PARAMS_BYTES) {
        keybay_host_error(host, "recovery params: length is %zu bytes, expected %u", length, RK_PARAMS_BYTES);
        return KEYBAY_ERR_MALFORMED_PARAMS;
    }
    if (params[0] != RK_FORMAT) {
        keybay_host_error(host, "recovery params: format %u is not supported (expected %u)", (unsigned)params[0], RK_FORMAT);
        return KEYBAY_ERR_MALFORMED_PARAMS;
    }
    memcpy(check, params + 1, RK_CHECK_BYTES);
    return KEYBAY_OK;
}

/* ---- operations ---- */

static keybay_status rk_probe(const keybay_host *host) {
    (void)host; /* libsodium is all it needs; the QR code is optional */
    return KEYBAY_OK;
}

static keybay_status rk_enroll(const keybay_host *host, const keybay_option *options, size_t option_count,
                               keybay_buffer *params_out, uint8_t secret_out[KEYBAY_METHOD_SECRET_BYTES]) {
    keybay_status status = keybay_method_enroll_begin(host, "recovery", params_out, secret_out);
    if (status != KEYBAY_OK) return status;
    if (option_count > 0) {
        const char *name = options != NULL && options[0].name != NULL ? options[0].name : "";
        keybay_host_error(host, "recovery: unknown option '%.64s' (the recovery plugin takes no options)", name);
        return KEYBAY_ERR_INVALID_OPTION;
    }
    if (!KEYBAY_HOST_HAS(host, show_secret)) {
        keybay_host_error_reason(host, "cannot-show");
        keybay_host_error(host, "recovery: the host cannot show a recovery key, so none is made");
        return KEYBAY_ERR_INTERACTION_UNAVAILABLE;
    }
    uint8_t *encoded = malloc(RK_PARAMS_BYTES);
    if (encoded == NULL) {
        keybay_host_error(host, "recovery: out of memory");
        return KEYBAY_ERR_INTERNAL;
    }
    rk_secret *s = keybay_method_secret_new(host, "recovery", sizeof(rk_secret));
    if (s == NULL) {
        free(encoded);
        return KEYBAY_ERR_INTERNAL;
    }
    keybay_rk_generate(s->raw, s->hash);
    encoded[0] = (uint8_t)RK_FORMAT;
    rk_secret_and_check(s, encoded + 1);
    keybay_rk_encode(s->raw, s->text);

    size_t picture_size = 0;
    char *picture = keybay_rk_picture(host, "recovery", s->text, &picture_size);
    status = host->show_secret(host->context, KEYBAY_SECRET_RECOVERY_KEY, s->text, picture);
    keybay_rk_picture_free(picture, picture_size);
    if (status == KEYBAY_OK) {
        memcpy(secret_out, s->secret, KEYBAY_METHOD_SECRET_BYTES);
        params_out->data = encoded;
        params_out->length = RK_PARAMS_BYTES;
        encoded = NULL;
    }
    free(encoded);
    keybay_method_secret_free(s, sizeof *s);
    return status;
}

/* Unwrap and verify: M from the key the user types. */
static keybay_status rk_unwrap(const keybay_host *host, const uint8_t *params, size_t params_length,
                               uint8_t secret_out[KEYBAY_METHOD_SECRET_BYTES]) {
    keybay_status status = keybay_method_unwrap_begin(host, "recovery", secret_out);
    if (status != KEYBAY_OK) return status;
    uint8_t stored[RK_CHECK_BYTES], check[RK_CHECK_BYTES];
    status = rk_decode_params(host, params, params_length, stored);
    if (status != KEYBAY_OK) return status;
    if (!KEYBAY_HOST_HAS(host, ask_secret)) {
        keybay_host_error(host, "recovery: the host offers no way to ask for the recovery key");
        return KEYBAY_ERR_INTERACTION_UNAVAILABLE;
    }
    rk_secret *s = keybay_method_secret_new(host, "recovery", sizeof(rk_secret));
    if (s == NULL) return KEYBAY_ERR_INTERNAL;
    size_t length = 0;
    status = host->ask_secret(host->context, KEYBAY_SECRET_RECOVERY_KEY, 0, "Recovery key", -1, s->input, sizeof s->input,
                              &length);
    if (status != KEYBAY_OK) goto done; /* CANCELLED, INTERACTION_UNAVAILABLE, ...: as is */
    if (length > sizeof s->input) {
        keybay_host_error(host, "recovery: the host reported more bytes than the buffer holds");
        status = KEYBAY_ERR_INTERNAL;
        goto done;
    }
    if (length > RK_INPUT_BYTES) {
        keybay_host_error_reason(host, "too-long");
        keybay_host_error(host, "recovery: the recovery key is longer than %u bytes", RK_INPUT_BYTES);
        status = KEYBAY_ERR_WRONG_SECRET;
        goto done;
    }
    status = keybay_rk_decode(host, "recovery", s->input, length, s->symbols, s->hash, s->raw);
    if (status != KEYBAY_OK) goto done;
    rk_secret_and_check(s, check);
    if (sodium_memcmp(check, stored, RK_CHECK_BYTES) != 0) {
        keybay_host_error_reason(host, "other-store");
        keybay_host_error(host, "recovery: this is a valid recovery key, but not this store's");
        status = KEYBAY_ERR_WRONG_SECRET;
        goto done;
    }
    memcpy(secret_out, s->secret, KEYBAY_METHOD_SECRET_BYTES);

done:
    sodium_memzero(check, sizeof check);
    keybay_method_secret_free(s, sizeof *s);
    return status;
}

static keybay_status rk_describe(const keybay_host *host, const uint8_t *params, size_t params_length,
                                 keybay_buffer *text_out) {
    keybay_status status = keybay_method_describe_begin(text_out);
    if (status != KEYBAY_OK) return status;
    uint8_t check[RK_CHECK_BYTES];
    status = rk_decode_params(host, params, params_length, check);
    if (status != KEYBAY_OK) return status;
    static const char line[] = "recovery key (256-bit)";
    return keybay_method_text(line, sizeof line - 1u, text_out);
}

/* ---- descriptor ---- */

static const keybay_plugin rk_plugin = {
    /* Not one per store: a second key (one in a safe, one with someone trusted) is a second
       method, removable on its own. */
    KEYBAY_DESCRIPTOR("recovery", "Recovery key", "1.0", KEYBAY_KIND_METHOD, KEYBAY_FLAG_INTERACTIVE),
    .free_buffer = keybay_method_free_buffer,
    KEYBAY_METHOD_OPERATIONS(rk_),
};

KEYBAY_PLUGIN_ENTRY(rk_plugin)
