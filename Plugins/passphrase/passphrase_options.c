// SPDX-License-Identifier: Apache-2.0
/* The passphrase method's enroll options: memory-kib, iterations, lanes and target-ms, each
   checked against the caps before anything is asked or calibrated. */
#define _POSIX_C_SOURCE 200809L

#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "keybay_plugin_host.h"
#include "passphrase_internal.h"

static const char *const pp_option_names[3] = {"memory-kib", "iterations", "lanes"};

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

keybay_status pp_parse_options(const keybay_host *host, const keybay_option *options,
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
