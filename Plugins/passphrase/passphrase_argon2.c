// SPDX-License-Identifier: Apache-2.0
/* Argon2id v1.3 through libargon2: one derivation of M, its failure explained, and the clock and
   memory sizes its messages use. */
#define _POSIX_C_SOURCE 200809L

#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <argon2.h>

#include "keybay_plugin_host.h"
#include "passphrase_internal.h"

/* "64 MiB", "1 GiB", "19456 KiB" */
void pp_format_memory(char *out, size_t capacity, uint32_t kib) {
    if (kib % 1048576u == 0) snprintf(out, capacity, "%" PRIu32 " GiB", kib / 1048576u);
    else if (kib % 1024u == 0) snprintf(out, capacity, "%" PRIu32 " MiB", kib / 1024u);
    else snprintf(out, capacity, "%" PRIu32 " KiB", kib);
}

uint64_t pp_now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

int pp_argon2id(const pp_params *pp, const uint8_t *password, size_t password_length,
                uint8_t out[KEYBAY_METHOD_SECRET_BYTES]) {
    argon2_context ctx;
    memset(&ctx, 0, sizeof ctx);
    ctx.out = out;
    ctx.outlen = KEYBAY_METHOD_SECRET_BYTES;
    ctx.pwd = (uint8_t *)(uintptr_t)password; /* not modified: ARGON2_FLAG_CLEAR_PASSWORD unset */
    ctx.pwdlen = (uint32_t)password_length;
    ctx.salt = (uint8_t *)(uintptr_t)pp->salt;
    ctx.saltlen = PP_SALT_BYTES;
    ctx.t_cost = pp->iterations;
    ctx.m_cost = pp->memory_kib;
    ctx.lanes = pp->lanes;
    ctx.threads = pp->lanes;
    ctx.version = ARGON2_VERSION_13;
    ctx.flags = ARGON2_DEFAULT_FLAGS;
    return argon2_ctx(&ctx, Argon2_id);
}

keybay_status pp_argon2_failed(const keybay_host *host, int rc, uint32_t memory_kib) {
    if (rc == ARGON2_MEMORY_ALLOCATION_ERROR) {
        char mem[32];
        pp_format_memory(mem, sizeof mem, memory_kib);
        keybay_host_error_reason(host, "kdf-memory");
        keybay_host_error(host, "Argon2id could not allocate %s of memory", mem);
    } else {
        keybay_host_error(host, "Argon2id failed: %s", argon2_error_message(rc));
    }
    return KEYBAY_ERR_INTERNAL;
}
