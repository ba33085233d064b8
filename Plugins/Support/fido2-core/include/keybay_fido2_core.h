// SPDX-License-Identifier: Apache-2.0
/*
 * keybay_fido2_core.h — the FIDO2 hmac-secret method, shared by the shipped plugin
 * (libkeybay-fido2.so, Plugins/fido2/plugin.c) and the test build that talks to a virtual
 * authenticator (libkeybay-test-fido2.so). Nothing here is exported from either library: the
 * functions are hidden and each library exports only its own keybay_plugin_entry_v1.
 *
 * The public parameters are documented at the top of fido2_core.c; the offsets are below.
 */
#ifndef KEYBAY_FIDO2_CORE_H
#define KEYBAY_FIDO2_CORE_H

#include <stddef.h>
#include <stdint.h>

#include <fido.h>

#include "keybay_plugin.h"
#include "keybay_plugin_descriptor.h"

#define KEYBAY_FIDO2_HIDDEN __attribute__((visibility("hidden")))

/* ---- public parameters (big-endian) ---- */
#define KEYBAY_FIDO2_FORMAT 1u
#define KEYBAY_FIDO2_MODE_PIN 0x01u
#define KEYBAY_FIDO2_MODE_PRESENCE 0x02u
#define KEYBAY_FIDO2_MODE_UV 0x04u
#define KEYBAY_FIDO2_MODE_MASK 0x07u
#define KEYBAY_FIDO2_PRF_INPUT_BYTES 32u
#define KEYBAY_FIDO2_PUBLIC_KEY_BYTES 64u /* P-256 x | y */
#define KEYBAY_FIDO2_OFFSET_FORMAT 0u
#define KEYBAY_FIDO2_OFFSET_MODES 1u
#define KEYBAY_FIDO2_OFFSET_PRF_INPUT 2u
#define KEYBAY_FIDO2_OFFSET_PUBLIC_KEY 34u
#define KEYBAY_FIDO2_OFFSET_RP_LENGTH 98u
#define KEYBAY_FIDO2_OFFSET_RP 99u
#define KEYBAY_FIDO2_MAX_RP_BYTES 253u
#define KEYBAY_FIDO2_MIN_CREDENTIAL_ID_BYTES 16u
#define KEYBAY_FIDO2_MAX_CREDENTIAL_ID_BYTES 1023u
#define KEYBAY_FIDO2_FIXED_BYTES 101u /* everything but the rp id and the credential id */
#define KEYBAY_FIDO2_DEFAULT_RP "keybay.local"

/* ---- where security keys come from ---- */
#define KEYBAY_FIDO2_PATH_MAX 256
#define KEYBAY_FIDO2_MAX_DEVICES 16

typedef struct keybay_fido2_device_opener {
    /* Writes the paths of the FIDO devices present (at most `capacity`) and their number to
       *count; returns 0, or -1 if the list could not be read. Never prompts. */
    int (*list)(char paths[][KEYBAY_FIDO2_PATH_MAX], size_t capacity, size_t *count);
    /* A new, unopened device for `path`; the core opens it with fido_dev_open(dev, path). It
       must come from the libfido2.so.1 the core opens on first use (called only after that;
       a library that links libfido2 has that same copy). */
    fido_dev_t *(*new_device)(const char *path);
} keybay_fido2_device_opener;

/* Replaces how devices are listed and opened (NULL restores the real HID devices). The test
   plugin points this at the virtual authenticator. */
KEYBAY_FIDO2_HIDDEN void keybay_fido2_set_device_opener(const keybay_fido2_device_opener *opener);

/* The method operations (keybay_plugin.h semantics). */
KEYBAY_FIDO2_HIDDEN void keybay_fido2_free_buffer(keybay_buffer *buffer);
KEYBAY_FIDO2_HIDDEN keybay_status keybay_fido2_probe(const keybay_host *host);
KEYBAY_FIDO2_HIDDEN keybay_status keybay_fido2_enroll(const keybay_host *host, const keybay_option *options,
                                                      size_t option_count, keybay_buffer *params_out,
                                                      uint8_t secret_out[KEYBAY_METHOD_SECRET_BYTES]);
KEYBAY_FIDO2_HIDDEN keybay_status keybay_fido2_unwrap(const keybay_host *host, const uint8_t *params,
                                                      size_t params_length,
                                                      uint8_t secret_out[KEYBAY_METHOD_SECRET_BYTES]);
KEYBAY_FIDO2_HIDDEN keybay_status keybay_fido2_describe(const keybay_host *host, const uint8_t *params,
                                                        size_t params_length, keybay_buffer *text_out);

/* The enroll options (device, rp, pin, presence, uv), for the descriptor. */
#define KEYBAY_FIDO2_OPTION_COUNT 5u
KEYBAY_FIDO2_HIDDEN extern const keybay_option_spec keybay_fido2_option_specs[KEYBAY_FIDO2_OPTION_COUNT];

/* The descriptor of a plugin built on this core, so that the test plugin cannot drift from the
   shipped one: only the id, the display name and what it needs in the sandbox differ. */
#define KEYBAY_FIDO2_DESCRIPTOR(id_, name_, sandbox_)                                             \
    {                                                                                             \
        KEYBAY_DESCRIPTOR((id_), (name_), "1.0", KEYBAY_KIND_METHOD,                               \
                          KEYBAY_FLAG_INTERACTIVE | KEYBAY_FLAG_NEEDS_DEVICE),                     \
        .options = keybay_fido2_option_specs, .option_count = KEYBAY_FIDO2_OPTION_COUNT,           \
        .free_buffer = keybay_fido2_free_buffer, KEYBAY_METHOD_OPERATIONS(keybay_fido2_),          \
        .sandbox = (sandbox_),                                                                     \
    }

#endif /* KEYBAY_FIDO2_CORE_H */
