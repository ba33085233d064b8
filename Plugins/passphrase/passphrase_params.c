// SPDX-License-Identifier: Apache-2.0
/* The passphrase method's public parameters (docs/format.md §11): strict decoding, capped before
   anything is allocated or asked, and encoding. */
#define _POSIX_C_SOURCE 200809L

#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <argon2.h>

#include "keybay_plugin_host.h"
#include "passphrase_internal.h"

_Static_assert(PP_PARAMS_BYTES == 1u + 4u + 4u + 4u + 4u + PP_SALT_BYTES, "params layout");
_Static_assert(KEYBAY_PASSPHRASE_OFFSET_SALT + PP_SALT_BYTES == PP_PARAMS_BYTES, "salt last");
_Static_assert(PP_MAX_MEMORY_KIB <= ARGON2_MAX_MEMORY, "cap within libargon2's limit");

static uint32_t pp_get_u32(const uint8_t *p) {
    return ((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) | ((uint32_t)p[2] << 8) | (uint32_t)p[3];
}

static void pp_put_u32(uint8_t *p, uint32_t v) {
    p[0] = (uint8_t)(v >> 24);
    p[1] = (uint8_t)(v >> 16);
    p[2] = (uint8_t)(v >> 8);
    p[3] = (uint8_t)v;
}

/* Checks the Argon2 cost triple against the caps. Returns 0 and fills `why` (starting with the
   field name as `names` spells it: params fields or option names) if a value is out of range. */
int pp_ranges_ok(uint32_t memory_kib, uint32_t iterations, uint32_t lanes,
                 const char *const names[3], char *why, size_t capacity) {
    if (lanes < PP_MIN_LANES || lanes > PP_MAX_LANES) {
        snprintf(why, capacity, "%s %" PRIu32 " is out of range (1 to %u)", names[2], lanes,
                 PP_MAX_LANES);
        return 0;
    }
    if (iterations < PP_MIN_ITERATIONS || iterations > PP_MAX_ITERATIONS) {
        snprintf(why, capacity, "%s %" PRIu32 " is out of range (1 to %u)", names[1], iterations,
                 PP_MAX_ITERATIONS);
        return 0;
    }
    if (memory_kib > PP_MAX_MEMORY_KIB) {
        snprintf(why, capacity, "%s %" PRIu32 " is above the cap of %u (2 GiB)", names[0],
                 memory_kib, PP_MAX_MEMORY_KIB);
        return 0;
    }
    if (memory_kib < 8u * lanes) {
        snprintf(why, capacity, "%s %" PRIu32 " is below 8 x lanes (%" PRIu32 ")", names[0],
                 memory_kib, 8u * lanes);
        return 0;
    }
    return 1;
}

static const char *const pp_param_names[3] = {"memory_kib", "iterations", "lanes"};

/* Strict decoding; allocates nothing. `host` may be NULL (describe). */
keybay_status pp_decode(const keybay_host *host, const uint8_t *params, size_t length,
                        pp_params *out) {
    if (params == NULL && length != 0) length = 0;
    if (length != PP_PARAMS_BYTES) {
        keybay_host_error(host, "passphrase params: length is %zu bytes, expected %u", length,
                 PP_PARAMS_BYTES);
        return KEYBAY_ERR_MALFORMED_PARAMS;
    }
    if (params[KEYBAY_PASSPHRASE_OFFSET_FORMAT] != PP_FORMAT) {
        keybay_host_error(host, "passphrase params: format %u is not supported (expected %u)",
                 (unsigned)params[KEYBAY_PASSPHRASE_OFFSET_FORMAT], PP_FORMAT);
        return KEYBAY_ERR_MALFORMED_PARAMS;
    }
    uint32_t version = pp_get_u32(params + KEYBAY_PASSPHRASE_OFFSET_VERSION);
    if (version != PP_ARGON2_VERSION) {
        keybay_host_error(host, "passphrase params: argon2 version 0x%" PRIx32 " is not supported (expected 0x13)",
                 version);
        return KEYBAY_ERR_MALFORMED_PARAMS;
    }
    uint32_t memory_kib = pp_get_u32(params + KEYBAY_PASSPHRASE_OFFSET_MEMORY_KIB);
    uint32_t iterations = pp_get_u32(params + KEYBAY_PASSPHRASE_OFFSET_ITERATIONS);
    uint32_t lanes = pp_get_u32(params + KEYBAY_PASSPHRASE_OFFSET_LANES);
    char why[160];
    if (!pp_ranges_ok(memory_kib, iterations, lanes, pp_param_names, why, sizeof why)) {
        keybay_host_error(host, "passphrase params: %s", why);
        return KEYBAY_ERR_MALFORMED_PARAMS;
    }
    out->memory_kib = memory_kib;
    out->iterations = iterations;
    out->lanes = lanes;
    memcpy(out->salt, params + KEYBAY_PASSPHRASE_OFFSET_SALT, PP_SALT_BYTES);
    return KEYBAY_OK;
}

void pp_encode(const pp_params *pp, uint8_t out[PP_PARAMS_BYTES]) {
    out[KEYBAY_PASSPHRASE_OFFSET_FORMAT] = (uint8_t)PP_FORMAT;
    pp_put_u32(out + KEYBAY_PASSPHRASE_OFFSET_VERSION, PP_ARGON2_VERSION);
    pp_put_u32(out + KEYBAY_PASSPHRASE_OFFSET_MEMORY_KIB, pp->memory_kib);
    pp_put_u32(out + KEYBAY_PASSPHRASE_OFFSET_ITERATIONS, pp->iterations);
    pp_put_u32(out + KEYBAY_PASSPHRASE_OFFSET_LANES, pp->lanes);
    memcpy(out + KEYBAY_PASSPHRASE_OFFSET_SALT, pp->salt, PP_SALT_BYTES);
}
