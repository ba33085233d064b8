// SPDX-License-Identifier: Apache-2.0
/*
 * keybay_virtual_authenticator.h — an in-process CTAP2 authenticator for tests (test support
 * only; never shipped). Up to KEYBAY_VA_MAX_DEVICES virtual security keys, reached through the
 * real libfido2 with fido_dev_set_io_functions + fido_dev_set_transport_functions: open the
 * device returned by keybay_va_new_device(path) with fido_dev_open(dev, path).
 *
 * Each device speaks CTAP 2.1 over the CTAPHID command layer (INIT, CBOR, CANCEL):
 * getInfo, clientPIN (getPINRetries, getKeyAgreement, getPinToken,
 * getPinUvAuthTokenUsingUvWithPermissions, getPinUvAuthTokenUsingPinWithPermissions; PIN/UV auth
 * protocols 1 and 2), makeCredential (ES256, packed self-attestation, hmac-secret) and
 * getAssertion (allow list, up/uv options, hmac-secret with separate CredRandomWithUV /
 * CredRandomWithoutUV). Credentials are not stored: a credential id is a random nonce plus a tag
 * made with the device's master secret (derived from its seed), and the credential's private key
 * and CredRandoms are derived from the master secret and the nonce, the way many real keys wrap
 * non-resident credentials. A device with another seed does not recognise the id.
 *
 * PIN retries: 8; every wrong PIN costs one; the 8th wrong PIN blocks the PIN
 * (CTAP2_ERR_PIN_BLOCKED) until the PIN is set again; three wrong PINs in a row without a
 * correct one block PIN entry (CTAP2_ERR_PIN_AUTH_BLOCKED) until the device is power-cycled
 * ("replug", or present=0 then present=1).
 *
 * Settings (keybay_va_set(index, name, value); values are decimal or text):
 *   present=0|1       the device is plugged in (listed and openable); 0 -> 1 is a power cycle
 *   pin=TEXT          sets the PIN (4..63 bytes) and resets the retries to 8; pin= (empty) clears it
 *   retries=N         PIN retries left (0..8); 0 means blocked
 *   deny=0|1          the user refuses the touch: CTAP2_ERR_OPERATION_DENIED
 *   timeout=0|1       nobody touches: CTAP2_ERR_USER_ACTION_TIMEOUT
 *   touch-delay-ms=N  the touch takes N ms (a CTAPHID_CANCEL meanwhile gives KEEPALIVE_CANCEL)
 *   uv=0|1            built-in user verification (a "fingerprint") is configured and succeeds
 *   force-uv=0|1      the device verifies the user on every request (UV flag always set)
 *   skip-up=0|1       the device never tests the user's presence: a request for it is answered
 *                     at once, with the UP flag clear and the answer signed all the same
 *   protocols=LIST    PIN/UV auth protocols offered, e.g. "2,1", "1", "2"
 *   permissions=0|1   offers pinUvAuthToken (CTAP 2.1 tokens with permissions)
 *   seed=TEXT         the master secret is SHA-256("keybay-va-seed" | 0 | TEXT)
 *   replug=1          power cycle: clears the in-a-row counter, new key agreement key, no token
 * keybay_va_get(index, name) reads: retries, touches, assertions, credentials, pin-failures,
 *   opens, present.
 * keybay_va_reset() restores the defaults: device 0 present, others absent; no PIN; protocols
 * "2,1"; permissions 1; seed "device-<index>".
 */
#ifndef KEYBAY_VIRTUAL_AUTHENTICATOR_H
#define KEYBAY_VIRTUAL_AUTHENTICATOR_H

#include <stddef.h>
#include <fido.h>

#define KEYBAY_VA_MAX_DEVICES 4
#define KEYBAY_VA_PATH_MAX 32

#define KEYBAY_VA_HIDDEN __attribute__((visibility("hidden")))

KEYBAY_VA_HIDDEN void keybay_va_reset(void);
/* 0 on success, -1 for an unknown device, name or value. */
KEYBAY_VA_HIDDEN int keybay_va_set(int index, const char *name, const char *value);
/* The value, or -1 for an unknown device or name. */
KEYBAY_VA_HIDDEN long keybay_va_get(int index, const char *name);
/* Writes the paths of the present devices ("virtual:<index>"); returns how many. */
KEYBAY_VA_HIDDEN size_t keybay_va_list(char paths[][KEYBAY_VA_PATH_MAX], size_t capacity);
/* A new, unopened fido_dev_t wired to the virtual devices (any path; open decides). */
KEYBAY_VA_HIDDEN fido_dev_t *keybay_va_new_device(void);

#endif
