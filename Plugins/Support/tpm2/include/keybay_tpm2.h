// SPDX-License-Identifier: Apache-2.0
/*
 * keybay_tpm2.h — what the first-party TPM plugins share (the tpm2 root, the tpm2-pin method):
 * tpm2-tss opened with dlopen on first use, the choice of TPM (the device alone unless
 * KEYBAY_TPM2_TCTI names a TCTI of tss2's), one deadline for a whole operation
 * (KEYBAY_TPM2_TIMEOUT_MS, at most 30 s) enforced by a TCTI that gives up, this user's processes
 * taking turns on a TPM (a lock file per TCTI), the storage primary and policy sessions. Not
 * installed, not part of the ABI. Every failure has called set_error naming the TPM.
 *
 * An operation: keybay_tpm2_begin (nothing reached yet: a bad variable is refused first), then
 * keybay_tpm2_lock in the user's <state_home>/keybay directory, then keybay_tpm2_connect, and
 * keybay_tpm2_close whatever happened.
 */
#ifndef KEYBAY_TPM2_H
#define KEYBAY_TPM2_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

/* OpenSSL's low-level P-256 and AES functions (tpm2-pin's session, keybay_tpm2_session.h); the
   AES ones are deprecated in OpenSSL 3 in favour of EVP, whose first use in a process sets up
   OpenSSL's default library context, more work than the TPM command it would serve. */
#ifndef OPENSSL_SUPPRESS_DEPRECATED
#define OPENSSL_SUPPRESS_DEPRECATED
#endif
#include <openssl/aes.h>
#include <openssl/bn.h>
#include <openssl/ec.h>
#include <tss2/tss2_esys.h>
#include <tss2/tss2_mu.h>
#include <tss2/tss2_rc.h>
#include <tss2/tss2_sys.h>
#include <tss2/tss2_tctildr.h>

#include "keybay_plugin.h"

#pragma GCC visibility push(hidden)

/* The tss2 functions the plugins call, and libcrypto's that tpm2-pin's session calls (tss2's
   ESAPI links libcrypto anyway), resolved from these libraries on first use. */
#define KEYBAY_TSS_FUNCTIONS(X) \
    X(KEYBAY_TSS_ESYS, Esys_Initialize) \
    X(KEYBAY_TSS_ESYS, Esys_Finalize) \
    X(KEYBAY_TSS_ESYS, Esys_Free) \
    X(KEYBAY_TSS_ESYS, Esys_CreatePrimary) \
    X(KEYBAY_TSS_ESYS, Esys_Create) \
    X(KEYBAY_TSS_ESYS, Esys_Load) \
    X(KEYBAY_TSS_ESYS, Esys_Unseal) \
    X(KEYBAY_TSS_ESYS, Esys_FlushContext) \
    X(KEYBAY_TSS_ESYS, Esys_StartAuthSession) \
    X(KEYBAY_TSS_ESYS, Esys_TRSess_SetAttributes) \
    X(KEYBAY_TSS_ESYS, Esys_PolicyPCR) \
    X(KEYBAY_TSS_ESYS, Esys_PCR_Read) \
    X(KEYBAY_TSS_ESYS, Esys_LoadExternal) \
    X(KEYBAY_TSS_ESYS, Esys_VerifySignature) \
    X(KEYBAY_TSS_ESYS, Esys_PolicyAuthValue) \
    X(KEYBAY_TSS_ESYS, Esys_PolicyGetDigest) \
    X(KEYBAY_TSS_ESYS, Esys_NV_DefineSpace) \
    X(KEYBAY_TSS_ESYS, Esys_NV_UndefineSpace) \
    X(KEYBAY_TSS_ESYS, Esys_NV_Increment) \
    X(KEYBAY_TSS_ESYS, Esys_NV_Read) \
    X(KEYBAY_TSS_ESYS, Esys_TR_FromTPMPublic) \
    X(KEYBAY_TSS_ESYS, Esys_TR_GetName) \
    X(KEYBAY_TSS_ESYS, Esys_TR_SetAuth) \
    X(KEYBAY_TSS_ESYS, Esys_TR_Close) \
    X(KEYBAY_TSS_ESYS, Esys_GetCapability) \
    X(KEYBAY_TSS_ESYS, Esys_GetSysContext) \
    X(KEYBAY_TSS_SYS, Tss2_Sys_CreatePrimary) \
    X(KEYBAY_TSS_SYS, Tss2_Sys_Load) \
    X(KEYBAY_TSS_SYS, Tss2_Sys_StartAuthSession) \
    X(KEYBAY_TSS_SYS, Tss2_Sys_PolicyPCR) \
    X(KEYBAY_TSS_SYS, Tss2_Sys_PolicyAuthValue) \
    X(KEYBAY_TSS_SYS, Tss2_Sys_PolicyAuthorize) \
    X(KEYBAY_TSS_SYS, Tss2_Sys_Unseal_Prepare) \
    X(KEYBAY_TSS_SYS, Tss2_Sys_Unseal_Complete) \
    X(KEYBAY_TSS_SYS, Tss2_Sys_SetCmdAuths) \
    X(KEYBAY_TSS_SYS, Tss2_Sys_Execute) \
    X(KEYBAY_TSS_SYS, Tss2_Sys_GetRspAuths) \
    X(KEYBAY_TSS_SYS, Tss2_Sys_GetRpBuffer) \
    X(KEYBAY_TSS_SYS, Tss2_Sys_FlushContext) \
    X(KEYBAY_TSS_TCTILDR, Tss2_TctiLdr_Initialize_Ex) \
    X(KEYBAY_TSS_TCTILDR, Tss2_TctiLdr_Finalize) \
    X(KEYBAY_TSS_MU, Tss2_MU_TPM2B_PUBLIC_Marshal) \
    X(KEYBAY_TSS_MU, Tss2_MU_TPM2B_PUBLIC_Unmarshal) \
    X(KEYBAY_TSS_MU, Tss2_MU_TPM2B_PRIVATE_Marshal) \
    X(KEYBAY_TSS_MU, Tss2_MU_TPM2B_PRIVATE_Unmarshal) \
    X(KEYBAY_TSS_MU, Tss2_MU_TPMT_PUBLIC_Marshal) \
    X(KEYBAY_TSS_MU, Tss2_MU_TPMS_ECC_POINT_Marshal) \
    X(KEYBAY_TSS_RC, Tss2_RC_Decode) \
    X(KEYBAY_TSS_CRYPTO, EC_GROUP_new_by_curve_name) \
    X(KEYBAY_TSS_CRYPTO, EC_GROUP_free) \
    X(KEYBAY_TSS_CRYPTO, EC_GROUP_get0_order) \
    X(KEYBAY_TSS_CRYPTO, EC_POINT_new) \
    X(KEYBAY_TSS_CRYPTO, EC_POINT_clear_free) \
    X(KEYBAY_TSS_CRYPTO, EC_POINT_set_affine_coordinates) \
    X(KEYBAY_TSS_CRYPTO, EC_POINT_get_affine_coordinates) \
    X(KEYBAY_TSS_CRYPTO, EC_POINT_is_on_curve) \
    X(KEYBAY_TSS_CRYPTO, EC_POINT_is_at_infinity) \
    X(KEYBAY_TSS_CRYPTO, EC_POINT_mul) \
    X(KEYBAY_TSS_CRYPTO, BN_new) \
    X(KEYBAY_TSS_CRYPTO, BN_bin2bn) \
    X(KEYBAY_TSS_CRYPTO, BN_bn2binpad) \
    X(KEYBAY_TSS_CRYPTO, BN_clear_free) \
    X(KEYBAY_TSS_CRYPTO, BN_is_zero) \
    X(KEYBAY_TSS_CRYPTO, BN_cmp) \
    X(KEYBAY_TSS_CRYPTO, BN_CTX_new) \
    X(KEYBAY_TSS_CRYPTO, BN_CTX_free) \
    X(KEYBAY_TSS_CRYPTO, AES_set_encrypt_key) \
    X(KEYBAY_TSS_CRYPTO, AES_cfb128_encrypt)

enum { KEYBAY_TSS_ESYS, KEYBAY_TSS_SYS, KEYBAY_TSS_TCTILDR, KEYBAY_TSS_MU, KEYBAY_TSS_RC, KEYBAY_TSS_CRYPTO, KEYBAY_TSS_LIBRARIES };

#define KEYBAY_TSS_POINTER(lib, name) __typeof__(name) *name;
struct keybay_tss {
    KEYBAY_TSS_FUNCTIONS(KEYBAY_TSS_POINTER)
};
#undef KEYBAY_TSS_POINTER
/* Filled only when every symbol resolved (keybay_tpm2_begin succeeded once). */
extern struct keybay_tss keybay_tss;
#define T(name) (keybay_tss.name)

/* Opens tpm2-tss once per process: NULL when every symbol resolved, else why not. */
const char *keybay_tpm2_load_tss(void);

#define KEYBAY_TPM2_TIMEOUT_MAX_MS 30000L /* the bound of every operation (docs/security.md) */
#define KEYBAY_TPM2_TCTI_MAX_BYTES 256
#define KEYBAY_TPM2_DEFAULT_DEVICE "/dev/tpmrm0"
#define KEYBAY_TPM2_FALLBACK_DEVICE "/dev/tpm0"

typedef struct keybay_tpm2_bounded keybay_tpm2_bounded;

/* One operation's TPM. */
typedef struct keybay_tpm2 {
    keybay_tpm2_bounded *tcti; /* what Esys talks to: ours, in front of tss2's */
    ESYS_CONTEXT *esys;
    int lock;                 /* the lock file, held (flock) from lock to close; -1 when none */
    long timeout_ms;
    struct timespec deadline; /* CLOCK_MONOTONIC: the operation gives up then */
    const char *device;       /* the device file a device TCTI opens (for messages), or NULL */
    const char *plugin;       /* "tpm2", "tpm2-pin": who speaks, in messages */
    const char *user;         /* "tpm2 root", "tpm2-pin method": who needs the TPM, in messages */
    char library[40];         /* libtss2-tcti-<name>.so.0 */
    char conf[KEYBAY_TPM2_TCTI_MAX_BYTES]; /* the TCTI's configuration; "" for its own default */
    char where[KEYBAY_TPM2_TCTI_MAX_BYTES + 64]; /* "the TPM at KEYBAY_TPM2_TCTI=swtpm:..." or "the TPM at /dev/tpmrm0 (...)" */
} keybay_tpm2;

static inline void keybay_tpm2_put_be(uint8_t *p, uint64_t v, int n) { for (int i = 0; i < n; i++) p[i] = (uint8_t)(v >> (8 * (n - 1 - i))); }
static inline uint64_t keybay_tpm2_get_be(const uint8_t *p, int n) { uint64_t v = 0; for (int i = 0; i < n; i++) v = v << 8 | p[i]; return v; }

/* A response code of the TPM itself (not of tss2's layers), and without its handle, session or
   parameter number. */
int keybay_tpm2_rc_is_tpm(TSS2_RC rc);
TSS2_RC keybay_tpm2_rc_base(TSS2_RC rc);

/* "the TPM at KEYBAY_TPM2_TCTI=..." or "the TPM at /dev/tpmrm0 (the default: ...)". */
void keybay_tpm2_describe_tcti(char *out, size_t size);

/* Chooses the TPM and the bound from the environment (INVALID_OPTION for a bad value, before
   anything is loaded), starts the deadline and loads tss2 (NOT_AVAILABLE without it). */
keybay_status keybay_tpm2_begin(const keybay_host *host, keybay_tpm2 *t, const char *plugin, const char *user);

/* Takes this user's turn on the TPM: <keybay_dir>/tpm2-<hash of the TCTI>.lock (created 0600),
   waited for until the deadline. `keybay_dir` is an open <state_home>/keybay directory, its path
   for messages; without `create`, a read-only directory without the file goes on unlocked. */
keybay_status keybay_tpm2_lock(const keybay_host *host, keybay_tpm2 *t, int keybay_dir, const char *keybay_dir_path, int create);

/* Reaches the TPM (NOT_AVAILABLE saying why not); closes `t` on failure. */
keybay_status keybay_tpm2_connect(const keybay_host *host, keybay_tpm2 *t);

/* Releases what begin, lock and connect took; safe on a zeroed or half-opened `t`. */
void keybay_tpm2_close(keybay_tpm2 *t);

/* A plugin's probe: OK when tpm2-tss loads, the variables are valid and, for a device (the
   default /dev/tpmrm0 or /dev/tpm0, or KEYBAY_TPM2_TCTI=device:...), it exists and this user may
   read and write it; else NOT_AVAILABLE saying why (reason no-tpm, device-permission,
   tcti-refused, ...). The TPM itself is not reached: a simulator or resource manager that
   KEYBAY_TPM2_TCTI names is taken as there, and a probe never blocks for long. */
keybay_status keybay_tpm2_probe(const keybay_host *host, const char *plugin, const char *user);

/* Why the TPM cannot be used (timed out, device missing or not this user's, what tss2 said). */
keybay_status keybay_tpm2_unreachable(const keybay_host *host, const keybay_tpm2 *t, TSS2_RC rc);

/* A failed command: unreachable, LOCKED in dictionary-attack lockout, or `status` with "what on
   <the TPM>: <tss2's decoding>". */
keybay_status keybay_tpm2_fail(const keybay_host *host, const keybay_tpm2 *t, TSS2_RC rc, keybay_status status, const char *what);

/* Flushes transient objects or sessions left by killed processes when `rc` says the TPM's
   memory is full (no resource manager); 1 if something was flushed (try once more). */
int keybay_tpm2_flush_leftovers(keybay_tpm2 *t, TSS2_RC rc);
void keybay_tpm2_flush(keybay_tpm2 *t, ESYS_TR *handle);

/* The primary storage key, re-created from its fixed template (ECC P-256, AES-128-CFB, noDA)
   under the owner hierarchy. */
keybay_status keybay_tpm2_create_primary(const keybay_host *host, keybay_tpm2 *t, ESYS_TR *primary);

/* That template, and the error of a CreatePrimary that failed with `rc` (the owner hierarchy's
   password named), for the SAPI form of keybay_tpm2_create_primary (keybay_tpm2_session.h). */
void keybay_tpm2_primary_template(TPM2B_PUBLIC *template);
keybay_status keybay_tpm2_primary_failed(const keybay_host *host, const keybay_tpm2 *t, TSS2_RC rc);

/* Re-creates the primary and loads a sealed object (`private`, `public`) under it; a full object
   memory flushes the leftovers and both are tried once more. OK: both loaded (the caller flushes
   them). A failed primary: its status, explained, *rc 0. A failed load: INTERNAL, unexplained,
   with the TPM's answer in *rc for the caller to explain (another TPM's object is a format-one
   error), nothing left loaded. */
keybay_status keybay_tpm2_load_sealed(const keybay_host *host, keybay_tpm2 *t, const TPM2B_PRIVATE *private, const TPM2B_PUBLIC *public,
                                      ESYS_TR *primary, ESYS_TR *object, TSS2_RC *rc);

/* PCR selection (SHA-256 bank) from a bit mask of PCRs 0-23. */
TPML_PCR_SELECTION keybay_tpm2_pcr_selection(uint32_t mask);

/* A policy (or trial) session with PolicyPCR over `pcr_mask` (when not 0) at the PCRs' current
   values, then PolicyAuthValue (when `auth_value`). With a `salt_key` (a loaded decryption key,
   the primary) the session is salted and encrypts with AES-128-CFB; without, it is unsalted and
   has no symmetric algorithm. */
keybay_status keybay_tpm2_policy_session(const keybay_host *host, keybay_tpm2 *t, TPM2_SE type, ESYS_TR salt_key, uint32_t pcr_mask,
                                         int auth_value, ESYS_TR *session);

#define KEYBAY_TPM2_PCRS 24
#define KEYBAY_TPM2_PCR_MASK 0x00ffffffu

/* The SHA-256 values of the PCRs in `mask` into values[pcr] (the others untouched). */
keybay_status keybay_tpm2_read_pcrs(const keybay_host *host, keybay_tpm2 *t, uint32_t mask, uint8_t values[KEYBAY_TPM2_PCRS][32]);

/* The policy digest of a trial session with PolicyPCR over `mask` (SHA-256 bank) alone, when the
   PCRs hold `values`: what TPM2_PolicyGetDigest would give, computed here. */
void keybay_tpm2_pcr_policy(uint32_t mask, const uint8_t values[KEYBAY_TPM2_PCRS][32], uint8_t digest[32]);

/* The PCRs of `mask` whose `recorded` and `now` values differ. */
uint32_t keybay_tpm2_pcrs_differing(uint32_t mask, const uint8_t recorded[KEYBAY_TPM2_PCRS][32], const uint8_t now[KEYBAY_TPM2_PCRS][32]);

/* "0,7": the PCRs of `mask`, for messages and reports; -1 when `size` is too small. */
int keybay_tpm2_format_pcrs(uint32_t mask, char *out, size_t size);

/* ---- signed PCR policies (tpm2_signed_policy.c): systemd-measure's tpm2-pcr-signature.json ---- */

#define KEYBAY_TPM2_MAX_SPKI 600
#define KEYBAY_TPM2_MAX_SIGNATURE 512
#define KEYBAY_TPM2_MAX_SIGNATURE_FILE 65536
#define KEYBAY_TPM2_DEFAULT_SIGNATURES "/run/systemd/tpm2-pcr-signature.json", "/usr/lib/systemd/tpm2-pcr-signature.json"

/* A key that signs PCR policies: RSA-2048 or EC P-256. */
typedef struct keybay_tpm2_signing_key {
    uint8_t der[KEYBAY_TPM2_MAX_SPKI]; /* its DER SubjectPublicKeyInfo */
    size_t der_length;
    uint8_t fingerprint[32];           /* systemd's "pkfp": SHA-256 of the RSAPublicKey DER, or of the EC point (04 | x | y) */
    TPM2B_PUBLIC public;               /* as TPM2_LoadExternal loads it */
    TPM2B_NAME name;                   /* its TPM name */
    uint8_t policy[32];                /* PolicyAuthorize's digest for it (policyRef empty): an object's authPolicy */
} keybay_tpm2_signing_key;

/* The key of a DER SubjectPublicKeyInfo, or of a PEM file (-----BEGIN PUBLIC KEY-----);
   INVALID_OPTION (reason invalid-public-key) for anything but RSA-2048 and EC P-256. tss2 must
   be loaded (the name marshals the public area). */
keybay_status keybay_tpm2_signing_key_from_der(const keybay_host *host, const uint8_t *spki, size_t length, keybay_tpm2_signing_key *key);
keybay_status keybay_tpm2_signing_key_from_pem(const keybay_host *host, const char *path, keybay_tpm2_signing_key *key);

/* `spki:LP16 | path:LP16` (the root file's and tpm2-pin's parameters' record of a signed policy)
   into `out`: its length, 0 when it does not fit `capacity`. */
size_t keybay_tpm2_signed_encode(const keybay_tpm2_signing_key *key, const char *path, uint8_t *out, size_t capacity);

/* The signature (at most KEYBAY_TPM2_MAX_SIGNATURE bytes) in the JSON file `path` of the first
   sha256 entry whose pkfp is the key's, whose pcrs are exactly `pcrs` and whose pol is `policy`;
   *found 0 when none is, or the file does not exist. A file that is not that JSON is
   ROOT_MISMATCH (reason invalid-pcr-signature). */
keybay_status keybay_tpm2_find_signature(const keybay_host *host, const char *path, const keybay_tpm2_signing_key *key, uint32_t pcrs,
                                         const uint8_t policy[32], uint8_t *signature, size_t *signature_length, int *found);

/* TPM2_LoadExternal of the key (owner hierarchy), then TPM2_VerifySignature of `signature` over
   SHA-256(policy): *valid and the ticket (Esys_Free it) when it verifies; *valid 0 when it does
   not (or is malformed). */
keybay_status keybay_tpm2_verify_signature(const keybay_host *host, keybay_tpm2 *t, const keybay_tpm2_signing_key *key, const uint8_t policy[32],
                                           const uint8_t *signature, size_t length, TPMT_TK_VERIFIED **ticket, int *valid);

#define KEYBAY_TPM2_SIGNATURE_PATH_BYTES 1024

/* `path`, or when it is "" the first of systemd's signature files that exists; NULL when none does. */
const char *keybay_tpm2_signature_file(const char *path);

/* The ticket of a verified signature in `path`'s file (keybay_tpm2_signature_file) that
   authorizes `policy` (the PolicyPCR digest of `pcrs`' values now) for `key`: *ticket (Esys_Free
   it), or NULL when no entry matches or its signature does not verify. */
keybay_status keybay_tpm2_signed_ticket(const keybay_host *host, keybay_tpm2 *t, const keybay_tpm2_signing_key *key, const char *path,
                                        uint32_t pcrs, const uint8_t policy[32], TPMT_TK_VERIFIED **ticket);

/* pcrs=, pcr-public-key=, pcr-signature= and (when `recovery` is not NULL) recovery=yes|no;
   INVALID_OPTION for any other (reasons: docs/plugins.md). A key without pcrs binds PCR 11. */
keybay_status keybay_tpm2_parse_policy_options(const keybay_host *host, const char *plugin, const keybay_option *options, size_t count,
                                               uint32_t *pcrs, int *recovery, const char **public_key, const char **signature);

/* `pcrs=7` or `pcrs=0,2,7` (PCRs 0-23 of the SHA-256 bank), the only option either plugin takes:
   INVALID_OPTION for any other, or a bad value. */
keybay_status keybay_tpm2_parse_pcrs(const keybay_host *host, const char *plugin, const keybay_option *options, size_t count,
                                     uint32_t *mask);

#pragma GCC visibility pop

#endif /* KEYBAY_TPM2_H */
