// SPDX-License-Identifier: Apache-2.0
/* Signed PCR policies (systemd-measure's tpm2-pcr-signature.json): see include/keybay_tpm2.h and
   docs/format.md §12. The public key's DER, the JSON and the signatures are parsed here, strictly
   and without libcrypto: a key is RSA-2048 or EC P-256 in a SubjectPublicKeyInfo. */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sodium.h>

#include "keybay_plugin_host.h"
#include "keybay_root_files.h"
#include "keybay_tpm2.h"

#define fail keybay_rf_fail

/* ---- DER, as much as a SubjectPublicKeyInfo and an ECDSA signature need ---- */

typedef struct der { const uint8_t *p; size_t n; } der;

/* The next element of `in` with tag `tag`: its contents in *out, `in` advanced past it. */
static int der_take(der *in, uint8_t tag, der *out) {
    if (in->n < 2 || in->p[0] != tag) return -1;
    size_t length = in->p[1], at = 2;
    if (length & 0x80) {
        size_t bytes = length & 0x7f;
        if (bytes == 0 || bytes > 2 || in->n < 2 + bytes) return -1;
        length = 0;
        for (size_t i = 0; i < bytes; i++) length = length << 8 | in->p[2 + i];
        if (length < 0x80) return -1; /* DER: the short form where it fits */
        at += bytes;
    }
    if (length > in->n - at) return -1;
    out->p = in->p + at;
    out->n = length;
    in->p += at + length;
    in->n -= at + length;
    return 0;
}

/* A positive INTEGER's magnitude, right-aligned in `out` (`size` bytes). */
static int der_unsigned(der value, uint8_t *out, size_t size) {
    if (value.n == 0 || (value.p[0] & 0x80)) return -1;
    while (value.n > 1 && value.p[0] == 0) { value.p++; value.n--; }
    if (value.n > size) return -1;
    memset(out, 0, size);
    memcpy(out + size - value.n, value.p, value.n);
    return 0;
}

static const uint8_t oid_rsa[] = { 0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x01, 0x01 };
static const uint8_t oid_ec[] = { 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x02, 0x01 };
static const uint8_t oid_p256[] = { 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x03, 0x01, 0x07 };

static int same_oid(der oid, const uint8_t *expected, size_t n) { return oid.n == n && memcmp(oid.p, expected, n) == 0; }

keybay_status keybay_tpm2_signing_key_from_der(const keybay_host *host, const uint8_t *spki, size_t length, keybay_tpm2_signing_key *key) {
    memset(key, 0, sizeof *key);
    der all = { spki, length }, info, algorithm, oid, bits;
    if (length > sizeof key->der || der_take(&all, 0x30, &info) != 0 || all.n != 0 || der_take(&info, 0x30, &algorithm) != 0 ||
        der_take(&algorithm, 0x06, &oid) != 0 || der_take(&info, 0x03, &bits) != 0 || info.n != 0 || bits.n < 1 || bits.p[0] != 0)
        goto refused;
    bits.p++;
    bits.n--;
    /* systemd's pkfp: SHA-256 of the key as i2d_PublicKey writes it, the BIT STRING's contents
       (an RSAPublicKey, or the EC point) */
    crypto_hash_sha256(key->fingerprint, bits.p, bits.n);
    TPMT_PUBLIC *area = &key->public.publicArea;
    area->nameAlg = TPM2_ALG_SHA256;
    area->objectAttributes = TPMA_OBJECT_SIGN_ENCRYPT | TPMA_OBJECT_USERWITHAUTH;
    if (same_oid(oid, oid_rsa, sizeof oid_rsa)) {
        der null, rsa, n, e;
        if (der_take(&algorithm, 0x05, &null) != 0 || null.n != 0 || algorithm.n != 0 || der_take(&bits, 0x30, &rsa) != 0 || bits.n != 0 ||
            der_take(&rsa, 0x02, &n) != 0 || der_take(&rsa, 0x02, &e) != 0 || rsa.n != 0)
            goto refused;
        uint8_t exponent[4];
        if (der_unsigned(n, area->unique.rsa.buffer, 256) != 0 || !(area->unique.rsa.buffer[0] & 0x80) || der_unsigned(e, exponent, 4) != 0)
            goto refused;
        uint32_t value = (uint32_t)keybay_tpm2_get_be(exponent, 4);
        if (value < 3 || !(value & 1)) goto refused;
        area->type = TPM2_ALG_RSA;
        area->parameters.rsaDetail.symmetric.algorithm = TPM2_ALG_NULL;
        area->parameters.rsaDetail.scheme.scheme = TPM2_ALG_NULL;
        area->parameters.rsaDetail.keyBits = 2048;
        area->parameters.rsaDetail.exponent = value == 65537 ? 0 : value;
        area->unique.rsa.size = 256;
    } else if (same_oid(oid, oid_ec, sizeof oid_ec)) {
        der curve;
        if (der_take(&algorithm, 0x06, &curve) != 0 || algorithm.n != 0 || !same_oid(curve, oid_p256, sizeof oid_p256) || bits.n != 65 ||
            bits.p[0] != 0x04)
            goto refused;
        area->type = TPM2_ALG_ECC;
        area->parameters.eccDetail.symmetric.algorithm = TPM2_ALG_NULL;
        area->parameters.eccDetail.scheme.scheme = TPM2_ALG_NULL;
        area->parameters.eccDetail.curveID = TPM2_ECC_NIST_P256;
        area->parameters.eccDetail.kdf.scheme = TPM2_ALG_NULL;
        area->unique.ecc.x.size = area->unique.ecc.y.size = 32;
        memcpy(area->unique.ecc.x.buffer, bits.p + 1, 32);
        memcpy(area->unique.ecc.y.buffer, bits.p + 33, 32);
    } else {
        goto refused;
    }
    memcpy(key->der, spki, length);
    key->der_length = length;
    /* name = nameAlg || SHA-256(the marshaled TPMT_PUBLIC), as the TPM computes it at LoadExternal */
    uint8_t marshaled[sizeof(TPMT_PUBLIC)];
    size_t size = 0;
    if (T(Tss2_MU_TPMT_PUBLIC_Marshal)(area, marshaled, sizeof marshaled, &size) != TSS2_RC_SUCCESS) goto refused;
    keybay_tpm2_put_be(key->name.name, TPM2_ALG_SHA256, 2);
    crypto_hash_sha256(key->name.name + 2, marshaled, size);
    key->name.size = 34;
    /* authPolicy = H(H(0^32 || TPM_CC_PolicyAuthorize || name) || policyRef (empty)) */
    uint8_t head[32 + 4] = { 0 }, first[32];
    keybay_tpm2_put_be(head + 32, TPM2_CC_PolicyAuthorize, 4);
    crypto_hash_sha256_state h;
    crypto_hash_sha256_init(&h);
    crypto_hash_sha256_update(&h, head, sizeof head);
    crypto_hash_sha256_update(&h, key->name.name, key->name.size);
    crypto_hash_sha256_final(&h, first);
    crypto_hash_sha256(key->policy, first, sizeof first);
    return KEYBAY_OK;
refused:
    keybay_host_error_reason(host, "invalid-public-key");
    return fail(host, KEYBAY_ERR_INVALID_OPTION, "the PCR public key is not an RSA-2048 or EC P-256 public key (a DER SubjectPublicKeyInfo)");
}

/* Reads at most `capacity` bytes of `path` (a regular file) into `out`. */
static keybay_status read_small_file(const keybay_host *host, const char *path, const char *what, uint8_t *out, size_t capacity, size_t *length,
                                     int *missing) {
    *length = 0;
    if (missing) *missing = 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
    if (fd < 0) {
        if (missing && errno == ENOENT) { *missing = 1; return KEYBAY_ERR_IO; }
        return keybay_rf_fail_errno(host, what, path);
    }
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) { close(fd); return fail(host, KEYBAY_ERR_IO, "%s %s: not a regular file", what, path); }
    size_t n = 0;
    while (n < capacity) {
        ssize_t r = read(fd, out + n, capacity - n);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) { int e = errno; close(fd); errno = e; return keybay_rf_fail_errno(host, what, path); }
        if (r == 0) break;
        n += (size_t)r;
    }
    close(fd);
    if (n == capacity) return fail(host, KEYBAY_ERR_IO, "%s %s: longer than %zu bytes", what, path, capacity - 1);
    *length = n;
    return KEYBAY_OK;
}

keybay_status keybay_tpm2_signing_key_from_pem(const keybay_host *host, const char *path, keybay_tpm2_signing_key *key) {
    static const char begin[] = "-----BEGIN PUBLIC KEY-----", end[] = "-----END PUBLIC KEY-----";
    uint8_t text[8192], spki[KEYBAY_TPM2_MAX_SPKI];
    size_t n = 0, length = 0;
    keybay_status s = read_small_file(host, path, "cannot read the PCR public key", text, sizeof text, &n, NULL);
    if (s != KEYBAY_OK) return s;
    text[n] = 0;
    const char *from = strstr((const char *)text, begin), *to = from ? strstr(from, end) : NULL;
    if (!from || !to || sodium_base642bin(spki, sizeof spki, from + sizeof begin - 1, (size_t)(to - from) - (sizeof begin - 1), " \t\r\n", &length,
                                          NULL, sodium_base64_VARIANT_ORIGINAL) != 0) {
        keybay_host_error_reason(host, "invalid-public-key");
        return fail(host, KEYBAY_ERR_INVALID_OPTION, "%s is not a PEM public key (-----BEGIN PUBLIC KEY-----)", path);
    }
    return keybay_tpm2_signing_key_from_der(host, spki, length, key);
}

/* ---- tpm2-pcr-signature.json ---- */

typedef struct json { const char *p, *end; } json;

static void json_space(json *j) { while (j->p < j->end && (*j->p == ' ' || *j->p == '\t' || *j->p == '\r' || *j->p == '\n')) j->p++; }
static int json_char(json *j, char c) { json_space(j); if (j->p < j->end && *j->p == c) { j->p++; return 1; } return 0; }

/* A string without escapes but "\/" (what systemd writes: hex and base64), into `out`. */
static int json_string(json *j, char *out, size_t size) {
    if (!json_char(j, '"')) return -1;
    size_t n = 0;
    while (j->p < j->end && *j->p != '"') {
        char c = *j->p++;
        if (c == '\\') { if (j->p >= j->end || *j->p != '/') return -1; c = *j->p++; }
        if ((unsigned char)c < 0x20 || n + 1 >= size) return -1;
        out[n++] = c;
    }
    if (j->p >= j->end) return -1;
    j->p++;
    out[n] = 0;
    return 0;
}

/* Skips any value (for members this reader does not use). */
static int json_skip(json *j, int depth) {
    json_space(j);
    if (j->p >= j->end || depth > 16) return -1;
    char c = *j->p;
    if (c == '"') {
        for (j->p++; j->p < j->end && *j->p != '"'; j->p++) if (*j->p == '\\') j->p++;
        if (j->p >= j->end) return -1;
        j->p++;
        return 0;
    }
    if (c == '{' || c == '[') {
        char close = c == '{' ? '}' : ']';
        j->p++;
        if (json_char(j, close)) return 0;
        do {
            if (c == '{') { char name[64]; if (json_string(j, name, sizeof name) != 0 || !json_char(j, ':')) return -1; }
            if (json_skip(j, depth + 1) != 0) return -1;
        } while (json_char(j, ','));
        return json_char(j, close) ? 0 : -1;
    }
    while (j->p < j->end && (*j->p == '-' || *j->p == '.' || *j->p == '+' || (*j->p >= '0' && *j->p <= '9') || (*j->p >= 'a' && *j->p <= 'z'))) j->p++;
    return 0;
}

/* One entry: {"pcrs": [...], "pkfp": "...", "pol": "...", "sig": "..."}; *usable when it is
   complete and well formed (an entry that is not is skipped, as another bank's would be). */
static int json_entry(json *j, uint32_t *pcrs, uint8_t fingerprint[32], uint8_t policy[32], uint8_t *signature, size_t *signature_length,
                      int *usable) {
    char text[2048];
    int seen = 0, bad = 0;
    *pcrs = 0;
    if (!json_char(j, '{')) return -1;
    if (json_char(j, '}')) { *usable = 0; return 0; }
    do {
        char name[16];
        if (json_string(j, name, sizeof name) != 0 || !json_char(j, ':')) return -1;
        if (strcmp(name, "pcrs") == 0) {
            if (!json_char(j, '[')) return -1;
            if (!json_char(j, ']')) {
                do {
                    json_space(j);
                    int value = 0, digits = 0;
                    while (j->p < j->end && *j->p >= '0' && *j->p <= '9' && digits < 3) { value = value * 10 + (*j->p++ - '0'); digits++; }
                    if (!digits || value > 23) bad = 1; else *pcrs |= 1u << value;
                    if (j->p < j->end && *j->p >= '0' && *j->p <= '9') return -1;
                } while (json_char(j, ','));
                if (!json_char(j, ']')) return -1;
            }
            seen |= 1;
        } else if (strcmp(name, "pkfp") == 0 || strcmp(name, "pol") == 0) {
            size_t n = 0;
            if (json_string(j, text, sizeof text) != 0) return -1;
            if (sodium_hex2bin(name[1] == 'k' ? fingerprint : policy, 32, text, strlen(text), NULL, &n, NULL) != 0 || n != 32) bad = 1;
            seen |= name[1] == 'k' ? 2 : 4;
        } else if (strcmp(name, "sig") == 0) {
            if (json_string(j, text, sizeof text) != 0) return -1;
            if (sodium_base642bin(signature, KEYBAY_TPM2_MAX_SIGNATURE, text, strlen(text), NULL, signature_length, NULL,
                                  sodium_base64_VARIANT_ORIGINAL) != 0) bad = 1;
            seen |= 8;
        } else if (json_skip(j, 1) != 0) {
            return -1;
        }
    } while (json_char(j, ','));
    if (!json_char(j, '}')) return -1;
    *usable = seen == 15 && !bad;
    return 0;
}

keybay_status keybay_tpm2_find_signature(const keybay_host *host, const char *path, const keybay_tpm2_signing_key *key, uint32_t pcrs,
                                         const uint8_t policy[32], uint8_t *signature, size_t *signature_length, int *found) {
    uint8_t text[KEYBAY_TPM2_MAX_SIGNATURE_FILE];
    size_t n = 0;
    int missing = 0;
    *found = 0;
    keybay_status s = read_small_file(NULL, path, "cannot read the PCR signature", text, sizeof text, &n, &missing);
    if (missing) return KEYBAY_OK; /* no signature there: none matches */
    if (s != KEYBAY_OK) return read_small_file(host, path, "cannot read the PCR signature", text, sizeof text, &n, NULL);
    json j = { (const char *)text, (const char *)text + n };
    int ok = json_char(&j, '{');
    if (ok && !json_char(&j, '}')) {
        do {
            char bank[16];
            if (json_string(&j, bank, sizeof bank) != 0 || !json_char(&j, ':')) { ok = 0; break; }
            if (strcmp(bank, "sha256") != 0) { if (json_skip(&j, 1) != 0) { ok = 0; break; } continue; }
            if (!json_char(&j, '[')) { ok = 0; break; }
            if (json_char(&j, ']')) continue;
            do {
                uint32_t entry_pcrs;
                uint8_t fingerprint[32], entry_policy[32], entry_signature[KEYBAY_TPM2_MAX_SIGNATURE];
                int usable = 0;
                size_t length = 0;
                if (json_entry(&j, &entry_pcrs, fingerprint, entry_policy, entry_signature, &length, &usable) != 0) { ok = 0; break; }
                /* The first entry for this key, these PCRs and the policy of their values now. */
                if (!*found && usable && entry_pcrs == pcrs && sodium_memcmp(fingerprint, key->fingerprint, 32) == 0 &&
                    sodium_memcmp(entry_policy, policy, 32) == 0) {
                    *found = 1;
                    *signature_length = length;
                    memcpy(signature, entry_signature, length);
                }
            } while (ok && json_char(&j, ','));
            if (ok && !json_char(&j, ']')) ok = 0;
        } while (ok && json_char(&j, ','));
        if (ok && !json_char(&j, '}')) ok = 0;
    }
    json_space(&j);
    if (!ok || j.p != j.end) {
        *found = 0;
        keybay_host_error_reason(host, "invalid-pcr-signature");
        return fail(host, KEYBAY_ERR_ROOT_MISMATCH, "%s is not a PCR signature file in systemd-measure's JSON format", path);
    }
    return KEYBAY_OK;
}

size_t keybay_tpm2_signed_encode(const keybay_tpm2_signing_key *key, const char *path, uint8_t *out, size_t capacity) {
    size_t path_length = strlen(path), length = 2 + key->der_length + 2 + path_length;
    if (capacity < length) return 0;
    keybay_tpm2_put_be(out, key->der_length, 2);
    memcpy(out + 2, key->der, key->der_length);
    keybay_tpm2_put_be(out + 2 + key->der_length, path_length, 2);
    memcpy(out + 4 + key->der_length, path, path_length);
    return length;
}

/* ---- the session ---- */

/* The TPMT_SIGNATURE of `signature` for `key`: RSASSA-PKCS1-v1_5 (256 bytes) or ECDSA (DER
   r, s), both over SHA-256. */
static int tpm_signature(const keybay_tpm2_signing_key *key, const uint8_t *signature, size_t length, TPMT_SIGNATURE *out) {
    memset(out, 0, sizeof *out);
    if (key->public.publicArea.type == TPM2_ALG_RSA) {
        if (length != 256) return -1;
        out->sigAlg = TPM2_ALG_RSASSA;
        out->signature.rsassa.hash = TPM2_ALG_SHA256;
        out->signature.rsassa.sig.size = 256;
        memcpy(out->signature.rsassa.sig.buffer, signature, 256);
        return 0;
    }
    der all = { signature, length }, pair, r, s;
    if (der_take(&all, 0x30, &pair) != 0 || all.n != 0 || der_take(&pair, 0x02, &r) != 0 || der_take(&pair, 0x02, &s) != 0 || pair.n != 0)
        return -1;
    out->sigAlg = TPM2_ALG_ECDSA;
    out->signature.ecdsa.hash = TPM2_ALG_SHA256;
    out->signature.ecdsa.signatureR.size = out->signature.ecdsa.signatureS.size = 32;
    return der_unsigned(r, out->signature.ecdsa.signatureR.buffer, 32) == 0 && der_unsigned(s, out->signature.ecdsa.signatureS.buffer, 32) == 0
               ? 0 : -1;
}

keybay_status keybay_tpm2_verify_signature(const keybay_host *host, keybay_tpm2 *t, const keybay_tpm2_signing_key *key, const uint8_t policy[32],
                                           const uint8_t *signature, size_t length, TPMT_TK_VERIFIED **ticket, int *valid) {
    *ticket = NULL;
    *valid = 0;
    TPMT_SIGNATURE sig;
    if (tpm_signature(key, signature, length, &sig) != 0) return KEYBAY_OK;
    ESYS_TR handle = ESYS_TR_NONE;
    /* Loaded under the owner hierarchy: a key of the null hierarchy gets a null ticket, which
       PolicyAuthorize refuses. */
    TSS2_RC rc = T(Esys_LoadExternal)(t->esys, ESYS_TR_NONE, ESYS_TR_NONE, ESYS_TR_NONE, NULL, &key->public, ESYS_TR_RH_OWNER, &handle);
    if (rc != TSS2_RC_SUCCESS) return keybay_tpm2_fail(host, t, rc, KEYBAY_ERR_INTERNAL, "cannot load the PCR public key");
    /* aHash = H(approvedPolicy || policyRef (empty)): what systemd-measure signs */
    TPM2B_DIGEST digest = { .size = 32 };
    crypto_hash_sha256(digest.buffer, policy, 32);
    rc = T(Esys_VerifySignature)(t->esys, handle, ESYS_TR_NONE, ESYS_TR_NONE, ESYS_TR_NONE, &digest, &sig, ticket);
    keybay_tpm2_flush(t, &handle);
    if (rc == TSS2_RC_SUCCESS) { *valid = 1; return KEYBAY_OK; }
    *ticket = NULL;
    if (keybay_tpm2_rc_is_tpm(rc) && (rc & TPM2_RC_FMT1)) return KEYBAY_OK; /* TPM_RC_SIGNATURE and its kin: it does not verify */
    return keybay_tpm2_fail(host, t, rc, KEYBAY_ERR_INTERNAL, "cannot verify the PCR signature");
}

/* ---- what both TPM plugins do with these ---- */

const char *keybay_tpm2_signature_file(const char *path) {
    static const char *const defaults[] = { KEYBAY_TPM2_DEFAULT_SIGNATURES };
    if (path[0]) return path;
    for (size_t i = 0; i < sizeof defaults / sizeof defaults[0]; i++)
        if (access(defaults[i], F_OK) == 0) return defaults[i];
    return NULL;
}

keybay_status keybay_tpm2_signed_ticket(const keybay_host *host, keybay_tpm2 *t, const keybay_tpm2_signing_key *key, const char *path,
                                        uint32_t pcrs, const uint8_t policy[32], TPMT_TK_VERIFIED **ticket) {
    *ticket = NULL;
    const char *file = keybay_tpm2_signature_file(path);
    if (!file) return KEYBAY_OK;
    uint8_t signature[KEYBAY_TPM2_MAX_SIGNATURE];
    size_t length = 0;
    int found = 0, valid = 0;
    keybay_status s = keybay_tpm2_find_signature(host, file, key, pcrs, policy, signature, &length, &found);
    if (s == KEYBAY_OK && found) s = keybay_tpm2_verify_signature(host, t, key, policy, signature, length, ticket, &valid);
    if (s == KEYBAY_OK && !valid && *ticket) { T(Esys_Free)(*ticket); *ticket = NULL; }
    return s;
}

/* The options both TPM plugins take: pcrs (keybay_tpm2_parse_pcrs), recovery=yes|no (the root's,
   with `recovery`), pcr-public-key and pcr-signature (absolute paths; the key is read later, with
   tss2 loaded). A key without pcrs binds PCR 11. */
keybay_status keybay_tpm2_parse_policy_options(const keybay_host *host, const char *plugin, const keybay_option *options, size_t count,
                                               uint32_t *pcrs, int *recovery, const char **public_key, const char **signature) {
    if (recovery) *recovery = 0;
    *public_key = *signature = NULL;
    keybay_option rest[8];
    size_t n = 0;
    for (size_t i = 0; i < count; i++) {
        int is_key = strcmp(options[i].name, "pcr-public-key") == 0;
        if (is_key || strcmp(options[i].name, "pcr-signature") == 0) {
            if (options[i].value[0] != '/' || strlen(options[i].value) >= KEYBAY_TPM2_SIGNATURE_PATH_BYTES) {
                keybay_host_error_reason(host, "invalid-path");
                return fail(host, KEYBAY_ERR_INVALID_OPTION, "%s %s=%s: give an absolute path", plugin, options[i].name, options[i].value);
            }
            *(is_key ? public_key : signature) = options[i].value;
        } else if (recovery && strcmp(options[i].name, "recovery") == 0) {
            if (strcmp(options[i].value, "yes") != 0 && strcmp(options[i].value, "no") != 0) {
                keybay_host_error_reason(host, "invalid-recovery");
                return fail(host, KEYBAY_ERR_INVALID_OPTION, "%s recovery=%s: give yes or no", plugin, options[i].value);
            }
            *recovery = strcmp(options[i].value, "yes") == 0;
        } else if (n < sizeof rest / sizeof rest[0]) {
            rest[n++] = options[i];
        } else {
            return fail(host, KEYBAY_ERR_INVALID_OPTION, "%s: too many options", plugin);
        }
    }
    keybay_status s = keybay_tpm2_parse_pcrs(host, plugin, rest, n, pcrs);
    if (s == KEYBAY_OK && *signature && !*public_key) {
        keybay_host_error_reason(host, "signature-without-key");
        return fail(host, KEYBAY_ERR_INVALID_OPTION, "%s pcr-signature needs pcr-public-key (the key that signs it)", plugin);
    }
    if (s == KEYBAY_OK && *public_key && !*pcrs) *pcrs = 1u << 11; /* systemd-measure's PCR */
    return s;
}

