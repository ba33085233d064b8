// SPDX-License-Identifier: Apache-2.0
/* The fido2 core's public parameters (docs/fido2.md) and enroll options: fido2_internal.h. */
#define _POSIX_C_SOURCE 200809L

#include "fido2_internal.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <sodium.h>

#include "keybay_plugin_host.h"

_Static_assert(KEYBAY_FIDO2_OFFSET_PUBLIC_KEY == KEYBAY_FIDO2_OFFSET_PRF_INPUT + KEYBAY_FIDO2_PRF_INPUT_BYTES, "layout");
_Static_assert(KEYBAY_FIDO2_OFFSET_RP_LENGTH == KEYBAY_FIDO2_OFFSET_PUBLIC_KEY + KEYBAY_FIDO2_PUBLIC_KEY_BYTES, "layout");
_Static_assert(KEYBAY_FIDO2_FIXED_BYTES == KEYBAY_FIDO2_OFFSET_RP + 2u, "layout");

/* ---------------------------------------------------------------- parameters */

static int f2_valid_rp(const char *rp, size_t length) {
    if (length < 1 || length > KEYBAY_FIDO2_MAX_RP_BYTES) return 0;
    for (size_t i = 0; i < length; i++) {
        char c = rp[i];
        int alnum = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
        if (!alnum && (i == 0 || (c != '.' && c != '-'))) return 0;
    }
    return 1;
}

/* The relying party a credential gets when no rp= option is given: the application's own, so
 * two applications' credentials are for different parties (except ids that differ only in case
 * or in '_' against '-', which map to one rp id; the credential itself is still per store). The
 * application id
 * ([A-Za-z0-9][A-Za-z0-9._-]{0,119}) lowercased, '_' as '-', then ".keybay.local"; a host that
 * names no application (an older host, plugin-check) gets "keybay.local" itself. */
static void f2_default_rp(const keybay_host *host, char out[KEYBAY_FIDO2_MAX_RP_BYTES + 1]) {
    const char *app = KEYBAY_HOST_HAS(host, application_id) ? host->application_id : NULL;
    size_t n = app != NULL ? strlen(app) : 0;
    if (n == 0 || n > 120) {
        strcpy(out, KEYBAY_FIDO2_DEFAULT_RP);
        return;
    }
    for (size_t i = 0; i < n; i++) {
        char c = app[i];
        out[i] = c >= 'A' && c <= 'Z' ? (char)(c - 'A' + 'a') : c == '_' ? '-' : c;
    }
    out[n] = '.';
    strcpy(out + n + 1, KEYBAY_FIDO2_DEFAULT_RP);
    if (!f2_valid_rp(out, strlen(out))) strcpy(out, KEYBAY_FIDO2_DEFAULT_RP); /* not an application id */
}

static uint16_t f2_get_u16(const uint8_t *p) { return (uint16_t)((p[0] << 8) | p[1]); }

/* Strict decoding; allocates nothing, asks nothing. `host` may be NULL (describe). */
keybay_status f2_decode(const keybay_host *host, const uint8_t *params, size_t length, f2_params *out) {
    if (params == NULL) length = 0;
    if (length < KEYBAY_FIDO2_FIXED_BYTES + 1 + KEYBAY_FIDO2_MIN_CREDENTIAL_ID_BYTES) {
        keybay_host_error(host, "fido2 params: length is %zu bytes, at least %u expected", length,
                 KEYBAY_FIDO2_FIXED_BYTES + 1 + KEYBAY_FIDO2_MIN_CREDENTIAL_ID_BYTES);
        return KEYBAY_ERR_MALFORMED_PARAMS;
    }
    if (params[KEYBAY_FIDO2_OFFSET_FORMAT] != KEYBAY_FIDO2_FORMAT) {
        keybay_host_error(host, "fido2 params: format %u is not supported (expected %u)", params[0], KEYBAY_FIDO2_FORMAT);
        return KEYBAY_ERR_MALFORMED_PARAMS;
    }
    uint8_t modes = params[KEYBAY_FIDO2_OFFSET_MODES];
    if ((modes & ~KEYBAY_FIDO2_MODE_MASK) != 0) {
        keybay_host_error(host, "fido2 params: modes 0x%02x has unknown bits", modes);
        return KEYBAY_ERR_MALFORMED_PARAMS;
    }
    size_t rp_length = params[KEYBAY_FIDO2_OFFSET_RP_LENGTH];
    if (rp_length < 1 || rp_length > KEYBAY_FIDO2_MAX_RP_BYTES ||
        length < KEYBAY_FIDO2_FIXED_BYTES + rp_length) {
        keybay_host_error(host, "fido2 params: rp_length %zu is out of range (1 to %u, within %zu bytes)", rp_length,
                 KEYBAY_FIDO2_MAX_RP_BYTES, length);
        return KEYBAY_ERR_MALFORMED_PARAMS;
    }
    const char *rp = (const char *)params + KEYBAY_FIDO2_OFFSET_RP;
    if (!f2_valid_rp(rp, rp_length)) {
        keybay_host_error(host, "fido2 params: rp_id is not [a-z0-9][a-z0-9.-]*");
        return KEYBAY_ERR_MALFORMED_PARAMS;
    }
    size_t cred_length = f2_get_u16(params + KEYBAY_FIDO2_OFFSET_RP + rp_length);
    if (cred_length < KEYBAY_FIDO2_MIN_CREDENTIAL_ID_BYTES || cred_length > KEYBAY_FIDO2_MAX_CREDENTIAL_ID_BYTES) {
        keybay_host_error(host, "fido2 params: cred_id_length %zu is out of range (%u to %u)", cred_length,
                 KEYBAY_FIDO2_MIN_CREDENTIAL_ID_BYTES, KEYBAY_FIDO2_MAX_CREDENTIAL_ID_BYTES);
        return KEYBAY_ERR_MALFORMED_PARAMS;
    }
    if (length != KEYBAY_FIDO2_FIXED_BYTES + rp_length + cred_length) {
        keybay_host_error(host, "fido2 params: length is %zu bytes, the fields add up to %zu", length,
                 (size_t)KEYBAY_FIDO2_FIXED_BYTES + rp_length + cred_length);
        return KEYBAY_ERR_MALFORMED_PARAMS;
    }
    out->modes = modes;
    memcpy(out->prf_input, params + KEYBAY_FIDO2_OFFSET_PRF_INPUT, KEYBAY_FIDO2_PRF_INPUT_BYTES);
    memcpy(out->public_key, params + KEYBAY_FIDO2_OFFSET_PUBLIC_KEY, KEYBAY_FIDO2_PUBLIC_KEY_BYTES);
    memcpy(out->rp, rp, rp_length);
    out->rp[rp_length] = '\0';
    out->cred_id_length = cred_length;
    out->cred_id = params + KEYBAY_FIDO2_FIXED_BYTES + rp_length;
    return KEYBAY_OK;
}

uint8_t *f2_encode(const f2_params *p, size_t *length_out) {
    size_t rp_length = strlen(p->rp);
    size_t length = KEYBAY_FIDO2_FIXED_BYTES + rp_length + p->cred_id_length;
    uint8_t *out = malloc(length);
    if (out == NULL) return NULL;
    out[KEYBAY_FIDO2_OFFSET_FORMAT] = KEYBAY_FIDO2_FORMAT;
    out[KEYBAY_FIDO2_OFFSET_MODES] = p->modes;
    memcpy(out + KEYBAY_FIDO2_OFFSET_PRF_INPUT, p->prf_input, KEYBAY_FIDO2_PRF_INPUT_BYTES);
    memcpy(out + KEYBAY_FIDO2_OFFSET_PUBLIC_KEY, p->public_key, KEYBAY_FIDO2_PUBLIC_KEY_BYTES);
    out[KEYBAY_FIDO2_OFFSET_RP_LENGTH] = (uint8_t)rp_length;
    memcpy(out + KEYBAY_FIDO2_OFFSET_RP, p->rp, rp_length);
    out[KEYBAY_FIDO2_OFFSET_RP + rp_length] = (uint8_t)(p->cred_id_length >> 8);
    out[KEYBAY_FIDO2_OFFSET_RP + rp_length + 1] = (uint8_t)p->cred_id_length;
    memcpy(out + KEYBAY_FIDO2_FIXED_BYTES + rp_length, p->cred_id, p->cred_id_length);
    *length_out = length;
    return out;
}

/* ---------------------------------------------------------------- options */

static int f2_parse_mode(const char *value) {
    if (value == NULL) return -2;
    if (strcmp(value, "required") == 0) return 1;
    if (strcmp(value, "no") == 0) return 0;
    return -2;
}

keybay_status f2_parse_options(const keybay_host *host, const keybay_option *options, size_t count,
                                      f2_options *o) {
    memset(o, 0, sizeof *o);
    o->pin = o->presence = o->uv = -1;
    f2_default_rp(host, o->rp);
    int seen_rp = 0, seen_device = 0;
    if (count > 0 && options == NULL) {
        keybay_host_error(host, "fido2: %zu options announced but none passed", count);
        return KEYBAY_ERR_INVALID_OPTION;
    }
    for (size_t i = 0; i < count; i++) {
        const char *name = options[i].name, *value = options[i].value;
        if (name == NULL || value == NULL) {
            keybay_host_error(host, "fido2: option %zu has no name or value", i + 1);
            return KEYBAY_ERR_INVALID_OPTION;
        }
        int *mode = NULL;
        if (strcmp(name, "pin") == 0) mode = &o->pin;
        else if (strcmp(name, "presence") == 0) mode = &o->presence;
        else if (strcmp(name, "uv") == 0) mode = &o->uv;
        if (mode != NULL) {
            if (*mode != -1) goto twice;
            *mode = f2_parse_mode(value);
            if (*mode < 0) {
                keybay_host_error(host, "fido2: option %s must be 'required' or 'no', not '%.32s'", name, value);
                return KEYBAY_ERR_INVALID_OPTION;
            }
        } else if (strcmp(name, "rp") == 0) {
            if (seen_rp++) goto twice;
            size_t l = strlen(value);
            if (!f2_valid_rp(value, l)) {
                keybay_host_error(host, "fido2: option rp must be 1 to %u characters of [a-z0-9.-] starting with a letter or digit",
                         KEYBAY_FIDO2_MAX_RP_BYTES);
                return KEYBAY_ERR_INVALID_OPTION;
            }
            memcpy(o->rp, value, l + 1);
        } else if (strcmp(name, "device") == 0) {
            if (seen_device++) goto twice;
            if (*value == '\0' || strlen(value) >= KEYBAY_FIDO2_PATH_MAX) {
                keybay_host_error(host, "fido2: option device must be a device path or 'auto'");
                return KEYBAY_ERR_INVALID_OPTION;
            }
            o->device = strcmp(value, "auto") == 0 ? NULL : value;
        } else {
            keybay_host_error(host, "fido2: unknown option '%.64s' (accepted: device, rp, pin, presence, uv)", name);
            return KEYBAY_ERR_INVALID_OPTION;
        }
        continue;
    twice:
        keybay_host_error(host, "fido2: option '%s' is given more than once", name);
        return KEYBAY_ERR_INVALID_OPTION;
    }
    return KEYBAY_OK;
}

