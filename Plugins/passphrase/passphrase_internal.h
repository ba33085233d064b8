// SPDX-License-Identifier: Apache-2.0
/*
 * passphrase_internal.h — what the passphrase plugin's files share: the limits, the decoded
 * parameters, the guarded secret, the options and the calibration's choice, and the functions
 * one file calls in another. Private to libkeybay-passphrase.so: the functions are hidden, so the
 * plugin still exports its entry point alone.
 */
#ifndef KEYBAY_PASSPHRASE_INTERNAL_H
#define KEYBAY_PASSPHRASE_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "keybay_passphrase.h"
#include "keybay_plugin.h"

#define PP_FORMAT KEYBAY_PASSPHRASE_FORMAT
#define PP_ARGON2_VERSION KEYBAY_PASSPHRASE_ARGON2_VERSION
#define PP_SALT_BYTES KEYBAY_PASSPHRASE_SALT_BYTES
#define PP_PARAMS_BYTES KEYBAY_PASSPHRASE_PARAMS_BYTES

#define PP_MAX_MEMORY_KIB KEYBAY_PASSPHRASE_MAX_MEMORY_KIB
#define PP_MIN_ITERATIONS 1u
#define PP_MAX_ITERATIONS KEYBAY_PASSPHRASE_MAX_ITERATIONS
#define PP_MIN_LANES 1u
#define PP_MAX_LANES KEYBAY_PASSPHRASE_MAX_LANES

#define PP_MIN_PASSPHRASE 1u
#define PP_MAX_PASSPHRASE KEYBAY_PASSPHRASE_MAX_PASSPHRASE_BYTES

/* Calibration. */
#define PP_FLOOR_MEMORY_KIB 65536u  /* RFC 9106's second recommended option: 64 MiB, t=3 */
#define PP_FLOOR_ITERATIONS 3u
#define PP_CAP_MEMORY_KIB 1048576u  /* calibration never picks more than 1 GiB */
#define PP_DEFAULT_LANES_MAX 4u
#define PP_DEFAULT_TARGET_MS 1000u
#define PP_MIN_TARGET_MS 100u
#define PP_MAX_TARGET_MS 10000u

typedef struct pp_params {
    uint32_t memory_kib;
    uint32_t iterations;
    uint32_t lanes;
    uint8_t salt[PP_SALT_BYTES];
} pp_params;

/* Guarded memory (sodium_malloc) for everything secret: the passphrase and Argon2's output.
   Byte arrays only, so sodium_malloc's unaligned placement against the guard page is fine. */
typedef struct pp_secret {
    uint8_t output[KEYBAY_METHOD_SECRET_BYTES];
    uint8_t passphrase[PP_MAX_PASSPHRASE + 1]; /* one spare byte detects an overlong answer */
} pp_secret;

typedef struct pp_options {
    int has_memory, has_iterations, has_lanes, has_target;
    uint32_t memory_kib, iterations, lanes, target_ms;
} pp_options;

typedef struct pp_choice {
    uint32_t memory_kib;
    uint32_t iterations;
    uint32_t cap_kib;    /* the memory cap calibration worked under */
    double predicted_ms; /* expected time of one derivation at the choice */
} pp_choice;

#pragma GCC visibility push(hidden)

/* passphrase_params.c: the cost triple against the caps, and the parameters' strict decoding and
   encoding. */
int pp_ranges_ok(uint32_t memory_kib, uint32_t iterations, uint32_t lanes,
                 const char *const names[3], char *why, size_t capacity);
keybay_status pp_decode(const keybay_host *host, const uint8_t *params, size_t length,
                        pp_params *out);
void pp_encode(const pp_params *pp, uint8_t out[PP_PARAMS_BYTES]);

/* passphrase_argon2.c: one Argon2id run, its failure, and what its messages and timings use. */
void pp_format_memory(char *out, size_t capacity, uint32_t kib);
uint64_t pp_now_ns(void);
int pp_argon2id(const pp_params *pp, const uint8_t *password, size_t password_length,
                uint8_t out[KEYBAY_METHOD_SECRET_BYTES]);
keybay_status pp_argon2_failed(const keybay_host *host, int rc, uint32_t memory_kib);

/* passphrase_options.c: the enroll options, checked. */
keybay_status pp_parse_options(const keybay_host *host, const keybay_option *options,
                               size_t count, pp_options *o);

/* passphrase_calibration.c: the memory cap here, and the costs that take about the target. */
uint32_t pp_calibration_cap_kib(uint32_t lanes);
keybay_status pp_calibrate(const keybay_host *host, const pp_options *o, uint32_t cap,
                           pp_choice *c);

#pragma GCC visibility pop

#endif /* KEYBAY_PASSPHRASE_INTERNAL_H */
