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
 */
#define _POSIX_C_SOURCE 200809L

#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include <argon2.h>
#include <sodium.h>

#include "keybay_passphrase.h"
#include "keybay_plugin.h"
#include "keybay_plugin_descriptor.h"
#include "keybay_plugin_host.h"

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

_Static_assert(PP_PARAMS_BYTES == 1u + 4u + 4u + 4u + 4u + PP_SALT_BYTES, "params layout");
_Static_assert(KEYBAY_PASSPHRASE_OFFSET_SALT + PP_SALT_BYTES == PP_PARAMS_BYTES, "salt last");
_Static_assert(PP_MAX_MEMORY_KIB <= ARGON2_MAX_MEMORY, "cap within libargon2's limit");

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

/* ---- small helpers ---- */

static uint32_t pp_get_u32(const uint8_t *p) {
    return ((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) | ((uint32_t)p[2] << 8) | (uint32_t)p[3];
}

static void pp_put_u32(uint8_t *p, uint32_t v) {
    p[0] = (uint8_t)(v >> 24);
    p[1] = (uint8_t)(v >> 16);
    p[2] = (uint8_t)(v >> 8);
    p[3] = (uint8_t)v;
}

/* "64 MiB", "1 GiB", "19456 KiB" */
static void pp_format_memory(char *out, size_t capacity, uint32_t kib) {
    if (kib % 1048576u == 0) snprintf(out, capacity, "%" PRIu32 " GiB", kib / 1048576u);
    else if (kib % 1024u == 0) snprintf(out, capacity, "%" PRIu32 " MiB", kib / 1024u);
    else snprintf(out, capacity, "%" PRIu32 " KiB", kib);
}

static uint64_t pp_now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Checks the Argon2 cost triple against the caps. Returns 0 and fills `why` (starting with the
   field name as `names` spells it: params fields or option names) if a value is out of range. */
static int pp_ranges_ok(uint32_t memory_kib, uint32_t iterations, uint32_t lanes,
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
static const char *const pp_option_names[3] = {"memory-kib", "iterations", "lanes"};

/* Strict decoding; allocates nothing. `host` may be NULL (describe). */
static keybay_status pp_decode(const keybay_host *host, const uint8_t *params, size_t length,
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

static void pp_encode(const pp_params *pp, uint8_t out[PP_PARAMS_BYTES]) {
    out[KEYBAY_PASSPHRASE_OFFSET_FORMAT] = (uint8_t)PP_FORMAT;
    pp_put_u32(out + KEYBAY_PASSPHRASE_OFFSET_VERSION, PP_ARGON2_VERSION);
    pp_put_u32(out + KEYBAY_PASSPHRASE_OFFSET_MEMORY_KIB, pp->memory_kib);
    pp_put_u32(out + KEYBAY_PASSPHRASE_OFFSET_ITERATIONS, pp->iterations);
    pp_put_u32(out + KEYBAY_PASSPHRASE_OFFSET_LANES, pp->lanes);
    memcpy(out + KEYBAY_PASSPHRASE_OFFSET_SALT, pp->salt, PP_SALT_BYTES);
}

/* ---- Argon2id ---- */

static int pp_argon2id(const pp_params *pp, const uint8_t *password, size_t password_length,
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

static keybay_status pp_argon2_failed(const keybay_host *host, int rc, uint32_t memory_kib) {
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

/* ---- options ---- */

static uint32_t pp_default_lanes(void) {
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    if (cpus < 1) cpus = 1;
    return cpus < (long)PP_DEFAULT_LANES_MAX ? (uint32_t)cpus : PP_DEFAULT_LANES_MAX;
}

/* Decimal digits only, no sign or spaces, at most UINT32_MAX. */
static int pp_parse_u32(const char *text, uint32_t *out) {
    if (text == NULL || *text == '\0') return 0;
    uint64_t value = 0;
    for (const char *p = text; *p != '\0'; p++) {
        if (*p < '0' || *p > '9') return 0;
        value = value * 10u + (uint64_t)(*p - '0');
        if (value > UINT32_MAX) return 0;
    }
    *out = (uint32_t)value;
    return 1;
}

static keybay_status pp_parse_options(const keybay_host *host, const keybay_option *options,
                                      size_t count, pp_options *o) {
    memset(o, 0, sizeof *o);
    if (count > 0 && options == NULL) {
        keybay_host_error(host, "passphrase: %zu options announced but none passed", count);
        return KEYBAY_ERR_INVALID_OPTION;
    }
    for (size_t i = 0; i < count; i++) {
        const char *name = options[i].name;
        const char *value = options[i].value;
        if (name == NULL) {
            keybay_host_error(host, "passphrase: option %zu has no name", i + 1);
            return KEYBAY_ERR_INVALID_OPTION;
        }
        int *has;
        uint32_t *slot;
        if (strcmp(name, "memory-kib") == 0) { has = &o->has_memory; slot = &o->memory_kib; }
        else if (strcmp(name, "iterations") == 0) { has = &o->has_iterations; slot = &o->iterations; }
        else if (strcmp(name, "lanes") == 0) { has = &o->has_lanes; slot = &o->lanes; }
        else if (strcmp(name, "target-ms") == 0) { has = &o->has_target; slot = &o->target_ms; }
        else {
            keybay_host_error(host,
                     "passphrase: unknown option '%.64s' (accepted: memory-kib, iterations, lanes, target-ms)",
                     name);
            return KEYBAY_ERR_INVALID_OPTION;
        }
        if (*has) {
            keybay_host_error(host, "passphrase: option '%s' is given more than once", name);
            return KEYBAY_ERR_INVALID_OPTION;
        }
        if (!pp_parse_u32(value, slot)) {
            keybay_host_error(host, "passphrase: option '%s' needs a decimal number, not '%.32s'", name,
                     value == NULL ? "" : value);
            return KEYBAY_ERR_INVALID_OPTION;
        }
        *has = 1;
    }

    if (!o->has_lanes) o->lanes = pp_default_lanes();
    /* Check what was given; a calibrated value is always within range. */
    char why[160];
    uint32_t m = o->has_memory ? o->memory_kib : PP_FLOOR_MEMORY_KIB;
    uint32_t t = o->has_iterations ? o->iterations : PP_FLOOR_ITERATIONS;
    if (!pp_ranges_ok(m, t, o->lanes, pp_option_names, why, sizeof why)) {
        keybay_host_error(host, "passphrase: option %s", why);
        return KEYBAY_ERR_INVALID_OPTION;
    }
    if (o->has_target) {
        if (o->target_ms < PP_MIN_TARGET_MS || o->target_ms > PP_MAX_TARGET_MS) {
            keybay_host_error(host, "passphrase: option target-ms %" PRIu32 " is out of range (%u to %u)",
                     o->target_ms, PP_MIN_TARGET_MS, PP_MAX_TARGET_MS);
            return KEYBAY_ERR_INVALID_OPTION;
        }
        if (o->has_memory && o->has_iterations) {
            keybay_host_error(host, "passphrase: option target-ms applies only to calibration, but "
                           "memory-kib and iterations are both given");
            return KEYBAY_ERR_INVALID_OPTION;
        }
    } else {
        o->target_ms = PP_DEFAULT_TARGET_MS;
    }
    return KEYBAY_OK;
}

/* ---- calibration ---- */

/* What the process may still map under its address-space limit (ulimit -v), less room for the
   Argon2 threads' stacks and a margin; UINT64_MAX without a limit. A calibration that ignored
   it would time a size the final derivation then cannot allocate. */
static uint64_t pp_address_space_left_kib(uint32_t lanes) {
    struct rlimit as;
    if (getrlimit(RLIMIT_AS, &as) != 0 || as.rlim_cur == RLIM_INFINITY) return UINT64_MAX;
    uint64_t used_kib = 0;
    FILE *statm = fopen("/proc/self/statm", "r");
    if (statm != NULL) {
        unsigned long long pages = 0;
        if (fscanf(statm, "%llu", &pages) == 1) used_kib = (uint64_t)pages * (uint64_t)sysconf(_SC_PAGESIZE) / 1024u;
        fclose(statm);
    }
    struct rlimit stack;
    uint64_t stack_kib = 8192;
    if (getrlimit(RLIMIT_STACK, &stack) == 0 && stack.rlim_cur != RLIM_INFINITY && stack.rlim_cur / 1024u < stack_kib)
        stack_kib = stack.rlim_cur / 1024u;
    uint64_t reserved = used_kib + (uint64_t)lanes * stack_kib + 16384u; /* 16 MiB for everything else */
    uint64_t limit_kib = (uint64_t)as.rlim_cur / 1024u;
    return limit_kib > reserved ? limit_kib - reserved : 0;
}

/* min(1 GiB, RAM/4, cgroup v2 memory.max/4, what the address-space limit leaves), in whole MiB,
   never below the 64 MiB floor. */
static uint32_t pp_calibration_cap_kib(uint32_t lanes) {
    uint64_t cap = PP_CAP_MEMORY_KIB;
    uint64_t left = pp_address_space_left_kib(lanes);
    if (left < cap) cap = left;
    long pages = sysconf(_SC_PHYS_PAGES);
    long page_size = sysconf(_SC_PAGESIZE);
    if (pages > 0 && page_size > 0) {
        uint64_t ram_kib = (uint64_t)pages * (uint64_t)page_size / 1024u;
        if (ram_kib / 4u < cap) cap = ram_kib / 4u;
    }
    FILE *file = fopen("/sys/fs/cgroup/memory.max", "r");
    if (file != NULL) {
        char line[32];
        if (fgets(line, sizeof line, file) != NULL) {
            char *end = NULL;
            unsigned long long limit = strtoull(line, &end, 10);
            if (end != line && (*end == '\n' || *end == '\0')) { /* "max" means no limit */
                uint64_t limit_kib = (uint64_t)limit / 1024u;
                if (limit_kib / 4u < cap) cap = limit_kib / 4u;
            }
        }
        fclose(file);
    }
    cap -= cap % 1024u;
    if (cap < PP_FLOOR_MEMORY_KIB) cap = PP_FLOOR_MEMORY_KIB;
    return (uint32_t)cap;
}

static const uint8_t pp_trial_password[] = "keybay calibration trial";
static const uint8_t pp_trial_salt[PP_SALT_BYTES] = {'k', 'e', 'y', 'b', 'a', 'y', '-', 'c',
                                                     'a', 'l', 'i', 'b', 'r', 'a', 't', 'e'};

/* One timed Argon2id run on a dummy password. When libargon2 could not get the memory it sets
   *allocation_failed and no error line: the caller may settle for less, or report it. */
static keybay_status pp_trial(const keybay_host *host, uint32_t memory_kib, uint32_t iterations,
                              uint32_t lanes, double *ms_out, int *allocation_failed) {
    pp_params pp = {.memory_kib = memory_kib, .iterations = iterations, .lanes = lanes};
    memcpy(pp.salt, pp_trial_salt, PP_SALT_BYTES);
    uint8_t out[KEYBAY_METHOD_SECRET_BYTES];
    *allocation_failed = 0;
    uint64_t start = pp_now_ns();
    int rc = pp_argon2id(&pp, pp_trial_password, sizeof pp_trial_password - 1, out);
    uint64_t end = pp_now_ns();
    sodium_memzero(out, sizeof out);
    if (rc == ARGON2_MEMORY_ALLOCATION_ERROR) {
        *allocation_failed = 1;
        return KEYBAY_ERR_INTERNAL;
    }
    if (rc != ARGON2_OK) return pp_argon2_failed(host, rc, memory_kib);
    double ms = (double)(end - start) / 1e6;
    if (ms < 1.0) ms = 1.0;
    *ms_out = ms;
    char mem[32];
    pp_format_memory(mem, sizeof mem, memory_kib);
    return keybay_host_message(host, KEYBAY_MESSAGE_PROGRESS,
                      "calibrating Argon2id: %s, t=%" PRIu32 ", p=%" PRIu32 " took %.0f ms", mem,
                      iterations, lanes, ms);
}

/* Nearest whole MiB, in KiB (saturating; callers clamp to the cap afterwards). */
static uint32_t pp_round_mib(double kib) {
    if (!(kib < 4294443008.0)) return 4294443008u; /* the largest MiB multiple below 2^32 */
    if (kib < 0) return 0;
    return (uint32_t)(((uint64_t)(kib + 512.0) / 1024u) * 1024u);
}

/* The memory at which one run would take `target` ms, given a run of `ms` at `memory_kib`
   and time growing as memory^k. */
static double pp_extrapolate(uint32_t memory_kib, double ms, double target, double k) {
    return (double)memory_kib * pow(target / ms, 1.0 / k);
}

typedef struct pp_choice {
    uint32_t memory_kib;
    uint32_t iterations;
    uint32_t cap_kib;    /* the memory cap calibration worked under */
    double predicted_ms; /* expected time of one derivation at the choice */
} pp_choice;

/* Chooses whatever of memory / iterations was not given (see the top of the file), with memory
   at most `cap` (pp_calibration_cap_kib). */
static keybay_status pp_calibrate(const keybay_host *host, const pp_options *o, uint32_t cap,
                                  pp_choice *c) {
    const double target = (double)o->target_ms;
    uint32_t m = o->has_memory ? o->memory_kib : PP_FLOOR_MEMORY_KIB;
    uint32_t t = o->has_iterations ? o->iterations : PP_FLOOR_ITERATIONS;
    double ms = 0; /* measured (or, after an extrapolated step, predicted) time at (m, t) */
    int allocation_failed = 0;

    if (keybay_host_cancelled(host)) goto cancelled;
    keybay_status status = pp_trial(host, m, t, o->lanes, &ms, &allocation_failed);
    if (allocation_failed) /* the first trial: there is nothing smaller to fall back to */
        return pp_argon2_failed(host, ARGON2_MEMORY_ALLOCATION_ERROR, m);
    if (status != KEYBAY_OK) return status;

    /* Memory first. Double and measure while the extrapolation says at least twice the memory
       fits, so no trial takes much longer than the target; then one extrapolated step (to the
       nearest MiB), or one step back if the last doubling overshot. Time is modelled as
       memory^k, with k measured between the last two trials (clamped to 1...2; 1 before there
       are two): beyond the caches it grows faster than linearly. */
    if (!o->has_memory) {
        double k = 1.0;
        while (ms < target && m < cap) {
            double want = pp_extrapolate(m, ms, target, k);
            if (want < 2.0 * (double)m) {
                uint32_t next = pp_round_mib(want);
                if (next > cap) next = cap;
                if (next > m) {
                    ms *= pow((double)next / (double)m, k);
                    m = next;
                }
                break;
            }
            uint32_t next = (uint64_t)m * 2u > cap ? cap : m * 2u;
            if (keybay_host_cancelled(host)) goto cancelled;
            double next_ms = 0;
            status = pp_trial(host, next, t, o->lanes, &next_ms, &allocation_failed);
            if (status != KEYBAY_OK && allocation_failed) {
                char wanted[32], kept[32];
                pp_format_memory(wanted, sizeof wanted, next);
                pp_format_memory(kept, sizeof kept, m);
                status = keybay_host_message(host, KEYBAY_MESSAGE_WARNING,
                                    "Argon2id could not allocate %s; staying at %s", wanted, kept);
                if (status != KEYBAY_OK) return status;
                cap = m;
                break;
            }
            if (status != KEYBAY_OK) return status;
            k = log(next_ms / ms) / log((double)next / (double)m);
            if (!(k >= 1.0)) k = 1.0; /* also NaN */
            if (k > 2.0) k = 2.0;
            if (next_ms > target * 1.05) {
                uint32_t back = pp_round_mib(pp_extrapolate(next, next_ms, target, k));
                if (back < m) back = m;
                if (back > next) back = next;
                ms = next_ms * pow((double)back / (double)next, k);
                m = back;
                break;
            }
            m = next;
            ms = next_ms;
        }
    }

    /* Then iterations; time is about linear in the number of passes. */
    if (!o->has_iterations && ms < target && t < PP_MAX_ITERATIONS) {
        double want = (double)t * target / ms;
        uint32_t next = want >= (double)PP_MAX_ITERATIONS ? PP_MAX_ITERATIONS
                                                          : (uint32_t)(want + 0.5);
        if (next > t) {
            ms = ms * (double)next / (double)t;
            t = next;
        }
    }
    if (keybay_host_cancelled(host)) goto cancelled;

    c->memory_kib = m;
    c->iterations = t;
    c->cap_kib = cap;
    c->predicted_ms = ms;
    return KEYBAY_OK;

cancelled:
    keybay_host_error(host, "passphrase: calibration cancelled");
    return KEYBAY_ERR_CANCELLED;
}

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
