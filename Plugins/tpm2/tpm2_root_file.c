// SPDX-License-Identifier: Apache-2.0
/* The tpm2 root file (docs/format.md §12; its layout in tpm2_root_internal.h): strict decoding,
   encoding, the provider state that binds it to the store, and its reading. */
#define _POSIX_C_SOURCE 200809L

#include <string.h>

#include <sodium.h>

#include "tpm2_root_internal.h"

static const char provider_state_label[] = "keybay:v2:s1:provider-state:tpm2";

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
keybay_status decode_file(const keybay_host *host, const char *path, root_file *f) {
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

keybay_status encode_file(const keybay_host *host, root_file *f) {
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
void provider_state(const root_file *f, const uint8_t *domain, uint8_t out[STATE_BYTES]) {
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
keybay_status load_file(const keybay_host *host, const keybay_root_context *c, const uint8_t *state, size_t state_length,
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
