// SPDX-License-Identifier: Apache-2.0
/* Calibration: the Argon2id memory and iterations that take about target-ms here, measured with
   timed runs on a dummy password, within what this machine and process may allocate. */
#define _POSIX_C_SOURCE 200809L

#include <inttypes.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include <argon2.h>
#include <sodium.h>

#include "keybay_plugin_host.h"
#include "passphrase_internal.h"

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
uint32_t pp_calibration_cap_kib(uint32_t lanes) {
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

/* Chooses whatever of memory / iterations was not given (docs/plugins.md), with memory
   at most `cap` (pp_calibration_cap_kib). */
keybay_status pp_calibrate(const keybay_host *host, const pp_options *o, uint32_t cap,
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
