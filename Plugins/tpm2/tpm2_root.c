// SPDX-License-Identifier: Apache-2.0
/*
 * tpm2 — the TPM 2.0 platform root, as a Keybay root plugin (libkeybay-tpm2.so).
 *
 * A 32-byte root key is sealed (a keyed-hash object, TPM2_Create) under a primary storage key
 * that the TPM re-creates from a fixed template under the owner hierarchy on every use, so
 * nothing persistent is kept in the TPM but the rollback floor: an NV counter the plugin
 * defines. The sealed object lives in <state_home>/keybay/<app>/tpm2-root.sealed; only this
 * machine's TPM loads it. The byte layouts (root file, provider state, templates) are specified
 * in docs/format.md §12; what it defends in docs/security.md.
 *
 * tpm2-tss's ESAPI is opened with dlopen on first use (libtss2-esys.so.0, libtss2-tctildr.so.0,
 * libtss2-mu.so.0, libtss2-rc.so.0): the headers give types only, so a process that never uses
 * this root never maps tss2 or the libcrypto it pulls in. The TPM is the device alone
 * (/dev/tpmrm0, or /dev/tpm0 where there is none) unless KEYBAY_TPM2_TCTI names a TCTI of tss2's
 * and its configuration ("swtpm:host=127.0.0.1,port=2321"): never tss2's default order, which
 * ends with simulators on 127.0.0.1, and never a library path.
 *
 * Every operation is bounded: the wait for this user's other processes, reaching the TPM and
 * every command share one deadline (KEYBAY_TPM2_TIMEOUT_MS, at most 30 s), after which the
 * root answers NOT_AVAILABLE naming the TPM. This user's processes take turns on a TPM (a lock
 * file per TCTI), and without a resource manager (swtpm's socket, /dev/tpm0) a killed process
 * leaves its transient objects loaded; a command that finds the TPM's object or session memory
 * full flushes the leftovers and is tried once more. That connection is shared with the tpm2-pin
 * method: Plugins/Support/tpm2.
 *
 * This file holds the root's operations and its descriptor; the root file is tpm2_root_file.c,
 * the sealed root key tpm2_root_sealed_key.c, the PCR policy's checks tpm2_root_pcr_policy.c,
 * the rollback counter tpm2_root_counter.c and root recovery tpm2_root_recovery.c (what they
 * share: tpm2_root_internal.h).
 */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sodium.h>

#include "keybay_plugin.h"
#include "keybay_plugin_descriptor.h"
#include "keybay_plugin_host.h"
#include "keybay_root_files.h"
#include "keybay_tpm2.h"
#include "tpm2_root_internal.h"

/* Opens the TPM for one operation (create: the root's directory may be made for the lock file),
   everything it does bounded by one deadline, KEYBAY_TPM2_TIMEOUT_MS (at most 30 s) from now.
   This user's processes take turns on it: <state_home>/keybay/tpm2-<hash of the TCTI>.lock.
   Cleans up after itself on failure. */
keybay_status tpm_open(const keybay_host *host, const keybay_root_context *c, int create, tpm *t) {
    keybay_status s = keybay_tpm2_begin(host, t, "tpm2", "tpm2 root");
    if (s != KEYBAY_OK) return s;
    char dir_path[4096];
    int dir;
    s = keybay_rf_open_dir(host, c, create, &dir, dir_path, sizeof dir_path);
    /* No root directory (and none to create): there is no root of this store's to use in the
       TPM, and the operation fails on its missing file. */
    if (s == KEYBAY_OK && dir >= 0) {
        char keybay_path[KEYBAY_ROOT_PATH_BYTES];
        snprintf(keybay_path, sizeof keybay_path, "%.4000s/keybay", c->state_home);
        int parent = openat(dir, "..", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        close(dir);
        s = parent < 0 ? keybay_rf_fail_errno(host, "cannot open", keybay_path) : keybay_tpm2_lock(host, t, parent, keybay_path, create);
        if (parent >= 0) close(parent);
    }
    if (s == KEYBAY_OK) return keybay_tpm2_connect(host, t);
    tpm_close(t);
    return s;
}

/* ---------------------------------------------------------------- root operations */

static keybay_status root_exists(const keybay_host *host, const keybay_root_context *c, int *exists) {
    return keybay_rf_exists(host, c, FILE_NAME, exists);
}

static keybay_status root_create_with_options(const keybay_host *host, const keybay_root_context *c, const keybay_option *options,
                                              size_t option_count, keybay_buffer *state_out) {
    uint32_t pcrs;
    int recovery;
    const char *public_key, *signature;
    keybay_status s = keybay_tpm2_parse_policy_options(host, "tpm2", options, option_count, &pcrs, &recovery, &public_key, &signature);
    if (s == KEYBAY_OK && recovery && !KEYBAY_HOST_HAS(host, show_secret)) {
        keybay_host_error_reason(host, "cannot-show");
        s = fail(host, KEYBAY_ERR_INTERACTION_UNAVAILABLE, "tpm2: the host cannot show a recovery key, so root recovery cannot be made");
    }
    int exists = 0;
    if (s == KEYBAY_OK) s = keybay_rf_exists(host, c, FILE_NAME, &exists);
    char path[KEYBAY_ROOT_PATH_BYTES];
    keybay_rf_path(c, FILE_NAME, path, sizeof path);
    if (s == KEYBAY_OK && exists) s = fail(host, KEYBAY_ERR_ROOT_EXISTS, "%s already exists; refusing to overwrite it", path);
    if (s != KEYBAY_OK) return s;
    tpm t;
    if ((s = tpm_open(host, c, 1, &t)) != KEYBAY_OK) return s;
    root_file *f = sodium_malloc(sizeof *f);
    uint8_t *key = sodium_malloc(ROOT_KEY_BYTES);
    if (!f || !key) s = fail(host, KEYBAY_ERR_INTERNAL, "out of memory creating the tpm2 root");
    if (s == KEYBAY_OK) {
        memset(f, 0, sizeof *f);
        f->pcrs = pcrs;
        if (public_key && (s = keybay_tpm2_signing_key_from_pem(host, public_key, &f->key)) == KEYBAY_OK) {
            f->has_signed = 1;
            if (signature) snprintf(f->signature_path, sizeof f->signature_path, "%s", signature);
        }
    }
    if (s == KEYBAY_OK) {
        randombytes_buf(key, ROOT_KEY_BYTES);
        s = seal_main(host, &t, f, key);
    }
    int counter = 0;
    if (s == KEYBAY_OK && (s = define_counter(host, &t, c, f)) == KEYBAY_OK) counter = 1;
    /* Shown last before the file is written: a host that cannot take it leaves nothing behind. */
    if (s == KEYBAY_OK && recovery) s = seal_recovery(host, &t, f, key);
    if (s == KEYBAY_OK) s = encode_file(host, f);
    if (s == KEYBAY_OK) s = keybay_rf_create(host, c, FILE_NAME, f->bytes, f->length);
    if (s == KEYBAY_OK && !buffer_alloc(state_out, STATE_BYTES)) s = fail(host, KEYBAY_ERR_INTERNAL, "out of memory");
    if (s == KEYBAY_OK) provider_state(f, c->storage_domain, state_out->data);
    else if (counter) undefine_counter(&t, f); /* nothing names it: do not leave it behind */
    if (f) sodium_free(f);
    if (key) sodium_free(key);
    tpm_close(&t);
    return s;
}

/* Opens the TPM, reads the root file (checked against `state`) and unseals the root key. */
static keybay_status with_root_key(const keybay_host *host, const keybay_root_context *c, const uint8_t *state, size_t state_length,
                                   tpm *t, root_file **f, uint8_t **key) {
    *f = NULL;
    *key = NULL;
    keybay_status s = tpm_open(host, c, 0, t);
    if (s != KEYBAY_OK) return s;
    char path[KEYBAY_ROOT_PATH_BYTES];
    keybay_rf_path(c, FILE_NAME, path, sizeof path);
    *f = sodium_malloc(sizeof **f);
    *key = sodium_malloc(ROOT_KEY_BYTES);
    if (!*f || !*key) s = fail(host, KEYBAY_ERR_INTERNAL, "out of memory");
    if (s == KEYBAY_OK) s = load_file(host, c, state, state_length, *f);
    if (s == KEYBAY_OK) s = unseal_root(host, t, *f, path, *key);
    return s;
}

static void release(tpm *t, root_file *f, uint8_t *key) {
    if (f) sodium_free(f);
    if (key) sodium_free(key);
    tpm_close(t);
}

static keybay_status root_seal(const keybay_host *host, const keybay_root_context *c, const uint8_t *state, size_t state_length,
                               const uint8_t *plaintext, size_t plaintext_length, const uint8_t *aad, size_t aad_length,
                               keybay_buffer *sealed_out) {
    if (plaintext_length == 0) return fail(host, KEYBAY_ERR_INTERNAL, "refusing to seal an empty key package");
    tpm t;
    root_file *f;
    uint8_t *key;
    keybay_status s = with_root_key(host, c, state, state_length, &t, &f, &key);
    size_t length = crypto_aead_xchacha20poly1305_ietf_NPUBBYTES + plaintext_length + crypto_aead_xchacha20poly1305_ietf_ABYTES;
    if (s == KEYBAY_OK && !buffer_alloc(sealed_out, length)) s = fail(host, KEYBAY_ERR_INTERNAL, "out of memory");
    if (s == KEYBAY_OK) {
        uint8_t *nonce = sealed_out->data;
        randombytes_buf(nonce, crypto_aead_xchacha20poly1305_ietf_NPUBBYTES);
        unsigned long long written = 0;
        crypto_aead_xchacha20poly1305_ietf_encrypt(nonce + crypto_aead_xchacha20poly1305_ietf_NPUBBYTES, &written, plaintext,
                                                   plaintext_length, aad, aad_length, NULL, nonce, key);
    }
    release(&t, f, key);
    return s;
}

static keybay_status root_open_with_floor(const keybay_host *host, const keybay_root_context *c, const uint8_t *state,
                                          size_t state_length, const uint8_t *sealed, size_t sealed_length, const uint8_t *aad,
                                          size_t aad_length, keybay_buffer *plaintext_out, uint64_t *floor_out) {
    const size_t overhead = crypto_aead_xchacha20poly1305_ietf_NPUBBYTES + crypto_aead_xchacha20poly1305_ietf_ABYTES;
    tpm t;
    root_file *f;
    uint8_t *key;
    keybay_status s = with_root_key(host, c, state, state_length, &t, &f, &key);
    ESYS_TR nv = ESYS_TR_NONE;
    if (s == KEYBAY_OK) s = open_counter(host, &t, f, &nv);
    if (s == KEYBAY_OK) s = read_floor(host, &t, f, nv, floor_out);
    if (s == KEYBAY_OK && sealed_length <= overhead) s = fail(host, KEYBAY_ERR_INTEGRITY, "the sealed key package is too short for the tpm2 root");
    if (s == KEYBAY_OK && !buffer_alloc(plaintext_out, sealed_length - overhead)) s = fail(host, KEYBAY_ERR_INTERNAL, "out of memory");
    if (s == KEYBAY_OK) {
        unsigned long long written = 0;
        if (crypto_aead_xchacha20poly1305_ietf_decrypt(plaintext_out->data, &written, NULL, sealed + crypto_aead_xchacha20poly1305_ietf_NPUBBYTES,
                                                       sealed_length - crypto_aead_xchacha20poly1305_ietf_NPUBBYTES, aad, aad_length, sealed, key) != 0) {
            keybay_rf_free_buffer(plaintext_out);
            s = fail(host, KEYBAY_ERR_INTEGRITY, "the store's key package failed authentication with the tpm2 root (the store file was modified)");
        }
    }
    if (nv != ESYS_TR_NONE) T(Esys_TR_Close)(t.esys, &nv);
    release(&t, f, key);
    return s;
}

/* Increments the counter until counter - base reaches `epoch` (never lowers it). */
static keybay_status root_raise_floor(const keybay_host *host, const keybay_root_context *c, const uint8_t *state,
                                      size_t state_length, uint64_t epoch) {
    tpm t;
    keybay_status s = tpm_open(host, c, 0, &t);
    if (s != KEYBAY_OK) return s;
    root_file *f = sodium_malloc(sizeof *f);
    if (!f) s = fail(host, KEYBAY_ERR_INTERNAL, "out of memory");
    if (s == KEYBAY_OK) s = load_file(host, c, state, state_length, f);
    ESYS_TR nv = ESYS_TR_NONE;
    uint64_t floor = 0;
    if (s == KEYBAY_OK) s = open_counter(host, &t, f, &nv);
    if (s == KEYBAY_OK) s = read_floor(host, &t, f, nv, &floor);
    if (s == KEYBAY_OK && epoch > floor && epoch - floor > MAX_INCREMENTS)
        s = fail(host, KEYBAY_ERR_INTERNAL, "refusing to raise the rollback floor from %llu to %llu in one step",
                 (unsigned long long)floor, (unsigned long long)epoch);
    for (; s == KEYBAY_OK && floor < epoch; floor++) {
        TSS2_RC rc = T(Esys_NV_Increment)(t.esys, nv, nv, ESYS_TR_PASSWORD, ESYS_TR_NONE, ESYS_TR_NONE);
        if (rc != TSS2_RC_SUCCESS) s = tpm_fail(host, &t, rc, KEYBAY_ERR_INTERNAL, "cannot increment the rollback counter");
    }
    if (nv != ESYS_TR_NONE) T(Esys_TR_Close)(t.esys, &nv);
    if (f) sodium_free(f);
    tpm_close(&t);
    return s;
}

/* The kept ticket, then the root file. */
static keybay_status remove_files(const keybay_host *host, const keybay_root_context *c) {
    keybay_status s = keybay_rf_remove(host, c, TICKET_FILE);
    return s == KEYBAY_OK ? keybay_rf_remove(host, c, FILE_NAME) : s;
}

/* Undefines the counter (only if it is still the one the file names) and removes the file. A
   TPM that cannot be reached (another machine, no permission) does not keep reset from working:
   the file goes, and the counter stays in that TPM (docs/security.md says how to remove it). */
static keybay_status root_reset(const keybay_host *host, const keybay_root_context *c) {
    int exists = 0;
    keybay_status s = keybay_rf_exists(host, c, FILE_NAME, &exists);
    if (s != KEYBAY_OK || !exists) return s == KEYBAY_OK ? remove_files(host, c) : s;
    tpm t;
    if ((s = tpm_open(host, c, 0, &t)) != KEYBAY_OK) {
        if (s != KEYBAY_ERR_NOT_AVAILABLE) return s;
        keybay_host_log(host, KEYBAY_LOG_ERROR, "tpm2 reset: the TPM cannot be reached; its rollback counter stays in it");
        return remove_files(host, c);
    }
    root_file *f = sodium_malloc(sizeof *f);
    if (!f) s = fail(host, KEYBAY_ERR_INTERNAL, "out of memory");
    /* A file that does not decode names no counter of ours: it is removed all the same. */
    if (s == KEYBAY_OK && load_file(NULL, c, NULL, 0, f) == KEYBAY_OK) {
        ESYS_TR nv;
        keybay_status found = open_counter(host, &t, f, &nv);
        if (found == KEYBAY_OK) {
            TSS2_RC rc = T(Esys_NV_UndefineSpace)(t.esys, ESYS_TR_RH_OWNER, nv, ESYS_TR_PASSWORD, ESYS_TR_NONE, ESYS_TR_NONE);
            if (rc != TSS2_RC_SUCCESS) s = tpm_fail(host, &t, rc, KEYBAY_ERR_INTERNAL, "cannot remove the rollback counter");
        } else if (found == KEYBAY_ERR_NOT_AVAILABLE) {
            s = found;
        }
    }
    if (s == KEYBAY_OK) s = remove_files(host, c);
    if (f) sodium_free(f);
    tpm_close(&t);
    return s;
}

static keybay_status copy_text(const keybay_host *host, const char *text, keybay_buffer *out) {
    size_t n = strlen(text);
    if (!buffer_alloc(out, n)) return fail(host, KEYBAY_ERR_INTERNAL, "out of memory");
    memcpy(out->data, text, n);
    return KEYBAY_OK;
}

/* A version-1 file without PCRs that names this store: no policy, said from the file alone
   (tss2 is not loaded, the TPM not reached, as for `status`). Anything else takes the full check. */
static int without_policy(const keybay_root_context *c, const uint8_t *state, size_t state_length, root_file *f) {
    if (keybay_rf_read(NULL, c, FILE_NAME, "the tpm2 root file", f->bytes, sizeof f->bytes, &f->length) != KEYBAY_OK || f->length < 22 ||
        f->length == sizeof f->bytes || memcmp(f->bytes, FILE_MAGIC, 4) != 0 || get_be(f->bytes + 4, 2) != FILE_VERSION || get_be(f->bytes + 18, 4) != 0)
        return 0;
    f->version = FILE_VERSION;
    f->nv_index = (uint32_t)get_be(f->bytes + 6, 4);
    f->base = get_be(f->bytes + 10, 8);
    uint8_t expected[STATE_BYTES];
    provider_state(f, c->storage_domain, expected);
    return state_length == STATE_BYTES && sodium_memcmp(expected, state, STATE_BYTES) == 0;
}

/* Would the root open now? Everything open does but the unseal: the file, the object loaded in
   this TPM, the counter, and the bound PCRs' values now against the object's policy. */
static keybay_status root_check(const keybay_host *host, const keybay_root_context *c, const uint8_t *state, size_t state_length,
                                keybay_buffer *report_out, uint32_t *pcrs_out) {
    *pcrs_out = 0;
    root_file *light = sodium_malloc(sizeof *light);
    if (!light) return fail(host, KEYBAY_ERR_INTERNAL, "out of memory");
    int none = without_policy(c, state, state_length, light);
    sodium_free(light);
    if (none) return copy_text(host, "policy=none root-recovery=no", report_out);
    tpm t;
    keybay_status s = tpm_open(host, c, 0, &t);
    if (s != KEYBAY_OK) return s;
    char path[KEYBAY_ROOT_PATH_BYTES];
    keybay_rf_path(c, FILE_NAME, path, sizeof path);
    root_file *f = sodium_malloc(sizeof *f);
    if (!f) s = fail(host, KEYBAY_ERR_INTERNAL, "out of memory");
    if (s == KEYBAY_OK) s = load_file(host, c, state, state_length, f);
    ESYS_TR object = ESYS_TR_NONE, nv = ESYS_TR_NONE;
    if (s == KEYBAY_OK) s = load_object(host, &t, f, path, &object);
    flush(&t, &object);
    if (s == KEYBAY_OK) s = open_counter(host, &t, f, &nv);
    if (nv != ESYS_TR_NONE) T(Esys_TR_Close)(t.esys, &nv);
    if (s == KEYBAY_OK) s = pcrs_in_the_way(host, &t, f, pcrs_out);
    if (s == KEYBAY_OK) {
        char list[80], report[400];
        keybay_tpm2_format_pcrs(f->pcrs, list, sizeof list);
        char fingerprint[65];
        sodium_bin2hex(fingerprint, sizeof fingerprint, f->key.fingerprint, 32);
        if (f->has_signed) snprintf(report, sizeof report, "policy=signed bank=sha256 pcrs=%s key=%s recorded=yes root-recovery=%s", list, fingerprint,
                                    f->has_recovery ? "yes" : "no");
        else if (f->pcrs) snprintf(report, sizeof report, "policy=pcrs bank=sha256 pcrs=%s recorded=%s root-recovery=%s", list, f->has_pcr_values ? "yes" : "no",
                 f->has_recovery ? "yes" : "no");
        else snprintf(report, sizeof report, "policy=none root-recovery=%s", f->has_recovery ? "yes" : "no");
        s = copy_text(host, report, report_out);
    }
    if (f) sodium_free(f);
    tpm_close(&t);
    return s;
}

/* "<path> (sealed by the TPM at ...)": the file is enough, status needs no TPM access. */
static keybay_status root_location(const keybay_host *host, const keybay_root_context *c, keybay_buffer *text_out) {
    char where[300], path[KEYBAY_ROOT_PATH_BYTES], text[4600];
    describe_tcti(where, sizeof where);
    if (keybay_rf_path(c, FILE_NAME, path, sizeof path) < 0)
        return fail(host, KEYBAY_ERR_IO, "the tpm2 root file's path under %.64s... is longer than PATH_MAX", c->state_home);
    snprintf(text, sizeof text, "%s (sealed by %s)", path, where);
    return copy_text(host, text, text_out);
}

static const char protection_note[] =
    "tpm2 seals the platform key to this machine's TPM and keeps the rollback floor in a TPM counter: it protects against copied "
    "files, backups, other users and any older copy of the store put back, not against other programs running as this user "
    "while they can use the TPM";

static keybay_status root_protection(const keybay_host *host, const keybay_root_context *c, keybay_buffer *text_out) {
    (void)c;
    return copy_text(host, protection_note, text_out);
}

static const keybay_option_spec option_specs[] = {
    { "pcrs", "bind the root to PCRs of the SHA-256 bank at their current values, e.g. 7 (Secure Boot) or 0,7; a change "
              "of any invalidates the root unless root recovery re-seals it" },
    { "pcr-public-key", "the PEM public key (RSA-2048 or EC P-256) that signs the expected PCR values (systemd-measure): the root opens "
                        "whenever a signature by it matches the PCRs now in effect (PCR 11 unless pcrs= says otherwise)" },
    { "pcr-signature", "the signature file to read (systemd-measure's JSON); default: the first of /run/systemd/tpm2-pcr-signature.json "
                       "and /usr/lib/systemd/tpm2-pcr-signature.json" },
    { "recovery", "yes: also seal the root key under a recovery key shown once, in this TPM and bound to no PCR, so that "
                  "root reseal --recovery-key-fd brings the store back after a PCR change" },
};

/* Usable here (`plugins`): keybay_tpm2_probe, as tpm2-pin's; the TPM itself is not reached. */
static keybay_status root_probe(const keybay_host *host) { return keybay_tpm2_probe(host, "tpm2", "tpm2 root"); }

static const keybay_plugin descriptor = {
    KEYBAY_DESCRIPTOR("tpm2", "TPM 2.0 (sealed to this machine's TPM)", "1.0.0", KEYBAY_KIND_ROOT, KEYBAY_FLAG_NEEDS_DEVICE),
    KEYBAY_DESCRIPTOR_OPTIONS(option_specs),
    KEYBAY_ROOT_OPERATIONS,
    .probe = root_probe,
    .root_create_with_options = root_create_with_options,
    .root_check = root_check,
    .root_reseal = root_reseal,
};

KEYBAY_PLUGIN_ENTRY_AFTER_SODIUM(descriptor)
