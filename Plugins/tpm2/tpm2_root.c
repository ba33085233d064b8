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
#include "keybay_recovery_key.h"
#include "keybay_tpm2.h"
#include "keybay_tpm2_session.h"

#define fail keybay_rf_fail
#define buffer_alloc keybay_rf_buffer_alloc

#define ROOT_KEY_BYTES 32
#define FILE_NAME "tpm2-root.sealed"
#define FILE_MAGIC "KBT2"
#define FILE_VERSION 1        /* a root without PCRs, as before */
#define FILE_VERSION_FIELDS 2 /* followed by tagged fields: a root with PCRs */
#define FIELD_RECOVERY 0x0001u   /* the recovery object: kept for the root's life */
#define FIELD_SIGNED 0x0002u     /* the key that signs PCR policies, and where its signatures are */
#define SIGNATURE_PATH_BYTES KEYBAY_TPM2_SIGNATURE_PATH_BYTES
#define TICKET_FILE "tpm2-root.ticket"
#define TICKET_MAGIC "KBTK"
#define TICKET_HEAD 74 /* magic | version:u16 | pkfp(32) | pcrs:u32 | policy(32) */
#define FIELD_PCR_VALUES 0x8001u /* resealable (high bit): outside the provider state's binding */
static const char recovery_auth_label[] = "keybay tpm2 root recovery v1 auth value";
#define MAX_FILE_BYTES 2048
#define STATE_BYTES 44 /* nvIndex:u32 | base:u64 | binding(32) */
#define NV_FIRST 0x01000000u /* the owner's NV range (TCG handle registry) */
#define NV_SPAN 0x00400000u
#define NV_PROBES 32
#define MAX_INCREMENTS 4096 /* one rotation is one increment; more than this is not a floor */
static const char provider_state_label[] = "keybay:v2:s1:provider-state:tpm2";

/* ---------------------------------------------------------------- the TPM (Plugins/Support/tpm2) */

typedef keybay_tpm2 tpm;
#define rc_layer_is_tpm keybay_tpm2_rc_is_tpm
#define rc_base keybay_tpm2_rc_base
#define tpm_fail keybay_tpm2_fail
#define tpm_close keybay_tpm2_close
#define flush keybay_tpm2_flush
#define flush_leftovers keybay_tpm2_flush_leftovers
#define create_primary keybay_tpm2_create_primary
#define describe_tcti keybay_tpm2_describe_tcti
#define put_be keybay_tpm2_put_be
#define get_be keybay_tpm2_get_be

/* A policy (or trial) session with PolicyPCR over `mask` at the PCRs' current values. */
static keybay_status pcr_session(const keybay_host *host, tpm *t, TPM2_SE type, uint32_t mask, ESYS_TR *session) {
    return keybay_tpm2_policy_session(host, t, type, ESYS_TR_NONE, mask, 0, session);
}

/* Opens the TPM for one operation (create: the root's directory may be made for the lock file),
   everything it does bounded by one deadline, KEYBAY_TPM2_TIMEOUT_MS (at most 30 s) from now.
   This user's processes take turns on it: <state_home>/keybay/tpm2-<hash of the TCTI>.lock.
   Cleans up after itself on failure. */
static keybay_status tpm_open(const keybay_host *host, const keybay_root_context *c, int create, tpm *t) {
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

/* ---------------------------------------------------------------- the root file */

/*
 * "KBT2" | version:u16 (1 or 2) | nvIndex:u32 | base:u64 | pcrs:u32 | nvName:LP16 | public:LP16 | private:LP16
 * public and private are TPM2B_PUBLIC / TPM2B_PRIVATE as the TPM marshals them (their own size
 * first); nvName is the NV counter's TPM name once written (nameAlg | SHA-256 of its public area).
 * Version 2 goes on with fields, tag:u16 | value:LP16, tags strictly increasing, none unknown:
 * 0x0001 the recovery object (public:LP16 | private:LP16), 0x0002 the signed policy's key and
 * signature file (spki:LP16 | path:LP16), 0x8001 the bound PCRs' SHA-256 values at sealing, in
 * PCR order (docs/format.md §12).
 */
typedef struct root_file {
    uint8_t bytes[MAX_FILE_BYTES];
    size_t length;
    uint16_t version;
    size_t fields_at;       /* version 2: where the fields begin */
    int has_pcr_values;
    uint8_t pcr_values[KEYBAY_TPM2_PCRS][32];
    int has_recovery;
    TPM2B_PUBLIC recovery_public;
    TPM2B_PRIVATE recovery_private;
    int has_signed;
    keybay_tpm2_signing_key key;
    char signature_path[SIGNATURE_PATH_BYTES]; /* "" for the default files */
    const keybay_root_context *context;        /* where the file was read (the ticket kept beside it); NULL while creating */
    uint32_t nv_index;
    uint64_t base;
    uint32_t pcrs;
    TPM2B_NAME nv_name;
    TPM2B_PUBLIC public;
    TPM2B_PRIVATE private;
} root_file;

/* popcount */
static int pcr_count(uint32_t mask) { int n = 0; for (; mask; mask &= mask - 1) n++; return n; }

/* public:LP16 | private:LP16, strictly (each area exactly its own size): 0, or -1. */
static int decode_object(const uint8_t *p, size_t n, TPM2B_PUBLIC *public, TPM2B_PRIVATE *private) {
    size_t at = 0, lengths[2];
    const uint8_t *parts[2];
    for (int i = 0; i < 2; i++) {
        if (n - at < 2 || (lengths[i] = (size_t)get_be(p + at, 2)) > n - at - 2) return -1;
        parts[i] = p + at + 2;
        at += 2 + lengths[i];
    }
    size_t off_pub = 0, off_priv = 0;
    memset(public, 0, sizeof *public);
    memset(private, 0, sizeof *private);
    return at == n && lengths[0] > 2 && get_be(parts[0], 2) == lengths[0] - 2 &&
                   T(Tss2_MU_TPM2B_PUBLIC_Unmarshal)(parts[0], lengths[0], &off_pub, public) == TSS2_RC_SUCCESS && off_pub == lengths[0] &&
                   lengths[1] > 2 && T(Tss2_MU_TPM2B_PRIVATE_Unmarshal)(parts[1], lengths[1], &off_priv, private) == TSS2_RC_SUCCESS &&
                   off_priv == lengths[1] ? 0 : -1;
}

/* Version 2's fields from f->bytes + *at, up to the end: *at is left at the end. */
static keybay_status decode_fields(const keybay_host *host, const char *path, root_file *f, size_t *at) {
    const uint8_t *p = f->bytes;
    size_t n = f->length;
    uint32_t previous = 0;
    while (*at < n) {
        if (n - *at < 4) return fail(host, KEYBAY_ERR_ROOT_MISMATCH, "platform key invalidated: %s is truncated", path);
        uint32_t tag = (uint32_t)get_be(p + *at, 2);
        size_t length = (size_t)get_be(p + *at + 2, 2);
        if (length > n - *at - 4) return fail(host, KEYBAY_ERR_ROOT_MISMATCH, "platform key invalidated: %s is truncated", path);
        const uint8_t *value = p + *at + 4;
        if (tag <= previous) return fail(host, KEYBAY_ERR_ROOT_MISMATCH, "platform key invalidated: %s is malformed (field 0x%04x out of order)", path, tag);
        if (tag == FIELD_RECOVERY) {
            if (decode_object(value, length, &f->recovery_public, &f->recovery_private) != 0)
                return fail(host, KEYBAY_ERR_ROOT_MISMATCH, "platform key invalidated: %s is malformed (the recovery object)", path);
            f->has_recovery = 1;
        } else if (tag == FIELD_SIGNED) {
            size_t spki = length >= 2 ? (size_t)get_be(value, 2) : 0, at2 = 2 + spki, path_length = 0;
            if (length < 4 || spki > length - 4 || (path_length = (size_t)get_be(value + at2, 2)) != length - at2 - 2 ||
                path_length >= SIGNATURE_PATH_BYTES || (path_length && value[at2 + 2] != '/') || memchr(value + at2 + 2, 0, path_length) ||
                keybay_tpm2_signing_key_from_der(NULL, value + 2, spki, &f->key) != KEYBAY_OK || f->pcrs == 0)
                return fail(host, KEYBAY_ERR_ROOT_MISMATCH, "platform key invalidated: %s is malformed (the signed policy)", path);
            memcpy(f->signature_path, value + at2 + 2, path_length);
            f->signature_path[path_length] = 0;
            f->has_signed = 1;
        } else if (tag == FIELD_PCR_VALUES) {
            if (length != (size_t)pcr_count(f->pcrs) * 32 || f->pcrs == 0)
                return fail(host, KEYBAY_ERR_ROOT_MISMATCH, "platform key invalidated: %s is malformed (PCR values)", path);
            for (int pcr = 0, i = 0; pcr < KEYBAY_TPM2_PCRS; pcr++)
                if (f->pcrs >> pcr & 1) memcpy(f->pcr_values[pcr], value + 32 * i++, 32);
            f->has_pcr_values = 1;
        } else {
            return fail(host, KEYBAY_ERR_ROOT_MISMATCH, "platform key invalidated: %s has a field (0x%04x) this tpm2 root does not know "
                        "(a newer version wrote it)", path, tag);
        }
        previous = tag;
        *at += 4 + length;
    }
    return KEYBAY_OK;
}

/* Decodes f->bytes strictly (exact lengths, no trailing bytes). */
static keybay_status decode_file(const keybay_host *host, const char *path, root_file *f) {
    const uint8_t *p = f->bytes;
    size_t n = f->length, at = 22;
    if (n < at || memcmp(p, FILE_MAGIC, 4) != 0 || (get_be(p + 4, 2) != FILE_VERSION && get_be(p + 4, 2) != FILE_VERSION_FIELDS))
        return fail(host, KEYBAY_ERR_ROOT_MISMATCH, "platform key invalidated: %s is not a version-1 or -2 tpm2 root file", path);
    f->version = (uint16_t)get_be(p + 4, 2);
    f->has_pcr_values = 0;
    f->has_recovery = 0;
    f->has_signed = 0;
    f->nv_index = (uint32_t)get_be(p + 6, 4);
    f->base = get_be(p + 10, 8);
    f->pcrs = (uint32_t)get_be(p + 18, 4);
    const uint8_t *parts[3];
    size_t lengths[3];
    for (int i = 0; i < 3; i++) {
        if (n - at < 2 || (lengths[i] = (size_t)get_be(p + at, 2)) > n - at - 2)
            return fail(host, KEYBAY_ERR_ROOT_MISMATCH, "platform key invalidated: %s is truncated", path);
        parts[i] = p + at + 2;
        at += 2 + lengths[i];
    }
    f->fields_at = at;
    if (f->version == FILE_VERSION_FIELDS && decode_fields(host, path, f, &at) != KEYBAY_OK) return KEYBAY_ERR_ROOT_MISMATCH;
    if (f->version == FILE_VERSION_FIELDS && ((f->pcrs != 0) != f->has_pcr_values || (!f->has_pcr_values && !f->has_recovery)))
        return fail(host, KEYBAY_ERR_ROOT_MISMATCH, "platform key invalidated: %s is malformed (a version-2 file without the fields it must have)", path);
    size_t off_pub = 0, off_priv = 0;
    memset(&f->public, 0, sizeof f->public);
    memset(&f->private, 0, sizeof f->private);
    if (at != n || lengths[0] > sizeof f->nv_name.name || (f->nv_index & ~(NV_SPAN - 1)) != NV_FIRST || (f->pcrs >> 24) != 0 ||
        T(Tss2_MU_TPM2B_PUBLIC_Unmarshal)(parts[1], lengths[1], &off_pub, &f->public) != TSS2_RC_SUCCESS || off_pub != lengths[1] ||
        /* tss2 does not hold the public area to its own size field, and takes an empty one: we do not */
        lengths[1] <= 2 || get_be(parts[1], 2) != lengths[1] - 2 || lengths[2] <= 2 ||
        T(Tss2_MU_TPM2B_PRIVATE_Unmarshal)(parts[2], lengths[2], &off_priv, &f->private) != TSS2_RC_SUCCESS || off_priv != lengths[2])
        return fail(host, KEYBAY_ERR_ROOT_MISMATCH, "platform key invalidated: %s is malformed", path);
    f->nv_name.size = (UINT16)lengths[0];
    memcpy(f->nv_name.name, parts[0], lengths[0]);
    return KEYBAY_OK;
}

/* public:LP16 | private:LP16 at *at, as the TPM marshals them. */
static keybay_status put_object(const keybay_host *host, uint8_t *p, size_t *at, const TPM2B_PUBLIC *public, const TPM2B_PRIVATE *private,
                                const char *what) {
    size_t offset = 0;
    if (MAX_FILE_BYTES - *at < 4 || T(Tss2_MU_TPM2B_PUBLIC_Marshal)(public, p + *at + 2, MAX_FILE_BYTES - *at - 4, &offset) != TSS2_RC_SUCCESS)
        return fail(host, KEYBAY_ERR_INTERNAL, "%s's public area does not fit the root file", what);
    put_be(p + *at, offset, 2);
    *at += 2 + offset;
    offset = 0;
    if (T(Tss2_MU_TPM2B_PRIVATE_Marshal)(private, p + *at + 2, MAX_FILE_BYTES - *at - 2, &offset) != TSS2_RC_SUCCESS)
        return fail(host, KEYBAY_ERR_INTERNAL, "%s's private area does not fit the root file", what);
    put_be(p + *at, offset, 2);
    *at += 2 + offset;
    return KEYBAY_OK;
}

static void put_field(uint8_t *p, size_t *at, uint32_t tag, size_t length) {
    put_be(p + *at, tag, 2);
    put_be(p + *at + 2, length, 2);
    *at += 4;
}

static keybay_status encode_file(const keybay_host *host, root_file *f) {
    uint8_t *p = f->bytes;
    f->version = f->has_pcr_values || f->has_recovery || f->has_signed ? FILE_VERSION_FIELDS : FILE_VERSION;
    memcpy(p, FILE_MAGIC, 4);
    put_be(p + 4, f->version, 2);
    put_be(p + 6, f->nv_index, 4);
    put_be(p + 10, f->base, 8);
    put_be(p + 18, f->pcrs, 4);
    size_t at = 22;
    put_be(p + at, f->nv_name.size, 2);
    memcpy(p + at + 2, f->nv_name.name, f->nv_name.size);
    at += 2 + f->nv_name.size;
    if (put_object(host, p, &at, &f->public, &f->private, "the sealed object") != KEYBAY_OK) return KEYBAY_ERR_INTERNAL;
    f->fields_at = at;
    if (f->has_recovery) {
        size_t start = at;
        if (MAX_FILE_BYTES - at < 8) return fail(host, KEYBAY_ERR_INTERNAL, "the recovery object does not fit the root file");
        at += 4;
        if (put_object(host, p, &at, &f->recovery_public, &f->recovery_private, "the recovery object") != KEYBAY_OK) return KEYBAY_ERR_INTERNAL;
        size_t field_end = at;
        at = start;
        put_field(p, &at, FIELD_RECOVERY, field_end - start - 4);
        at = field_end;
    }
    if (f->has_signed) {
        size_t length = MAX_FILE_BYTES - at < 4 ? 0 : keybay_tpm2_signed_encode(&f->key, f->signature_path, p + at + 4, MAX_FILE_BYTES - at - 4);
        if (!length) return fail(host, KEYBAY_ERR_INTERNAL, "the signed policy does not fit the root file");
        put_field(p, &at, FIELD_SIGNED, length);
        at += length;
    }
    if (f->has_pcr_values) {
        size_t length = (size_t)pcr_count(f->pcrs) * 32;
        if (MAX_FILE_BYTES - at < 4 + length) return fail(host, KEYBAY_ERR_INTERNAL, "the PCR values do not fit the root file");
        put_field(p, &at, FIELD_PCR_VALUES, length);
        for (int pcr = 0; pcr < KEYBAY_TPM2_PCRS; pcr++)
            if (f->pcrs >> pcr & 1) { memcpy(p + at, f->pcr_values[pcr], 32); at += 32; }
    }
    f->length = at;
    return KEYBAY_OK;
}

/* nvIndex:u32 | base:u64 | SHA-256(label | 0x00 | storageDomain | bound), where bound is the
   whole root file for version 1; for version 2 what a reseal keeps: the first 22 bytes, nvName
   (LP16) and each field whose tag is below 0x8000, as the file holds them. */
static void provider_state(const root_file *f, const uint8_t *domain, uint8_t out[STATE_BYTES]) {
    crypto_hash_sha256_state h;
    const uint8_t zero = 0;
    put_be(out, f->nv_index, 4);
    put_be(out + 4, f->base, 8);
    crypto_hash_sha256_init(&h);
    crypto_hash_sha256_update(&h, (const uint8_t *)provider_state_label, sizeof provider_state_label - 1);
    crypto_hash_sha256_update(&h, &zero, 1);
    crypto_hash_sha256_update(&h, domain, 32);
    if (f->version == FILE_VERSION) {
        crypto_hash_sha256_update(&h, f->bytes, f->length);
    } else {
        crypto_hash_sha256_update(&h, f->bytes, 22 + 2 + f->nv_name.size);
        for (size_t at = f->fields_at; at + 4 <= f->length;) {
            size_t length = (size_t)get_be(f->bytes + at + 2, 2);
            if (get_be(f->bytes + at, 2) < 0x8000) crypto_hash_sha256_update(&h, f->bytes + at, 4 + length);
            at += 4 + length;
        }
    }
    crypto_hash_sha256_final(&h, out + 12);
}

/* Reads and decodes the root file; with `state`, checks that it names this file (in constant
   time) before anything else is done with it. tss2 must be loaded (decoding uses its MU). */
static keybay_status load_file(const keybay_host *host, const keybay_root_context *c, const uint8_t *state, size_t state_length,
                               root_file *f) {
    char path[KEYBAY_ROOT_PATH_BYTES];
    keybay_rf_path(c, FILE_NAME, path, sizeof path);
    keybay_status s = keybay_rf_read(host, c, FILE_NAME, "the tpm2 root file", f->bytes, sizeof f->bytes, &f->length);
    if (s != KEYBAY_OK) return s;
    f->context = c;
    if (f->length == sizeof f->bytes) return fail(host, KEYBAY_ERR_ROOT_MISMATCH, "platform key invalidated: %s is too long", path);
    s = decode_file(host, path, f);
    if (s != KEYBAY_OK || !state) return s;
    uint8_t expected[STATE_BYTES];
    provider_state(f, c->storage_domain, expected);
    if (state_length != STATE_BYTES || sodium_memcmp(expected, state, STATE_BYTES) != 0)
        return fail(host, KEYBAY_ERR_ROOT_MISMATCH, "platform key invalidated: the tpm2 root file %s does not belong to this store", path);
    return KEYBAY_OK;
}

/* ---------------------------------------------------------------- the sealed root key and the NV counter */

/* The TPM's verification ticket for `policy`, kept beside the root file by an earlier open
   (docs/format.md §12): 1 and *out when the file holds one for this key, PCRs and policy. */
static int kept_ticket(const root_file *f, const uint8_t policy[32], TPMT_TK_VERIFIED *out) {
    uint8_t b[TICKET_HEAD + 8 + sizeof out->digest.buffer];
    size_t n = 0;
    if (!f->context || keybay_rf_read(NULL, f->context, TICKET_FILE, "the tpm2 ticket", b, sizeof b, &n) != KEYBAY_OK || n < TICKET_HEAD + 8 ||
        memcmp(b, TICKET_MAGIC, 4) != 0 || get_be(b + 4, 2) != 1 || memcmp(b + 6, f->key.fingerprint, 32) != 0 || get_be(b + 38, 4) != f->pcrs ||
        memcmp(b + 42, policy, 32) != 0)
        return 0;
    size_t digest = (size_t)get_be(b + TICKET_HEAD + 6, 2);
    if (digest > sizeof out->digest.buffer || TICKET_HEAD + 8 + digest != n) return 0;
    out->tag = (TPM2_ST)get_be(b + TICKET_HEAD, 2);
    out->hierarchy = (TPMI_RH_HIERARCHY)get_be(b + TICKET_HEAD + 2, 4);
    out->digest.size = (UINT16)digest;
    memcpy(out->digest.buffer, b + TICKET_HEAD + 8, digest);
    return 1;
}

/* Keeps the ticket for the next open (a failure to write it only costs the next open a
   verification: the file is an optimisation, never trusted, as PolicyAuthorize checks it). */
static void keep_ticket(const root_file *f, const uint8_t policy[32], const TPMT_TK_VERIFIED *ticket) {
    uint8_t b[TICKET_HEAD + 8 + sizeof ticket->digest.buffer];
    if (!f->context || ticket->digest.size > sizeof ticket->digest.buffer) return;
    memcpy(b, TICKET_MAGIC, 4);
    put_be(b + 4, 1, 2);
    memcpy(b + 6, f->key.fingerprint, 32);
    put_be(b + 38, f->pcrs, 4);
    memcpy(b + 42, policy, 32);
    put_be(b + TICKET_HEAD, ticket->tag, 2);
    put_be(b + TICKET_HEAD + 2, ticket->hierarchy, 4);
    put_be(b + TICKET_HEAD + 6, ticket->digest.size, 2);
    memcpy(b + TICKET_HEAD + 8, ticket->digest.buffer, ticket->digest.size);
    (void)keybay_rf_replace(NULL, f->context, TICKET_FILE, b, TICKET_HEAD + 8 + ticket->digest.size);
}

/* The ticket of a signature in the signature file that authorizes `policy` for the root's key:
   *have, and *cached when it was the one kept from an earlier open (`use_kept`) rather than
   verified now; one verified now is kept for the next open unless this is a check (`check`:
   `status` and `root check` write nothing). The entry must be in the file either way: removing
   it revokes the state. */
static keybay_status signed_ticket(const keybay_host *host, tpm *t, const root_file *f, const uint8_t policy[32], int use_kept, int check,
                                   TPMT_TK_VERIFIED *ticket, int *have, int *cached) {
    *have = *cached = 0;
    const char *file = keybay_tpm2_signature_file(f->signature_path);
    if (!file) return KEYBAY_OK;
    uint8_t signature[KEYBAY_TPM2_MAX_SIGNATURE];
    size_t length = 0;
    int found = 0, valid = 0;
    keybay_status s = keybay_tpm2_find_signature(host, file, &f->key, f->pcrs, policy, signature, &length, &found);
    if (s != KEYBAY_OK || !found) return s;
    if (use_kept && kept_ticket(f, policy, ticket)) { *have = *cached = 1; return KEYBAY_OK; }
    TPMT_TK_VERIFIED *fresh = NULL;
    s = keybay_tpm2_verify_signature(host, t, &f->key, policy, signature, length, &fresh, &valid);
    if (s == KEYBAY_OK && valid && fresh) {
        *ticket = *fresh;
        *have = 1;
        if (!check) keep_ticket(f, policy, fresh);
    }
    if (fresh) T(Esys_Free)(fresh);
    return s;
}

/* The bound PCRs whose values now keep the object from unsealing: 0 when the values now in
   effect give the object's policy; else those that differ from the values the file records,
   or every bound PCR for a version-1 file (it records none) or values that all agree (the
   policy itself was changed). */
static keybay_status pcrs_in_the_way(const keybay_host *host, tpm *t, const root_file *f, uint32_t *differing) {
    *differing = 0;
    if (!f->pcrs) return KEYBAY_OK;
    uint8_t now[KEYBAY_TPM2_PCRS][32], digest[32];
    keybay_status s = keybay_tpm2_read_pcrs(host, t, f->pcrs, now);
    if (s != KEYBAY_OK) return s;
    keybay_tpm2_pcr_policy(f->pcrs, (const uint8_t (*)[32])now, digest);
    if (f->has_signed) {
        TPMT_TK_VERIFIED ticket;
        int have = 0, cached = 0;
        s = signed_ticket(host, t, f, digest, 1, 1, &ticket, &have, &cached);
        if (s != KEYBAY_OK || have) return s;
    } else {
        const TPM2B_DIGEST *policy = &f->public.publicArea.authPolicy;
        if (policy->size == sizeof digest && sodium_memcmp(policy->buffer, digest, sizeof digest) == 0) return KEYBAY_OK;
    }
    *differing = f->has_pcr_values ? keybay_tpm2_pcrs_differing(f->pcrs, (const uint8_t (*)[32])f->pcr_values, (const uint8_t (*)[32])now) : 0;
    if (!*differing) *differing = f->pcrs;
    return KEYBAY_OK;
}

/* The pcr-mismatch failure, naming the PCRs that changed (all the bound ones when they cannot be read). */
static keybay_status pcr_mismatch(const keybay_host *host, tpm *t, const root_file *f) {
    uint32_t differing = 0;
    if (pcrs_in_the_way(NULL, t, f, &differing) != KEYBAY_OK || !differing) differing = f->pcrs;
    char list[80];
    keybay_tpm2_format_pcrs(differing, list, sizeof list);
    keybay_host_error_reason(host, "pcr-mismatch");
    keybay_host_error_pcrs(host, differing);
    if (f->has_signed) {
        const char *file = keybay_tpm2_signature_file(f->signature_path);
        return fail(host, KEYBAY_ERR_ROOT_MISMATCH, "platform key invalidated: no signature in %s authorizes the values PCR %s (SHA-256) holds now "
                    "for the root's key (they changed since sealing: %s); install the signature for this boot", file ? file : "the default "
                    "signature files (none exists)", list, differing == f->pcrs && !f->has_pcr_values ? "unknown" : "these");
    }
    return fail(host, KEYBAY_ERR_ROOT_MISMATCH, "platform key invalidated: PCR %s (SHA-256) no longer holds the value%s the root was sealed to "
                "(a firmware, boot loader, kernel or Secure Boot change)", list, differing & (differing - 1) ? "s" : "");
}

/* Loads the sealed object (the caller flushes it); the primary is flushed. */
static keybay_status load_object(const keybay_host *host, tpm *t, const root_file *f, const char *path, ESYS_TR *object) {
    ESYS_TR primary = ESYS_TR_NONE;
    TSS2_RC rc;
    keybay_status s = keybay_tpm2_load_sealed(host, t, &f->private, &f->public, &primary, object, &rc);
    if (s != KEYBAY_OK && rc != TSS2_RC_SUCCESS) {
        /* A foreign or damaged object is a format-one error on its parameters (integrity, size,
           key); a warning (memory, retry, lockout) is not the root's fault. */
        if (rc_layer_is_tpm(rc) && (rc & TPM2_RC_FMT1)) keybay_host_error_detail(host, "foreign-object", -1, path);
        s = rc_layer_is_tpm(rc) && (rc & TPM2_RC_FMT1) ? fail(host, KEYBAY_ERR_ROOT_MISMATCH, "platform key invalidated: %s cannot load the sealed root key %s "
                                       "(another machine's TPM, or its storage hierarchy was cleared): %s", t->where, path, T(Tss2_RC_Decode)(rc))
                                : tpm_fail(host, t, rc, KEYBAY_ERR_INTERNAL, "cannot load the sealed root key");
    }
    flush(t, &primary);
    return s;
}

/* A signed policy's unseal: the approving signature's ticket (kept, or verified now), then on
   tss2's SAPI as tpm2-pin does (keybay_tpm2_session.h) — a policy session salted with the
   primary, PolicyPCR, PolicyAuthorize, and the root key coming back encrypted — so that ESAPI's
   per-hash OpenSSL set-up stays out of every open (docs/performance.md). */
static keybay_status unseal_signed(const keybay_host *host, tpm *t, const root_file *f, const char *path, uint8_t *key) {
    uint8_t now[KEYBAY_TPM2_PCRS][32], policy[32];
    TPMT_TK_VERIFIED ticket;
    int have = 0, cached = 0, loaded = 0;
    TSS2_RC rc = TSS2_RC_SUCCESS;
    keybay_status s = keybay_tpm2_read_pcrs(host, t, f->pcrs, now);
    if (s == KEYBAY_OK) keybay_tpm2_pcr_policy(f->pcrs, (const uint8_t (*)[32])now, policy);
    if (s == KEYBAY_OK) s = signed_ticket(host, t, f, policy, 1, 0, &ticket, &have, &cached);
    if (s == KEYBAY_OK && !have) return pcr_mismatch(host, t, f);
    if (s != KEYBAY_OK) return s;
    keybay_tpm2_session *session = sodium_malloc(sizeof *session);
    if (!session) return fail(host, KEYBAY_ERR_INTERNAL, "out of memory");
    keybay_tpm2_approval approval = { &f->key, policy, &ticket };
    /* The PCRs could change between the read and PolicyPCR: the unseal then fails the policy. A
       kept ticket the TPM no longer takes (its owner hierarchy changed) fails the session's
       PolicyAuthorize: it is verified afresh, once. */
    s = keybay_tpm2_unseal_with_auth(cached ? NULL : host, t, &f->public, &f->private, f->pcrs, &approval, NULL, 0, session, &rc, &loaded);
    if (s != KEYBAY_OK && cached && loaded && rc == TSS2_RC_SUCCESS) {
        (void)keybay_rf_remove(NULL, f->context, TICKET_FILE);
        s = signed_ticket(host, t, f, policy, 0, 0, &ticket, &have, &cached);
        if (s == KEYBAY_OK && !have) s = pcr_mismatch(host, t, f);
        else if (s == KEYBAY_OK) s = keybay_tpm2_unseal_with_auth(host, t, &f->public, &f->private, f->pcrs, &approval, NULL, 0, session, &rc, &loaded);
    } else if (s != KEYBAY_OK && cached && rc == TSS2_RC_SUCCESS) {
        s = keybay_tpm2_unseal_with_auth(host, t, &f->public, &f->private, f->pcrs, &approval, NULL, 0, session, &rc, &loaded); /* its line */
    }
    if (s == KEYBAY_OK && session->unsealed_length == ROOT_KEY_BYTES) {
        memcpy(key, session->unsealed, ROOT_KEY_BYTES);
    } else if (s == KEYBAY_OK) {
        s = fail(host, KEYBAY_ERR_ROOT_MISMATCH, "platform key invalidated: the sealed object in %s holds %zu bytes, not a root key", path,
                 session->unsealed_length);
    } else if (rc == TSS2_RC_SUCCESS) {
        /* explained already: the primary, the session */
    } else if (!loaded && rc_layer_is_tpm(rc) && (rc & TPM2_RC_FMT1)) {
        keybay_host_error_detail(host, "foreign-object", -1, path);
        s = fail(host, KEYBAY_ERR_ROOT_MISMATCH, "platform key invalidated: %s cannot load the sealed root key %s (another machine's TPM, "
                 "or its storage hierarchy was cleared): %s", t->where, path, T(Tss2_RC_Decode)(rc));
    } else if (!loaded) {
        s = tpm_fail(host, t, rc, KEYBAY_ERR_INTERNAL, "cannot load the sealed root key");
    } else if (rc_layer_is_tpm(rc) && rc_base(rc) == TPM2_RC_POLICY_FAIL) {
        s = pcr_mismatch(host, t, f);
    } else {
        s = tpm_fail(host, t, rc, KEYBAY_ERR_INTERNAL, "cannot unseal the root key");
    }
    sodium_memzero(session, sizeof *session);
    sodium_free(session);
    return s;
}

/* Loads the sealed object and unseals the root key into `key` (guarded memory). */
static keybay_status unseal_root(const keybay_host *host, tpm *t, const root_file *f, const char *path, uint8_t *key) {
    if (f->has_signed) return unseal_signed(host, t, f, path, key);
    ESYS_TR object = ESYS_TR_NONE, session = ESYS_TR_NONE;
    TSS2_RC rc;
    keybay_status s = load_object(host, t, f, path, &object);
    if (s == KEYBAY_OK && f->pcrs) {
        s = pcr_session(host, t, TPM2_SE_POLICY, f->pcrs, &session);
    }
    TPM2B_SENSITIVE_DATA *out = NULL;
    /* continueSession clear: the TPM ends the policy session once the unseal succeeds (one
       FlushContext fewer); a failed unseal leaves it, and it is flushed below. */
    if (s == KEYBAY_OK && session != ESYS_TR_NONE &&
        (rc = T(Esys_TRSess_SetAttributes)(t->esys, session, 0, TPMA_SESSION_CONTINUESESSION)) != TSS2_RC_SUCCESS)
        s = tpm_fail(host, t, rc, KEYBAY_ERR_INTERNAL, "cannot set the policy session's attributes");
    if (s == KEYBAY_OK) {
        rc = T(Esys_Unseal)(t->esys, object, f->pcrs ? session : ESYS_TR_PASSWORD, ESYS_TR_NONE, ESYS_TR_NONE, &out);
        if (rc == TSS2_RC_SUCCESS) session = ESYS_TR_NONE; /* ended by the TPM */
        if (rc != TSS2_RC_SUCCESS) {
            out = NULL;
            s = rc_layer_is_tpm(rc) && rc_base(rc) == TPM2_RC_POLICY_FAIL ? pcr_mismatch(host, t, f)
                                                                         : tpm_fail(host, t, rc, KEYBAY_ERR_INTERNAL, "cannot unseal the root key");
        } else if (out->size != ROOT_KEY_BYTES) {
            s = fail(host, KEYBAY_ERR_ROOT_MISMATCH, "platform key invalidated: the sealed object in %s holds %u bytes, not a root key", path, out->size);
        } else {
            memcpy(key, out->buffer, ROOT_KEY_BYTES);
        }
    }
    if (out) { sodium_memzero(out, sizeof *out); T(Esys_Free)(out); }
    flush(t, &session);
    flush(t, &object);
    return s;
}

/* The counter's ESYS handle, after checking that the index is still the one the root file
   names (its TPM name covers its attributes: a counter, defined by us, written). */
static keybay_status open_counter(const keybay_host *host, tpm *t, const root_file *f, ESYS_TR *nv) {
    TSS2_RC rc = T(Esys_TR_FromTPMPublic)(t->esys, f->nv_index, ESYS_TR_NONE, ESYS_TR_NONE, ESYS_TR_NONE, nv);
    if (rc != TSS2_RC_SUCCESS) {
        *nv = ESYS_TR_NONE;
        if (!rc_layer_is_tpm(rc) || !(rc & TPM2_RC_FMT1)) return tpm_fail(host, t, rc, KEYBAY_ERR_INTERNAL, "cannot find the rollback counter");
        keybay_host_error_reason(host, "counter-missing");
        return fail(host, KEYBAY_ERR_ROOT_MISSING, "platform key invalidated: the rollback counter NV 0x%08x is gone from %s (%s)",
                    (unsigned)f->nv_index, t->where, T(Tss2_RC_Decode)(rc));
    }
    TPM2B_NAME *name = NULL;
    rc = T(Esys_TR_GetName)(t->esys, *nv, &name);
    int same = rc == TSS2_RC_SUCCESS && name->size == f->nv_name.size && memcmp(name->name, f->nv_name.name, name->size) == 0;
    if (name) T(Esys_Free)(name);
    if (!same) {
        T(Esys_TR_Close)(t->esys, nv);
        *nv = ESYS_TR_NONE;
        keybay_host_error_reason(host, "counter-redefined");
        return fail(host, KEYBAY_ERR_ROOT_MISMATCH, "platform key invalidated: NV 0x%08x on %s is no longer the rollback counter this root "
                    "defined (it was redefined)", (unsigned)f->nv_index, t->where);
    }
    return KEYBAY_OK;
}

static keybay_status read_counter(const keybay_host *host, tpm *t, ESYS_TR nv, uint64_t *value) {
    TPM2B_MAX_NV_BUFFER *data = NULL;
    TSS2_RC rc = T(Esys_NV_Read)(t->esys, nv, nv, ESYS_TR_PASSWORD, ESYS_TR_NONE, ESYS_TR_NONE, 8, 0, &data);
    if (rc != TSS2_RC_SUCCESS) return tpm_fail(host, t, rc, KEYBAY_ERR_INTERNAL, "cannot read the rollback counter");
    int ok = data->size == 8;
    if (ok) *value = get_be(data->buffer, 8);
    T(Esys_Free)(data);
    return ok ? KEYBAY_OK : fail(host, KEYBAY_ERR_INTERNAL, "the rollback counter on %s is not 8 bytes", t->where);
}

/* floor = counter - base; a counter below its base is not ours. */
static keybay_status read_floor(const keybay_host *host, tpm *t, const root_file *f, ESYS_TR nv, uint64_t *floor) {
    uint64_t value;
    keybay_status s = read_counter(host, t, nv, &value);
    if (s == KEYBAY_OK && value < f->base)
        s = fail(host, KEYBAY_ERR_ROOT_MISMATCH, "platform key invalidated: the rollback counter NV 0x%08x is below its base", (unsigned)f->nv_index);
    if (s == KEYBAY_OK) *floor = value - f->base;
    return s;
}

/* ---------------------------------------------------------------- root operations */

static keybay_status root_exists(const keybay_host *host, const keybay_root_context *c, int *exists) {
    return keybay_rf_exists(host, c, FILE_NAME, exists);
}

/* Defines the counter at the first free index of a range derived from the storage domain,
   increments it once (a counter reads only once written; it starts at the highest value any
   counter of this TPM had) and reads its base. */
static keybay_status define_counter(const keybay_host *host, tpm *t, const keybay_root_context *c, root_file *f) {
    uint8_t digest[32];
    crypto_hash_sha256(digest, c->storage_domain, 32);
    uint32_t start = (uint32_t)get_be(digest, 4) % NV_SPAN;
    TPM2B_AUTH empty = { 0 };
    TSS2_RC rc = TSS2_RC_SUCCESS;
    ESYS_TR nv = ESYS_TR_NONE;
    for (int probe = 0; probe < NV_PROBES; probe++) {
        TPM2B_NV_PUBLIC info = { .nvPublic = {
            .nvIndex = NV_FIRST + (start + (uint32_t)probe) % NV_SPAN,
            .nameAlg = TPM2_ALG_SHA256,
            .attributes = (TPM2_NT_COUNTER << TPMA_NV_TPM2_NT_SHIFT) | TPMA_NV_AUTHREAD | TPMA_NV_AUTHWRITE | TPMA_NV_OWNERREAD |
                          TPMA_NV_OWNERWRITE | TPMA_NV_NO_DA,
            .dataSize = 8,
        } };
        rc = T(Esys_NV_DefineSpace)(t->esys, ESYS_TR_RH_OWNER, ESYS_TR_PASSWORD, ESYS_TR_NONE, ESYS_TR_NONE, &empty, &info, &nv);
        if (rc == TSS2_RC_SUCCESS) { f->nv_index = info.nvPublic.nvIndex; break; }
        if (!rc_layer_is_tpm(rc) || rc_base(rc) != TPM2_RC_NV_DEFINED) break;
    }
    if (rc != TSS2_RC_SUCCESS) return tpm_fail(host, t, rc, KEYBAY_ERR_INTERNAL, "cannot define the rollback counter");
    rc = T(Esys_NV_Increment)(t->esys, nv, nv, ESYS_TR_PASSWORD, ESYS_TR_NONE, ESYS_TR_NONE);
    keybay_status s = rc == TSS2_RC_SUCCESS ? read_counter(host, t, nv, &f->base)
                                             : tpm_fail(host, t, rc, KEYBAY_ERR_INTERNAL, "cannot start the rollback counter");
    TPM2B_NAME *name = NULL;
    if (s == KEYBAY_OK && (rc = T(Esys_TR_GetName)(t->esys, nv, &name)) != TSS2_RC_SUCCESS)
        s = tpm_fail(host, t, rc, KEYBAY_ERR_INTERNAL, "cannot name the rollback counter");
    if (s == KEYBAY_OK) f->nv_name = *name;
    if (name) T(Esys_Free)(name);
    if (s != KEYBAY_OK) T(Esys_NV_UndefineSpace)(t->esys, ESYS_TR_RH_OWNER, nv, ESYS_TR_PASSWORD, ESYS_TR_NONE, ESYS_TR_NONE);
    else T(Esys_TR_Close)(t->esys, &nv);
    return s;
}

static void undefine_counter(tpm *t, const root_file *f) {
    ESYS_TR nv;
    if (open_counter(NULL, t, f, &nv) == KEYBAY_OK)
        T(Esys_NV_UndefineSpace)(t->esys, ESYS_TR_RH_OWNER, nv, ESYS_TR_PASSWORD, ESYS_TR_NONE, ESYS_TR_NONE);
}

/* Seals `key` (the root key) as the root's main object: bound to the PCRs of `f->pcrs` at their
   values now (recorded in the file), or, without PCRs, to this TPM alone (userWithAuth, empty
   password). Sets f->public, f->private and the PCR values. */
static keybay_status seal_main(const keybay_host *host, tpm *t, root_file *f, const uint8_t *key) {
    TPM2B_SENSITIVE_CREATE *sensitive = sodium_malloc(sizeof *sensitive);
    if (!sensitive) return fail(host, KEYBAY_ERR_INTERNAL, "out of memory sealing the tpm2 root");
    keybay_status s = KEYBAY_OK;
    ESYS_TR primary = ESYS_TR_NONE, trial = ESYS_TR_NONE;
    TPM2B_PUBLIC template = { .publicArea = {
        .type = TPM2_ALG_KEYEDHASH,
        .nameAlg = TPM2_ALG_SHA256,
        .objectAttributes = TPMA_OBJECT_FIXEDTPM | TPMA_OBJECT_FIXEDPARENT | TPMA_OBJECT_NODA | (f->pcrs ? 0 : TPMA_OBJECT_USERWITHAUTH),
        .parameters.keyedHashDetail.scheme = { .scheme = TPM2_ALG_NULL },
    } };
    f->has_pcr_values = 0;
    if (f->has_signed) {
        /* The policy is the key's; the values now are recorded to name what changes later. */
        s = keybay_tpm2_read_pcrs(host, t, f->pcrs, f->pcr_values);
        template.publicArea.authPolicy.size = 32;
        memcpy(template.publicArea.authPolicy.buffer, f->key.policy, 32);
        if (s == KEYBAY_OK) f->has_pcr_values = 1;
    } else if (f->pcrs) {
        /* The values are read, then the TPM computes the policy of the values in effect: they
           must agree, or a PCR changed meanwhile (and the file would record the wrong ones). */
        s = keybay_tpm2_read_pcrs(host, t, f->pcrs, f->pcr_values);
        if (s == KEYBAY_OK) s = pcr_session(host, t, TPM2_SE_TRIAL, f->pcrs, &trial);
        TPM2B_DIGEST *policy = NULL;
        TSS2_RC rc;
        if (s == KEYBAY_OK && (rc = T(Esys_PolicyGetDigest)(t->esys, trial, ESYS_TR_NONE, ESYS_TR_NONE, ESYS_TR_NONE, &policy)) != TSS2_RC_SUCCESS)
            s = tpm_fail(host, t, rc, KEYBAY_ERR_INTERNAL, "cannot compute the PCR policy");
        uint8_t expected[32];
        keybay_tpm2_pcr_policy(f->pcrs, (const uint8_t (*)[32])f->pcr_values, expected);
        if (s == KEYBAY_OK && (policy->size != sizeof expected || memcmp(policy->buffer, expected, sizeof expected) != 0))
            s = fail(host, KEYBAY_ERR_INTERNAL, "the PCRs of %s changed while the tpm2 root was being sealed to them; try again", t->where);
        if (s == KEYBAY_OK) { template.publicArea.authPolicy = *policy; f->has_pcr_values = 1; }
        if (policy) T(Esys_Free)(policy);
        flush(t, &trial);
    }
    if (s == KEYBAY_OK) s = create_primary(host, t, &primary);
    if (s == KEYBAY_OK) {
        memset(sensitive, 0, sizeof *sensitive);
        sensitive->sensitive.data.size = ROOT_KEY_BYTES;
        memcpy(sensitive->sensitive.data.buffer, key, ROOT_KEY_BYTES);
        TPM2B_DATA outside = { 0 };
        TPML_PCR_SELECTION none = { 0 };
        TPM2B_PRIVATE *private = NULL;
        TPM2B_PUBLIC *public = NULL;
        TSS2_RC rc = T(Esys_Create)(t->esys, primary, ESYS_TR_PASSWORD, ESYS_TR_NONE, ESYS_TR_NONE, sensitive, &template, &outside, &none,
                                    &private, &public, NULL, NULL, NULL);
        if (rc != TSS2_RC_SUCCESS) s = tpm_fail(host, t, rc, KEYBAY_ERR_INTERNAL, "cannot seal the root key");
        else { f->private = *private; f->public = *public; }
        if (private) T(Esys_Free)(private);
        if (public) T(Esys_Free)(public);
    }
    flush(t, &primary);
    sodium_memzero(sensitive, sizeof *sensitive);
    sodium_free(sensitive);
    return s;
}

/* Root recovery's secrets, in guarded memory. */
typedef struct recovery_secret {
    uint8_t raw[KEYBAY_RK_RAW_BYTES];
    uint8_t symbols[KEYBAY_RK_SYMBOLS];
    uint8_t hash[KEYBAY_RK_HASH_BYTES];
    uint8_t auth[32];
    char text[KEYBAY_RK_TEXT_BYTES + 1];
    TPM2B_SENSITIVE_CREATE sensitive;
} recovery_secret;

/* The recovery object's authValue: keyed BLAKE2b-256 of the recovery key K over the label. */
static void recovery_auth(recovery_secret *r) {
    crypto_generichash(r->auth, sizeof r->auth, (const unsigned char *)recovery_auth_label, sizeof recovery_auth_label - 1, r->raw,
                       KEYBAY_RK_KEY_BYTES);
}

/* Root recovery: a new recovery key, the root key sealed a second time under it (PolicyAuthValue,
   no PCRs, counted by the TPM's lockout), and the key shown to the user through the host. */
static keybay_status seal_recovery(const keybay_host *host, tpm *t, root_file *f, const uint8_t *key) {
    recovery_secret *r = sodium_malloc(sizeof *r);
    if (!r) return fail(host, KEYBAY_ERR_INTERNAL, "out of memory sealing the tpm2 root's recovery");
    memset(r, 0, sizeof *r);
    keybay_rk_generate(r->raw, r->hash);
    recovery_auth(r);
    r->sensitive.sensitive.userAuth.size = sizeof r->auth;
    memcpy(r->sensitive.sensitive.userAuth.buffer, r->auth, sizeof r->auth);
    r->sensitive.sensitive.data.size = ROOT_KEY_BYTES;
    memcpy(r->sensitive.sensitive.data.buffer, key, ROOT_KEY_BYTES);
    keybay_status s = keybay_tpm2_seal_with_auth(host, t, 0, NULL, &r->sensitive, &f->recovery_public, &f->recovery_private);
    if (s == KEYBAY_OK) {
        f->has_recovery = 1;
        keybay_rk_encode(r->raw, r->text);
        size_t size = 0;
        char *picture = keybay_rk_picture(host, "tpm2", r->text, &size);
        s = host->show_secret(host->context, KEYBAY_SECRET_RECOVERY_KEY, r->text, picture);
        keybay_rk_picture_free(picture, size);
    }
    sodium_memzero(r, sizeof *r);
    sodium_free(r);
    return s;
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

/* Opens root recovery's copy of the root key with the recovery key the user typed (`secret`). */
static keybay_status unseal_recovery(const keybay_host *host, tpm *t, const root_file *f, const char *path, const uint8_t *secret,
                                     size_t secret_length, uint8_t *key) {
    if (!f->has_recovery) {
        keybay_host_error_reason(host, "no-root-recovery");
        return fail(host, KEYBAY_ERR_UNSUPPORTED, "the tpm2 root %s has no root recovery (it is made with init --opt recovery=yes)", path);
    }
    if (secret_length > KEYBAY_RK_INPUT_BYTES) {
        keybay_host_error_reason(host, "too-long");
        return fail(host, KEYBAY_ERR_WRONG_SECRET, "tpm2: the recovery key is longer than %u bytes", KEYBAY_RK_INPUT_BYTES);
    }
    recovery_secret *r = sodium_malloc(sizeof *r);
    keybay_tpm2_session *session = sodium_malloc(sizeof *session);
    keybay_status s = r && session ? KEYBAY_OK : fail(host, KEYBAY_ERR_INTERNAL, "out of memory");
    /* A typo is told before the TPM is asked: it counts nothing towards the lockout. */
    if (s == KEYBAY_OK) s = keybay_rk_decode(host, "tpm2", secret, secret_length, r->symbols, r->hash, r->raw);
    TSS2_RC rc = TSS2_RC_SUCCESS;
    int loaded = 0;
    if (s == KEYBAY_OK) {
        recovery_auth(r);
        s = keybay_tpm2_unseal_with_auth(host, t, &f->recovery_public, &f->recovery_private, 0, NULL, r->auth, sizeof r->auth, session, &rc,
                                         &loaded);
    }
    if (s == KEYBAY_OK && session->unsealed_length == ROOT_KEY_BYTES) {
        memcpy(key, session->unsealed, ROOT_KEY_BYTES);
    } else if (s == KEYBAY_OK) {
        s = fail(host, KEYBAY_ERR_ROOT_MISMATCH, "platform key invalidated: the recovery object in %s holds %zu bytes, not a root key", path,
                 session->unsealed_length);
    } else if (rc == TSS2_RC_SUCCESS) {
        /* explained already: a typo, the primary, the session */
    } else if (!loaded && rc_layer_is_tpm(rc) && (rc & TPM2_RC_FMT1)) {
        keybay_host_error_detail(host, "foreign-object", -1, path);
        s = fail(host, KEYBAY_ERR_ROOT_MISMATCH, "platform key invalidated: %s cannot load the recovery object in %s (another machine's "
                 "TPM, or its storage hierarchy was cleared): %s", t->where, path, T(Tss2_RC_Decode)(rc));
    } else if (!loaded) {
        s = tpm_fail(host, t, rc, KEYBAY_ERR_INTERNAL, "cannot load the root's recovery object");
    } else if (keybay_tpm2_is_auth_refusal(rc)) {
        s = keybay_tpm2_auth_refused(host, t, rc, "wrong-recovery-key", "root recovery key");
    } else {
        s = tpm_fail(host, t, rc, KEYBAY_ERR_INTERNAL, "cannot unseal the root's recovery object");
    }
    if (r) { sodium_memzero(r, sizeof *r); sodium_free(r); }
    if (session) { sodium_memzero(session, sizeof *session); sodium_free(session); }
    return s;
}

/* Root recovery: the root key from the recovery object, sealed again to the PCRs' values now in
   effect, checked (the new object unseals to the same key, the provider state still names the
   file) and put in place by one rename (keybay_rf_replace), then read back. Until the rename the
   old file is the root; after it, the new one; both hold the same root key. */
static keybay_status root_reseal(const keybay_host *host, const keybay_root_context *c, const uint8_t *state, size_t state_length,
                                 const uint8_t *secret, size_t secret_length) {
    tpm t;
    keybay_status s = tpm_open(host, c, 0, &t);
    if (s != KEYBAY_OK) return s;
    char path[KEYBAY_ROOT_PATH_BYTES];
    keybay_rf_path(c, FILE_NAME, path, sizeof path);
    root_file *f = sodium_malloc(sizeof *f), *back = sodium_malloc(sizeof *back);
    uint8_t *key = sodium_malloc(ROOT_KEY_BYTES), *again = sodium_malloc(ROOT_KEY_BYTES);
    if (!f || !back || !key || !again) s = fail(host, KEYBAY_ERR_INTERNAL, "out of memory");
    if (s == KEYBAY_OK) s = load_file(host, c, state, state_length, f);
    if (s == KEYBAY_OK) s = unseal_recovery(host, &t, f, path, secret, secret_length, key);
    if (s == KEYBAY_OK) s = seal_main(host, &t, f, key);
    if (s == KEYBAY_OK) s = encode_file(host, f);
    uint8_t now[STATE_BYTES];
    if (s == KEYBAY_OK) {
        provider_state(f, c->storage_domain, now);
        if (state_length != STATE_BYTES || sodium_memcmp(now, state, STATE_BYTES) != 0)
            s = fail(host, KEYBAY_ERR_INTERNAL, "the re-sealed tpm2 root file would no longer belong to the store; nothing was changed");
    }
    if (s == KEYBAY_OK) s = unseal_root(host, &t, f, path, again);
    if (s == KEYBAY_OK && sodium_memcmp(again, key, ROOT_KEY_BYTES) != 0)
        s = fail(host, KEYBAY_ERR_INTERNAL, "the re-sealed root key does not unseal to the root key; nothing was changed");
    if (s == KEYBAY_OK) s = keybay_rf_replace(host, c, FILE_NAME, f->bytes, f->length);
    if (s == KEYBAY_OK) s = keybay_rf_read(host, c, FILE_NAME, "the tpm2 root file", back->bytes, sizeof back->bytes, &back->length);
    if (s == KEYBAY_OK && (back->length != f->length || memcmp(back->bytes, f->bytes, f->length) != 0)) {
        keybay_host_error_detail(host, "read-back-mismatch", -1, path);
        s = fail(host, KEYBAY_ERR_IO, "the re-sealed tpm2 root file %s does not read back as written", path);
    }
    if (f) sodium_free(f);
    if (back) sodium_free(back);
    if (key) sodium_free(key);
    if (again) sodium_free(again);
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
