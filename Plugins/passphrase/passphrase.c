// SPDX-License-Identifier: Apache-2.0
/*
 * libkeybay-passphrase.so — the first-party `passphrase` method plugin (Keybay plugin ABI v1).
 *
 * M = Argon2id v1.3 (libargon2) over the passphrase, 32 bytes. The 33-byte public parameters and
 * the derivation are specified in docs/format.md §11; the options, the calibration and the
 * handling of the secret are described in docs/plugins.md ("The first-party passphrase plugin").
 *
 * Why it looks the way it does: there is no verifier (the host's public-key comparison catches a
 * wrong passphrase, so unwrap only derives M); parameters are decoded and capped before anything
 * is allocated or asked, because anyone holding the root can write them; the passphrase is asked
 * for before calibrating, so a refused or cancelled prompt costs no Argon2id runs.
 *
 * This file holds the operations and the descriptor; the parameters are passphrase_params.c,
 * the enroll options passphrase_options.c, the calibration passphrase_calibration.c and Argon2id
 * itself passphrase_argon2.c (what they share: passphrase_internal.h).
 */
#define _POSIX_C_SOURCE 200809L

#include <inttypes.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <argon2.h>
#include <sodium.h>

#include "keybay_passphrase.h"
#include "keybay_plugin.h"
#include "keybay_plugin_descriptor.h"
#include "keybay_plugin_host.h"
#include "passphrase_internal.h"

/* ---- the passphrase ---- */

static keybay_status pp_ask_passphrase(const keybay_host *host, uint32_t flags,
                                       const char *prompt, pp_secret *secret,
                                       size_t *length_out) {
    if (!KEYBAY_HOST_HAS(host, ask_secret)) {
        keybay_host_error(host, "passphrase: the host offers no way to ask for a passphrase");
        return KEYBAY_ERR_INTERACTION_UNAVAILABLE;
    }
    size_t length = 0;
    keybay_status status =
        host->ask_secret(host->context, KEYBAY_SECRET_PASSPHRASE, flags, prompt, -1,
                         secret->passphrase, sizeof secret->passphrase, &length);
    if (status != KEYBAY_OK) return status; /* CANCELLED, INTERACTION_UNAVAILABLE, ...: as is */
    if (length > sizeof secret->passphrase) {
        keybay_host_error(host, "passphrase: the host reported more bytes than the buffer holds");
        return KEYBAY_ERR_INTERNAL;
    }
    if (length < PP_MIN_PASSPHRASE) {
        keybay_host_error_reason(host, "empty");
        keybay_host_error(host, "passphrase: the passphrase is empty (it must be 1 to %u bytes)",
                 PP_MAX_PASSPHRASE);
        return KEYBAY_ERR_INVALID_OPTION;
    }
    if (length > PP_MAX_PASSPHRASE) {
        keybay_host_error_reason(host, "too-long");
        keybay_host_error(host, "passphrase: the passphrase is longer than %u bytes", PP_MAX_PASSPHRASE);
        return KEYBAY_ERR_INVALID_OPTION;
    }
    *length_out = length;
    return KEYBAY_OK;
}

/* The real derivation into secret->output, after a last check for a cancel ("passphrase: <what>
   cancelled"). `ms_out`, if not NULL, receives the time it took. */
static keybay_status pp_derive(const keybay_host *host, const char *what, const pp_params *pp,
                               pp_secret *secret, size_t length, double *ms_out) {
    if (keybay_host_cancelled(host)) {
        keybay_host_error(host, "passphrase: %s cancelled", what);
        return KEYBAY_ERR_CANCELLED;
    }
    uint64_t start = pp_now_ns();
    int rc = pp_argon2id(pp, secret->passphrase, length, secret->output);
    uint64_t end = pp_now_ns();
    if (rc != ARGON2_OK) return pp_argon2_failed(host, rc, pp->memory_kib);
    if (ms_out != NULL) *ms_out = (double)(end - start) / 1e6;
    return KEYBAY_OK;
}

/* ---- operations ---- */

static keybay_status pp_probe(const keybay_host *host) {
    (void)host; /* libargon2 is linked in: nothing can be missing */
    return KEYBAY_OK;
}

static keybay_status pp_enroll(const keybay_host *host, const keybay_option *options,
                               size_t option_count, keybay_buffer *params_out,
                               uint8_t secret_out[KEYBAY_METHOD_SECRET_BYTES]) {
    keybay_status status = keybay_method_enroll_begin(host, "passphrase", params_out, secret_out);
    if (status != KEYBAY_OK) return status;
    pp_options o;
    status = pp_parse_options(host, options, option_count, &o);
    if (status != KEYBAY_OK) return status;

    uint8_t *encoded = malloc(PP_PARAMS_BYTES);
    if (encoded == NULL) {
        keybay_host_error(host, "passphrase: out of memory");
        return KEYBAY_ERR_INTERNAL;
    }
    pp_secret *secret = keybay_method_secret_new(host, "passphrase", sizeof(pp_secret));
    if (secret == NULL) {
        free(encoded);
        return KEYBAY_ERR_INTERNAL;
    }
    pp_params pp = {.lanes = o.lanes};
    randombytes_buf(pp.salt, sizeof pp.salt);

    size_t length = 0;
    status = pp_ask_passphrase(host, KEYBAY_ASK_NEW, "New passphrase", secret, &length);
    if (status != KEYBAY_OK) goto done;

    int calibrate = !(o.has_memory && o.has_iterations);
    const uint32_t cap_kib = pp_calibration_cap_kib(o.lanes); /* reads sysfs: once per enrollment */
    pp_choice choice = {.memory_kib = o.memory_kib, .iterations = o.iterations};
    if (calibrate) {
        status = pp_calibrate(host, &o, cap_kib, &choice);
        if (status != KEYBAY_OK) goto done;
    }
    pp.memory_kib = choice.memory_kib;
    pp.iterations = choice.iterations;

    char mem[32];
    pp_format_memory(mem, sizeof mem, pp.memory_kib);
    int weak_memory = o.has_memory && pp.memory_kib < PP_FLOOR_MEMORY_KIB;
    int weak_iterations = o.has_iterations && pp.iterations < PP_FLOOR_ITERATIONS;
    if (weak_memory || weak_iterations) {
        status = keybay_host_message(host, KEYBAY_MESSAGE_WARNING,
                            "Argon2id %s, t=%" PRIu32 ": %s below RFC 9106's recommended "
                            "64 MiB, t=3 (used because given explicitly)",
                            mem, pp.iterations,
                            weak_memory && weak_iterations ? "memory and iterations are"
                            : weak_memory                  ? "memory is"
                                                           : "iterations are");
        if (status != KEYBAY_OK) goto done;
    }
    if (o.has_memory && pp.memory_kib > cap_kib) {
        status = keybay_host_message(host, KEYBAY_MESSAGE_WARNING,
                            "Argon2id memory %s is above what calibration would allow here; "
                            "every unlock will need that much",
                            mem);
        if (status != KEYBAY_OK) goto done;
    }

    double ms = 0;
    status = pp_derive(host, "enrollment", &pp, secret, length, &ms);
    if (status != KEYBAY_OK) goto done;
    if (calibrate) {
        keybay_host_log(host, KEYBAY_LOG_DEBUG,
               "passphrase: calibration predicted %.0f ms for %" PRIu32 " KiB, t=%" PRIu32
               ", p=%" PRIu32 "; the derivation took %.0f ms",
               choice.predicted_ms, pp.memory_kib, pp.iterations, pp.lanes, ms);
        char cap[64] = "";
        if (!o.has_iterations && pp.iterations >= PP_MAX_ITERATIONS) {
            snprintf(cap, sizeof cap, " (iterations capped at %u)", PP_MAX_ITERATIONS);
        } else if (!o.has_memory && pp.memory_kib >= choice.cap_kib) {
            char cap_text[32];
            pp_format_memory(cap_text, sizeof cap_text, choice.cap_kib);
            snprintf(cap, sizeof cap, " (memory capped at %s)", cap_text);
        }
        status = keybay_host_message(host, KEYBAY_MESSAGE_INFO,
                            "passphrase: chose Argon2id v1.3, %s, t=%" PRIu32 ", p=%" PRIu32
                            " for a %" PRIu32 " ms target%s; deriving the key takes %.0f ms",
                            mem, pp.iterations, pp.lanes, o.target_ms, cap, ms);
    } else {
        status = keybay_host_message(host, KEYBAY_MESSAGE_INFO,
                            "passphrase: Argon2id v1.3, %s, t=%" PRIu32 ", p=%" PRIu32
                            " as given; deriving the key takes %.0f ms",
                            mem, pp.iterations, pp.lanes, ms);
    }
    if (status != KEYBAY_OK) goto done;

    pp_encode(&pp, encoded);
    memcpy(secret_out, secret->output, KEYBAY_METHOD_SECRET_BYTES);
    params_out->data = encoded;
    params_out->length = PP_PARAMS_BYTES;
    encoded = NULL;

done:
    free(encoded);
    keybay_method_secret_free(secret, sizeof *secret);
    return status;
}

/* Unwrap and verify: derive M from the passphrase the user types. */
static keybay_status pp_unwrap(const keybay_host *host, const uint8_t *params, size_t params_length,
                               uint8_t secret_out[KEYBAY_METHOD_SECRET_BYTES]) {
    keybay_status status = keybay_method_unwrap_begin(host, "passphrase", secret_out);
    if (status != KEYBAY_OK) return status;
    pp_params pp;
    status = pp_decode(host, params, params_length, &pp);
    if (status != KEYBAY_OK) return status;

    pp_secret *secret = keybay_method_secret_new(host, "passphrase", sizeof(pp_secret));
    if (secret == NULL) return KEYBAY_ERR_INTERNAL;
    size_t length = 0;
    status = pp_ask_passphrase(host, 0, "Passphrase", secret, &length);
    if (status != KEYBAY_OK) goto done;
    status = pp_derive(host, "unlock", &pp, secret, length, NULL);
    if (status != KEYBAY_OK) goto done;
    memcpy(secret_out, secret->output, KEYBAY_METHOD_SECRET_BYTES);

done:
    keybay_method_secret_free(secret, sizeof *secret);
    return status;
}

static keybay_status pp_describe(const keybay_host *host, const uint8_t *params, size_t params_length,
                                 keybay_buffer *text_out) {
    keybay_status status = keybay_method_describe_begin(text_out);
    if (status != KEYBAY_OK) return status;
    pp_params pp;
    status = pp_decode(host, params, params_length, &pp);
    if (status != KEYBAY_OK) return status;
    char mem[32], line[96];
    pp_format_memory(mem, sizeof mem, pp.memory_kib);
    int n = snprintf(line, sizeof line, "Argon2id v1.3, %s, t=%" PRIu32 ", p=%" PRIu32, mem,
                     pp.iterations, pp.lanes);
    if (n < 0 || (size_t)n >= sizeof line) return KEYBAY_ERR_INTERNAL;
    return keybay_method_text(line, (size_t)n, text_out);
}

/* ---- descriptor ---- */

static const keybay_option_spec pp_option_specs[] = {
    {"memory-kib", "Argon2id memory in KiB, 8 x lanes to 2097152 (2 GiB); "
                   "calibrated to target-ms when not given"},
    {"iterations", "Argon2id passes over the memory, 1 to 16; calibrated when not given"},
    {"lanes", "Argon2id lanes (and threads), 1 to 8; default min(4, online CPUs)"},
    {"target-ms", "calibration target for one unlock in milliseconds, 100 to 10000 "
                  "(default 1000); only when memory-kib or iterations is left out"},
};

static const keybay_plugin pp_plugin = {
    /* One passphrase per store: a second would only be a second thing to remember. */
    KEYBAY_DESCRIPTOR("passphrase", "Passphrase (Argon2id)", "1.0", KEYBAY_KIND_METHOD,
                      KEYBAY_FLAG_INTERACTIVE | KEYBAY_FLAG_ONE_PER_STORE | KEYBAY_FLAG_CALIBRATES),
    KEYBAY_DESCRIPTOR_OPTIONS(pp_option_specs),
    .free_buffer = keybay_method_free_buffer,
    KEYBAY_METHOD_OPERATIONS(pp_),
};

KEYBAY_PLUGIN_ENTRY(pp_plugin)
