// SPDX-License-Identifier: Apache-2.0
/*
 * A virtual CTAP 2.1 authenticator for tests, reached through the real libfido2 via its custom
 * io + transport hooks. What it implements and how it is configured: see
 * include/keybay_virtual_authenticator.h. Written from the CTAP 2.1 specification; OpenSSL's
 * libcrypto provides P-256 (ECDH, ECDSA), AES-256-CBC, SHA-256 and HMAC-SHA-256.
 *
 * The transport carries whole CTAPHID messages: tx(cmd, payload) queues a request, rx(cmd)
 * runs it and returns the reply payload (for CTAPHID_CBOR: a status byte and CBOR). A
 * CTAPHID_CANCEL sent while a touch is awaited (touch-delay-ms) ends it with
 * CTAP2_ERR_KEEPALIVE_CANCEL. One mutex guards every device; it is released while a touch is
 * awaited so that a cancel or a setting can get through.
 */
#define _POSIX_C_SOURCE 200809L
#define OPENSSL_SUPPRESS_DEPRECATED /* EC_KEY keeps this file short; fine for a test double */

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <openssl/bn.h>
#include <openssl/crypto.h>
#include <openssl/ec.h>
#include <openssl/ecdh.h>
#include <openssl/ecdsa.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/obj_mac.h>
#include <openssl/rand.h>
#include <openssl/sha.h>

#include "keybay_virtual_authenticator.h"

#define VA_MSG_MAX 2048
#define VA_MAX_RETRIES 8
#define VA_NONCE_BYTES 16
#define VA_TAG_BYTES 16
#define VA_CRED_ID_BYTES (VA_NONCE_BYTES + VA_TAG_BYTES)

/* CTAP status codes used here. */
enum {
    ST_OK = 0x00,
    ST_INVALID_COMMAND = 0x01,
    ST_INVALID_PARAMETER = 0x02,
    ST_INVALID_LENGTH = 0x03,
    ST_CBOR_UNEXPECTED_TYPE = 0x11,
    ST_INVALID_CBOR = 0x12,
    ST_MISSING_PARAMETER = 0x14,
    ST_UNSUPPORTED_ALGORITHM = 0x26,
    ST_OPERATION_DENIED = 0x27,
    ST_UNSUPPORTED_OPTION = 0x2b,
    ST_INVALID_OPTION = 0x2c,
    ST_KEEPALIVE_CANCEL = 0x2d,
    ST_NO_CREDENTIALS = 0x2e,
    ST_USER_ACTION_TIMEOUT = 0x2f,
    ST_PIN_INVALID = 0x31,
    ST_PIN_BLOCKED = 0x32,
    ST_PIN_AUTH_INVALID = 0x33,
    ST_PIN_AUTH_BLOCKED = 0x34,
    ST_PIN_NOT_SET = 0x35,
    ST_PIN_REQUIRED = 0x36,
    ST_INVALID_SUBCOMMAND = 0x3e,
    ST_OTHER = 0x7f,
};

#define PERM_MC 0x01u
#define PERM_GA 0x02u

typedef struct va_device {
    int present;
    int has_pin;
    char pin[64];
    int retries;
    int in_a_row;
    int deny, timeout, touch_delay_ms, uv, force_uv, skip_up, permissions;
    uint8_t protocols[2];
    size_t protocol_count;
    uint8_t master[32];
    EC_KEY *ka; /* key agreement key; new at power-up and after a wrong PIN */
    uint8_t token[32];
    int token_set;
    unsigned token_perms;
    int token_has_rp;
    uint8_t token_rp_hash[32];
    uint32_t counter;
    /* transport */
    uint8_t request[VA_MSG_MAX];
    size_t request_length;
    uint8_t request_cmd;
    int pending;
    int cancel;
    /* counters and state for tests */
    long touches, assertions, credentials, pin_failures, opens, cancels;
    int waiting_for_touch;
} va_device;

typedef struct va_handle {
    int index;
} va_handle;

static va_device va_devices[KEYBAY_VA_MAX_DEVICES];
static pthread_mutex_t va_lock = PTHREAD_MUTEX_INITIALIZER;
static int va_ready;

static const uint8_t va_aaguid[16] = {0x6b, 0x65, 0x79, 0x62, 0x61, 0x79, 0x2d, 0x76,
                                      0x69, 0x72, 0x74, 0x75, 0x61, 0x6c, 0x00, 0x01};

/* ---------------------------------------------------------------- CBOR writer */

typedef struct cbw {
    uint8_t buf[VA_MSG_MAX];
    size_t len;
    int overflow;
} cbw;

static void cbw_raw(cbw *w, const void *p, size_t n) {
    if (w->overflow || n > sizeof w->buf - w->len) {
        w->overflow = 1;
        return;
    }
    memcpy(w->buf + w->len, p, n);
    w->len += n;
}

static void cbw_head(cbw *w, unsigned major, uint64_t v) {
    uint8_t h[9];
    size_t n;
    uint8_t m = (uint8_t)(major << 5);
    if (v < 24) {
        h[0] = m | (uint8_t)v;
        n = 1;
    } else if (v <= 0xff) {
        h[0] = m | 24;
        h[1] = (uint8_t)v;
        n = 2;
    } else if (v <= 0xffff) {
        h[0] = m | 25;
        h[1] = (uint8_t)(v >> 8);
        h[2] = (uint8_t)v;
        n = 3;
    } else if (v <= 0xffffffffu) {
        h[0] = m | 26;
        for (int i = 0; i < 4; i++) h[1 + i] = (uint8_t)(v >> (24 - 8 * i));
        n = 5;
    } else {
        h[0] = m | 27;
        for (int i = 0; i < 8; i++) h[1 + i] = (uint8_t)(v >> (56 - 8 * i));
        n = 9;
    }
    cbw_raw(w, h, n);
}

static void cbw_int(cbw *w, int64_t v) {
    if (v >= 0) cbw_head(w, 0, (uint64_t)v);
    else cbw_head(w, 1, (uint64_t)(-1 - v));
}
static void cbw_bytes(cbw *w, const uint8_t *p, size_t n) {
    cbw_head(w, 2, n);
    cbw_raw(w, p, n);
}
static void cbw_text(cbw *w, const char *s) {
    size_t n = strlen(s);
    cbw_head(w, 3, n);
    cbw_raw(w, s, n);
}
static void cbw_array(cbw *w, size_t n) { cbw_head(w, 4, n); }
static void cbw_map(cbw *w, size_t n) { cbw_head(w, 5, n); }
static void cbw_bool(cbw *w, int b) {
    uint8_t v = b ? 0xf5 : 0xf4;
    cbw_raw(w, &v, 1);
}

/* ---------------------------------------------------------------- CBOR reader */

typedef struct cbi {
    unsigned major;
    uint64_t val;         /* integer value, length or count; simple value for major 7 */
    const uint8_t *data;  /* string bytes, or the first child of an array or map */
    const uint8_t *next;  /* just past the whole item */
    const uint8_t *end;   /* end of the enclosing buffer */
} cbi;

static int cb_parse(const uint8_t *p, const uint8_t *end, cbi *out, int depth) {
    if (depth > 8 || p >= end) return -1;
    unsigned major = p[0] >> 5, info = p[0] & 0x1f;
    p++;
    uint64_t v;
    if (info < 24) v = info;
    else if (info <= 27) {
        size_t n = (size_t)1 << (info - 24);
        if ((size_t)(end - p) < n) return -1;
        v = 0;
        for (size_t i = 0; i < n; i++) v = (v << 8) | p[i];
        p += n;
    } else return -1; /* no indefinite lengths */
    out->major = major;
    out->val = v;
    out->data = p;
    out->end = end;
    switch (major) {
    case 0: case 1: case 7:
        if (major == 7 && info >= 25) return -1; /* no floats */
        out->next = p;
        return 0;
    case 2: case 3:
        if (v > (uint64_t)(end - p)) return -1;
        out->next = p + v;
        return 0;
    case 4: case 5: {
        uint64_t items = major == 5 ? v * 2 : v;
        if (items > VA_MSG_MAX) return -1;
        cbi child;
        for (uint64_t i = 0; i < items; i++) {
            if (cb_parse(p, end, &child, depth + 1) < 0) return -1;
            p = child.next;
        }
        out->next = p;
        return 0;
    }
    default:
        return -1; /* no tags */
    }
}

/* Finds the value under integer key `key` in a map; 1 found, 0 absent, -1 malformed. */
static int cb_get_int(const cbi *map, int64_t key, cbi *value) {
    if (map->major != 5) return -1;
    const uint8_t *p = map->data;
    for (uint64_t i = 0; i < map->val; i++) {
        cbi k, v;
        if (cb_parse(p, map->end, &k, 1) < 0 || cb_parse(k.next, map->end, &v, 1) < 0) return -1;
        p = v.next;
        int64_t kv;
        if (k.major == 0 && k.val <= INT64_MAX) kv = (int64_t)k.val;
        else if (k.major == 1 && k.val < INT64_MAX) kv = -1 - (int64_t)k.val;
        else continue;
        if (kv == key) {
            *value = v;
            return 1;
        }
    }
    return 0;
}

static int cb_get_text(const cbi *map, const char *key, cbi *value) {
    if (map->major != 5) return -1;
    size_t klen = strlen(key);
    const uint8_t *p = map->data;
    for (uint64_t i = 0; i < map->val; i++) {
        cbi k, v;
        if (cb_parse(p, map->end, &k, 1) < 0 || cb_parse(k.next, map->end, &v, 1) < 0) return -1;
        p = v.next;
        if (k.major == 3 && k.val == klen && memcmp(k.data, key, klen) == 0) {
            *value = v;
            return 1;
        }
    }
    return 0;
}

static int cb_is_bool(const cbi *v, int *out) {
    if (v->major != 7 || (v->val != 20 && v->val != 21)) return 0;
    *out = v->val == 21;
    return 1;
}

/* ---------------------------------------------------------------- crypto helpers */

static void va_sha256(const void *p, size_t n, uint8_t out[32]) { SHA256(p, n, out); }

static void va_hmac(const uint8_t *key, size_t keylen, const uint8_t *msg, size_t n, uint8_t out[32]) {
    unsigned int outlen = 32;
    HMAC(EVP_sha256(), key, (int)keylen, msg, n, out, &outlen);
}

/* HMAC(master, label | 0x00 | nonce) */
static void va_derive(const va_device *d, const char *label, const uint8_t nonce[VA_NONCE_BYTES],
                      uint8_t out[32]) {
    uint8_t msg[64];
    size_t l = strlen(label);
    memcpy(msg, label, l);
    msg[l] = 0;
    memcpy(msg + l + 1, nonce, VA_NONCE_BYTES);
    va_hmac(d->master, sizeof d->master, msg, l + 1 + VA_NONCE_BYTES, out);
}

/* A credential id is nonce | tag, tag = HMAC(master, nonce | rp_hash) cut to VA_TAG_BYTES: only
   this device, for this rp, recognises its ids. */
static void va_tag(const va_device *d, const uint8_t nonce[VA_NONCE_BYTES], const uint8_t rp_hash[32],
                   uint8_t tag[VA_TAG_BYTES]) {
    uint8_t msg[VA_NONCE_BYTES + 32], mac[32];
    memcpy(msg, nonce, VA_NONCE_BYTES);
    memcpy(msg + VA_NONCE_BYTES, rp_hash, 32);
    va_hmac(d->master, sizeof d->master, msg, sizeof msg, mac);
    memcpy(tag, mac, VA_TAG_BYTES);
}

static EC_KEY *va_new_random_key(void) {
    EC_KEY *k = EC_KEY_new_by_curve_name(NID_X9_62_prime256v1);
    if (k != NULL && EC_KEY_generate_key(k) != 1) {
        EC_KEY_free(k);
        k = NULL;
    }
    return k;
}

/* The credential key for a nonce: scalar = derive("key") mod (n - 1) + 1. */
static EC_KEY *va_credential_key(const va_device *d, const uint8_t nonce[VA_NONCE_BYTES]) {
    uint8_t seed[32];
    va_derive(d, "key", nonce, seed);
    EC_KEY *k = EC_KEY_new_by_curve_name(NID_X9_62_prime256v1);
    BN_CTX *ctx = BN_CTX_new();
    BIGNUM *s = BN_bin2bn(seed, sizeof seed, NULL), *order = BN_new(), *d_ = BN_new();
    EC_POINT *pub = NULL;
    int ok = 0;
    if (k && ctx && s && order && d_) {
        const EC_GROUP *g = EC_KEY_get0_group(k);
        pub = EC_POINT_new(g);
        ok = pub && EC_GROUP_get_order(g, order, ctx) == 1 && BN_sub_word(order, 1) == 1 &&
             BN_nnmod(d_, s, order, ctx) == 1 && BN_add_word(d_, 1) == 1 &&
             EC_POINT_mul(g, pub, d_, NULL, NULL, ctx) == 1 && EC_KEY_set_private_key(k, d_) == 1 &&
             EC_KEY_set_public_key(k, pub) == 1;
    }
    OPENSSL_cleanse(seed, sizeof seed);
    EC_POINT_free(pub);
    BN_clear_free(s);
    BN_free(order);
    BN_clear_free(d_);
    BN_CTX_free(ctx);
    if (!ok) {
        EC_KEY_free(k);
        return NULL;
    }
    return k;
}

static int va_public_xy(const EC_KEY *k, uint8_t x[32], uint8_t y[32]) {
    BN_CTX *ctx = BN_CTX_new();
    BIGNUM *bx = BN_new(), *by = BN_new();
    int ok = ctx && bx && by &&
             EC_POINT_get_affine_coordinates(EC_KEY_get0_group(k), EC_KEY_get0_public_key(k), bx, by, ctx) == 1 &&
             BN_bn2binpad(bx, x, 32) == 32 && BN_bn2binpad(by, y, 32) == 32;
    BN_free(bx);
    BN_free(by);
    BN_CTX_free(ctx);
    return ok ? 0 : -1;
}

static void cbw_cose_key(cbw *w, const EC_KEY *k, int64_t alg) {
    uint8_t x[32], y[32];
    if (va_public_xy(k, x, y) < 0) {
        w->overflow = 1;
        return;
    }
    cbw_map(w, 5);
    cbw_int(w, 1); cbw_int(w, 2);     /* kty: EC2 */
    cbw_int(w, 3); cbw_int(w, alg);   /* alg */
    cbw_int(w, -1); cbw_int(w, 1);    /* crv: P-256 */
    cbw_int(w, -2); cbw_bytes(w, x, 32);
    cbw_int(w, -3); cbw_bytes(w, y, 32);
}

/* ECDSA-SHA256 over a | b, DER. */
static int va_sign(EC_KEY *k, const uint8_t *a, size_t alen, const uint8_t *b, size_t blen,
                   uint8_t *sig, unsigned int *siglen) {
    uint8_t digest[32];
    SHA256_CTX c;
    SHA256_Init(&c);
    SHA256_Update(&c, a, alen);
    SHA256_Update(&c, b, blen);
    SHA256_Final(digest, &c);
    return ECDSA_sign(0, digest, sizeof digest, sig, siglen, k) == 1 ? 0 : -1;
}

/* PIN/UV auth protocol state: protocol 1 uses one 32-byte key; protocol 2 an HMAC key and an
   AES key (64 bytes). */
typedef struct va_shared {
    unsigned protocol;
    uint8_t key[64];
} va_shared;

static void va_hkdf32(const uint8_t ikm[32], const char *info, uint8_t out[32]) {
    uint8_t salt[32] = {0}, prk[32], msg[64];
    va_hmac(salt, sizeof salt, ikm, 32, prk);
    size_t l = strlen(info);
    memcpy(msg, info, l);
    msg[l] = 1;
    va_hmac(prk, sizeof prk, msg, l + 1, out);
    OPENSSL_cleanse(prk, sizeof prk);
}

/* Reads the platform's COSE key and derives the shared secret with the device's key. */
static uint8_t va_ecdh(va_device *d, const cbi *cose, unsigned protocol, va_shared *out) {
    cbi x, y;
    if (cose->major != 5 || cb_get_int(cose, -2, &x) != 1 || cb_get_int(cose, -3, &y) != 1 ||
        x.major != 2 || y.major != 2 || x.val != 32 || y.val != 32)
        return ST_INVALID_PARAMETER;
    if (d->ka == NULL && (d->ka = va_new_random_key()) == NULL) return ST_OTHER;
    const EC_GROUP *g = EC_KEY_get0_group(d->ka);
    BN_CTX *ctx = BN_CTX_new();
    BIGNUM *bx = BN_bin2bn(x.data, 32, NULL), *by = BN_bin2bn(y.data, 32, NULL);
    EC_POINT *p = EC_POINT_new(g);
    uint8_t z[32];
    int ok = ctx && bx && by && p && EC_POINT_set_affine_coordinates(g, p, bx, by, ctx) == 1 &&
             ECDH_compute_key(z, sizeof z, p, d->ka, NULL) == 32;
    EC_POINT_free(p);
    BN_free(bx);
    BN_free(by);
    BN_CTX_free(ctx);
    if (!ok) return ST_INVALID_PARAMETER;
    out->protocol = protocol;
    if (protocol == 1) {
        va_sha256(z, sizeof z, out->key);
    } else {
        va_hkdf32(z, "CTAP2 HMAC key", out->key);
        va_hkdf32(z, "CTAP2 AES key", out->key + 32);
    }
    OPENSSL_cleanse(z, sizeof z);
    return ST_OK;
}

static int va_aes(int encrypt, const uint8_t key[32], const uint8_t iv[16], const uint8_t *in,
                  size_t n, uint8_t *out) {
    EVP_CIPHER_CTX *c = EVP_CIPHER_CTX_new();
    int len = 0, fin = 0;
    int ok = c && EVP_CipherInit_ex(c, EVP_aes_256_cbc(), NULL, key, iv, encrypt) == 1 &&
             EVP_CIPHER_CTX_set_padding(c, 0) == 1 &&
             EVP_CipherUpdate(c, out, &len, in, (int)n) == 1 &&
             EVP_CipherFinal_ex(c, out + len, &fin) == 1 && (size_t)(len + fin) == n;
    EVP_CIPHER_CTX_free(c);
    return ok ? 0 : -1;
}

/* decrypt(shared, ct) -> pt; returns the plaintext length or -1. */
static long va_decrypt(const va_shared *s, const uint8_t *ct, size_t n, uint8_t *pt) {
    static const uint8_t zero_iv[16];
    if (s->protocol == 1) {
        if (n == 0 || n % 16 != 0 || va_aes(0, s->key, zero_iv, ct, n, pt) < 0) return -1;
        return (long)n;
    }
    if (n < 32 || n % 16 != 0 || va_aes(0, s->key + 32, ct, ct + 16, n - 16, pt) < 0) return -1;
    return (long)(n - 16);
}

/* encrypt(shared, pt) -> ct; returns the ciphertext length or -1. */
static long va_encrypt(const va_shared *s, const uint8_t *pt, size_t n, uint8_t *ct) {
    static const uint8_t zero_iv[16];
    if (n == 0 || n % 16 != 0) return -1;
    if (s->protocol == 1) return va_aes(1, s->key, zero_iv, pt, n, ct) < 0 ? -1 : (long)n;
    if (RAND_bytes(ct, 16) != 1 || va_aes(1, s->key + 32, ct, pt, n, ct + 16) < 0) return -1;
    return (long)(n + 16);
}

/* verify(key, msg, param): protocol 1 compares the first 16 bytes of the HMAC, protocol 2 all
   32; the HMAC key is at most the first 32 bytes of `key`. */
static int va_verify(unsigned protocol, const uint8_t *key, size_t keylen, const uint8_t *msg,
                     size_t n, const cbi *param) {
    uint8_t mac[32];
    va_hmac(key, keylen > 32 ? 32 : keylen, msg, n, mac);
    size_t want = protocol == 1 ? 16 : 32;
    int ok = param->major == 2 && param->val == want && CRYPTO_memcmp(mac, param->data, want) == 0;
    OPENSSL_cleanse(mac, sizeof mac);
    return ok;
}

static int va_protocol_offered(const va_device *d, uint64_t p) {
    for (size_t i = 0; i < d->protocol_count; i++)
        if (d->protocols[i] == p) return 1;
    return 0;
}

/* ---------------------------------------------------------------- device behaviour */

static void va_power_cycle(va_device *d) {
    d->in_a_row = 0;
    d->token_set = 0;
    OPENSSL_cleanse(d->token, sizeof d->token);
    EC_KEY_free(d->ka);
    d->ka = NULL;
}

static void va_sleep_ms(long ms) {
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0) {}
}

/* Waits for the touch (va_lock held on entry and exit; released while waiting). */
static uint8_t va_presence(va_device *d) {
    if (d->deny) return ST_OPERATION_DENIED;
    if (d->timeout) return ST_USER_ACTION_TIMEOUT;
    d->waiting_for_touch = 1;
    for (long waited = 0; waited < d->touch_delay_ms && !d->cancel; waited += 5) {
        pthread_mutex_unlock(&va_lock);
        va_sleep_ms(5);
        pthread_mutex_lock(&va_lock);
    }
    d->waiting_for_touch = 0;
    if (d->cancel) return ST_KEEPALIVE_CANCEL;
    if (!d->present) return ST_OTHER;
    d->touches++;
    return ST_OK;
}

static uint8_t va_get_info(va_device *d, cbw *w) {
    cbw_map(w, 6);
    cbw_int(w, 1);
    cbw_array(w, 2);
    cbw_text(w, "FIDO_2_0");
    cbw_text(w, "FIDO_2_1");
    cbw_int(w, 2);
    cbw_array(w, 1);
    cbw_text(w, "hmac-secret");
    cbw_int(w, 3);
    cbw_bytes(w, va_aaguid, sizeof va_aaguid);
    cbw_int(w, 4);
    cbw_map(w, 4 + (d->uv ? 1 : 0));
    cbw_text(w, "rk"); cbw_bool(w, 0);
    cbw_text(w, "up"); cbw_bool(w, 1);
    if (d->uv) { cbw_text(w, "uv"); cbw_bool(w, 1); }
    cbw_text(w, "clientPin"); cbw_bool(w, d->has_pin);
    cbw_text(w, "pinUvAuthToken"); cbw_bool(w, d->permissions);
    cbw_int(w, 5);
    cbw_int(w, 1200);
    cbw_int(w, 6);
    cbw_array(w, d->protocol_count);
    for (size_t i = 0; i < d->protocol_count; i++) cbw_int(w, d->protocols[i]);
    return ST_OK;
}

static uint8_t va_issue_token(va_device *d, const va_shared *s, unsigned perms, const cbi *rp,
                              int have_rp, cbw *w) {
    if (RAND_bytes(d->token, sizeof d->token) != 1) return ST_OTHER;
    d->token_set = 1;
    d->token_perms = perms;
    d->token_has_rp = have_rp;
    if (have_rp) va_sha256(rp->data, (size_t)rp->val, d->token_rp_hash);
    uint8_t enc[64];
    long n = va_encrypt(s, d->token, sizeof d->token, enc);
    if (n < 0) return ST_OTHER;
    cbw_map(w, 1);
    cbw_int(w, 2);
    cbw_bytes(w, enc, (size_t)n);
    return ST_OK;
}

static uint8_t va_client_pin(va_device *d, const cbi *req, cbw *w) {
    cbi protocol, sub, ka, phe, perms, rp;
    if (cb_get_int(req, 2, &sub) != 1 || sub.major != 0) return ST_MISSING_PARAMETER;
    if (sub.val == 1) { /* getPINRetries */
        cbw_map(w, 1);
        cbw_int(w, 3);
        cbw_int(w, d->retries);
        return ST_OK;
    }
    if (cb_get_int(req, 1, &protocol) != 1 || protocol.major != 0) return ST_MISSING_PARAMETER;
    if (!va_protocol_offered(d, protocol.val)) return ST_INVALID_PARAMETER;
    switch (sub.val) {
    case 2: /* getKeyAgreement */
        if (d->ka == NULL && (d->ka = va_new_random_key()) == NULL) return ST_OTHER;
        cbw_map(w, 1);
        cbw_int(w, 1);
        cbw_cose_key(w, d->ka, -25);
        return ST_OK;
    case 5:   /* getPinToken */
    case 9: { /* getPinUvAuthTokenUsingPinWithPermissions */
        unsigned p = PERM_MC | PERM_GA;
        int have_rp = 0;
        if (sub.val == 9) {
            if (!d->permissions) return ST_INVALID_SUBCOMMAND;
            if (cb_get_int(req, 9, &perms) != 1 || perms.major != 0 || perms.val == 0) return ST_MISSING_PARAMETER;
            p = (unsigned)perms.val;
            int r = cb_get_int(req, 10, &rp);
            if (r < 0 || (r == 1 && rp.major != 3)) return ST_INVALID_PARAMETER;
            have_rp = r == 1;
        }
        if (cb_get_int(req, 3, &ka) != 1 || cb_get_int(req, 6, &phe) != 1 || phe.major != 2)
            return ST_MISSING_PARAMETER;
        if (!d->has_pin) return ST_PIN_NOT_SET;
        if (d->retries == 0) return ST_PIN_BLOCKED;
        if (d->in_a_row >= 3) return ST_PIN_AUTH_BLOCKED;
        va_shared s;
        uint8_t st = va_ecdh(d, &ka, (unsigned)protocol.val, &s);
        if (st != ST_OK) return st;
        uint8_t hash[64], want[32];
        if (phe.val > sizeof hash) return ST_INVALID_PARAMETER;
        long n = va_decrypt(&s, phe.data, (size_t)phe.val, hash);
        if (n != 16) return ST_INVALID_PARAMETER;
        d->retries--;
        va_sha256(d->pin, strlen(d->pin), want);
        if (CRYPTO_memcmp(hash, want, 16) != 0) {
            d->pin_failures++;
            d->in_a_row++;
            EC_KEY_free(d->ka); /* a new key agreement key after a wrong PIN */
            d->ka = NULL;
            if (d->retries == 0) return ST_PIN_BLOCKED;
            if (d->in_a_row >= 3) return ST_PIN_AUTH_BLOCKED;
            return ST_PIN_INVALID;
        }
        d->retries = VA_MAX_RETRIES;
        d->in_a_row = 0;
        return va_issue_token(d, &s, p, &rp, have_rp, w);
    }
    case 6: { /* getPinUvAuthTokenUsingUvWithPermissions */
        if (!d->permissions) return ST_INVALID_SUBCOMMAND;
        if (!d->uv) return ST_UNSUPPORTED_OPTION;
        if (cb_get_int(req, 3, &ka) != 1 || cb_get_int(req, 9, &perms) != 1 || perms.major != 0 || perms.val == 0)
            return ST_MISSING_PARAMETER;
        int r = cb_get_int(req, 10, &rp);
        if (r < 0 || (r == 1 && rp.major != 3)) return ST_INVALID_PARAMETER;
        va_shared s;
        uint8_t st = va_ecdh(d, &ka, (unsigned)protocol.val, &s);
        if (st != ST_OK) return st;
        return va_issue_token(d, &s, (unsigned)perms.val, &rp, r == 1, w);
    }
    default:
        return ST_INVALID_SUBCOMMAND;
    }
}

/* Checks pinUvAuthParam (key `param_key`) against the token, or the uv option; sets *uv. */
static uint8_t va_user_verification(va_device *d, const cbi *req, int64_t param_key,
                                    int64_t protocol_key, const cbi *options, unsigned perm,
                                    const uint8_t rp_hash[32], const cbi *cdh, int *uv) {
    cbi param, protocol, opt;
    *uv = 0;
    int has_param = cb_get_int(req, param_key, &param);
    if (has_param < 0) return ST_INVALID_CBOR;
    if (has_param) {
        if (param.major != 2) return ST_CBOR_UNEXPECTED_TYPE;
        if (cb_get_int(req, protocol_key, &protocol) != 1 || protocol.major != 0) return ST_MISSING_PARAMETER;
        if (!va_protocol_offered(d, protocol.val)) return ST_INVALID_PARAMETER;
        if (!d->has_pin && !d->uv) return ST_PIN_NOT_SET;
        if (!d->token_set || !va_verify((unsigned)protocol.val, d->token, sizeof d->token, cdh->data,
                                        (size_t)cdh->val, &param))
            return ST_PIN_AUTH_INVALID;
        if ((d->token_perms & perm) == 0) return ST_PIN_AUTH_INVALID;
        if (d->token_has_rp && memcmp(d->token_rp_hash, rp_hash, 32) != 0) return ST_PIN_AUTH_INVALID;
        *uv = 1;
    } else if (options != NULL && cb_get_text(options, "uv", &opt) == 1) {
        int want = 0;
        if (!cb_is_bool(&opt, &want)) return ST_INVALID_OPTION;
        if (want) {
            if (!d->uv) return ST_UNSUPPORTED_OPTION;
            *uv = 1; /* built-in verification succeeds */
        }
    }
    if (d->force_uv) *uv = 1;
    return ST_OK;
}

static void va_put_u32(uint8_t *p, uint32_t v) {
    p[0] = (uint8_t)(v >> 24); p[1] = (uint8_t)(v >> 16); p[2] = (uint8_t)(v >> 8); p[3] = (uint8_t)v;
}

/* Authenticator data begins: rpIdHash | flags | signCount (the counter goes up first). */
static void va_auth_data_head(va_device *d, cbw *ad, const uint8_t rp_hash[32], uint8_t flags) {
    cbw_raw(ad, rp_hash, 32);
    cbw_raw(ad, &flags, 1);
    uint8_t counter[4];
    va_put_u32(counter, ++d->counter);
    cbw_raw(ad, counter, 4);
}

/* Signs authData | clientDataHash with the credential key, which it frees; 1 on success. */
static int va_sign_auth_data(EC_KEY *k, const cbw *ad, const uint8_t *cdh, uint8_t *sig, unsigned int *siglen) {
    int ok = !ad->overflow && va_sign(k, ad->buf, ad->len, cdh, 32, sig, siglen) == 0;
    EC_KEY_free(k);
    return ok;
}

static uint8_t va_make_credential(va_device *d, const cbi *req, cbw *w) {
    cbi cdh, rp, rpid, params, ext, hs, options, opt;
    if (cb_get_int(req, 1, &cdh) != 1 || cdh.major != 2 || cdh.val != 32) return ST_MISSING_PARAMETER;
    if (cb_get_int(req, 2, &rp) != 1 || cb_get_text(&rp, "id", &rpid) != 1 || rpid.major != 3 || rpid.val > 255)
        return ST_MISSING_PARAMETER;
    if (cb_get_int(req, 4, &params) != 1 || params.major != 4) return ST_MISSING_PARAMETER;
    int es256 = 0;
    const uint8_t *p = params.data;
    for (uint64_t i = 0; i < params.val; i++) {
        cbi item, alg;
        if (cb_parse(p, params.end, &item, 1) < 0) return ST_INVALID_CBOR;
        p = item.next;
        if (cb_get_text(&item, "alg", &alg) == 1 && alg.major == 1 && alg.val == 6) es256 = 1;
    }
    if (!es256) return ST_UNSUPPORTED_ALGORITHM;
    int want_hmac = 0;
    if (cb_get_int(req, 6, &ext) == 1 && cb_get_text(&ext, "hmac-secret", &hs) == 1 && !cb_is_bool(&hs, &want_hmac))
        return ST_INVALID_PARAMETER;
    int has_options = cb_get_int(req, 7, &options) == 1;
    if (has_options) {
        int v = 0;
        if (cb_get_text(&options, "rk", &opt) == 1 && cb_is_bool(&opt, &v) && v) return ST_UNSUPPORTED_OPTION;
        if (cb_get_text(&options, "up", &opt) == 1 && cb_is_bool(&opt, &v) && !v) return ST_INVALID_OPTION;
    }
    uint8_t rp_hash[32];
    va_sha256(rpid.data, (size_t)rpid.val, rp_hash);
    int uv = 0;
    uint8_t st = va_user_verification(d, req, 8, 9, has_options ? &options : NULL, PERM_MC, rp_hash, &cdh, &uv);
    if (st != ST_OK) return st;
    if (d->has_pin && !uv) return ST_PIN_REQUIRED; /* clientPin set: makeCredential needs it */
    st = va_presence(d);
    if (st != ST_OK) return st;

    uint8_t id[VA_CRED_ID_BYTES];
    if (RAND_bytes(id, VA_NONCE_BYTES) != 1) return ST_OTHER;
    va_tag(d, id, rp_hash, id + VA_NONCE_BYTES);
    EC_KEY *k = va_credential_key(d, id);
    if (k == NULL) return ST_OTHER;

    cbw ad = {.len = 0};
    va_auth_data_head(d, &ad, rp_hash, 0x01 | (uv ? 0x04 : 0) | 0x40 | (want_hmac ? 0x80 : 0));
    cbw_raw(&ad, va_aaguid, 16);
    uint8_t idlen[2] = {0, VA_CRED_ID_BYTES};
    cbw_raw(&ad, idlen, 2);
    cbw_raw(&ad, id, VA_CRED_ID_BYTES);
    cbw_cose_key(&ad, k, -7);
    if (want_hmac) {
        cbw_map(&ad, 1);
        cbw_text(&ad, "hmac-secret");
        cbw_bool(&ad, 1);
    }
    uint8_t sig[80];
    unsigned int siglen = sizeof sig;
    if (!va_sign_auth_data(k, &ad, cdh.data, sig, &siglen)) return ST_OTHER;

    cbw_map(w, 3);
    cbw_int(w, 1);
    cbw_text(w, "packed");
    cbw_int(w, 2);
    cbw_bytes(w, ad.buf, ad.len);
    cbw_int(w, 3);
    cbw_map(w, 2);
    cbw_text(w, "alg");
    cbw_int(w, -7);
    cbw_text(w, "sig");
    cbw_bytes(w, sig, siglen);
    d->credentials++;
    return ST_OK;
}

/* Is `id` one of this device's credentials for rp_hash? */
static int va_owns(const va_device *d, const cbi *id, const uint8_t rp_hash[32]) {
    if (id->major != 2 || id->val != VA_CRED_ID_BYTES) return 0;
    uint8_t tag[VA_TAG_BYTES];
    va_tag(d, id->data, rp_hash, tag);
    return CRYPTO_memcmp(tag, id->data + VA_NONCE_BYTES, VA_TAG_BYTES) == 0;
}

static uint8_t va_hmac_secret(va_device *d, const cbi *hs, const uint8_t nonce[VA_NONCE_BYTES], int uv,
                              cbw *ext) {
    cbi ka, salt_enc, salt_auth, protocol;
    if (hs->major != 5 || cb_get_int(hs, 1, &ka) != 1 || cb_get_int(hs, 2, &salt_enc) != 1 ||
        cb_get_int(hs, 3, &salt_auth) != 1 || salt_enc.major != 2)
        return ST_MISSING_PARAMETER;
    unsigned proto = 1;
    int r = cb_get_int(hs, 4, &protocol);
    if (r < 0 || (r == 1 && protocol.major != 0)) return ST_INVALID_PARAMETER;
    if (r == 1) proto = (unsigned)protocol.val;
    if (!va_protocol_offered(d, proto)) return ST_INVALID_PARAMETER;
    va_shared s;
    uint8_t st = va_ecdh(d, &ka, proto, &s);
    if (st != ST_OK) return st;
    if (!va_verify(proto, s.key, sizeof s.key, salt_enc.data, (size_t)salt_enc.val, &salt_auth))
        return ST_PIN_AUTH_INVALID;
    uint8_t salts[96], out[64], enc[96], cred_random[32];
    if (salt_enc.val > sizeof salts) return ST_INVALID_LENGTH;
    long n = va_decrypt(&s, salt_enc.data, (size_t)salt_enc.val, salts);
    if (n != 32 && n != 64) return ST_INVALID_LENGTH;
    va_derive(d, uv ? "cred-random-uv" : "cred-random-no-uv", nonce, cred_random);
    va_hmac(cred_random, 32, salts, 32, out);
    if (n == 64) va_hmac(cred_random, 32, salts + 32, 32, out + 32);
    long m = va_encrypt(&s, out, (size_t)n, enc);
    OPENSSL_cleanse(cred_random, sizeof cred_random);
    OPENSSL_cleanse(out, sizeof out);
    if (m < 0) return ST_OTHER;
    cbw_map(ext, 1);
    cbw_text(ext, "hmac-secret");
    cbw_bytes(ext, enc, (size_t)m);
    return ST_OK;
}

static uint8_t va_get_assertion(va_device *d, const cbi *req, cbw *w) {
    cbi rpid, cdh, allow, exts, hs, options, opt;
    if (cb_get_int(req, 1, &rpid) != 1 || rpid.major != 3 || rpid.val > 255) return ST_MISSING_PARAMETER;
    if (cb_get_int(req, 2, &cdh) != 1 || cdh.major != 2 || cdh.val != 32) return ST_MISSING_PARAMETER;
    uint8_t rp_hash[32];
    va_sha256(rpid.data, (size_t)rpid.val, rp_hash);
    int has_options = cb_get_int(req, 5, &options) == 1;
    int up = 1;
    if (has_options && cb_get_text(&options, "up", &opt) == 1 && !cb_is_bool(&opt, &up)) return ST_INVALID_OPTION;
    int uv = 0;
    uint8_t st = va_user_verification(d, req, 6, 7, has_options ? &options : NULL, PERM_GA, rp_hash, &cdh, &uv);
    if (st != ST_OK) return st;

    cbi found = {0};
    int have = 0;
    if (cb_get_int(req, 3, &allow) == 1 && allow.major == 4) {
        const uint8_t *p = allow.data;
        for (uint64_t i = 0; i < allow.val && !have; i++) {
            cbi item, id;
            if (cb_parse(p, allow.end, &item, 1) < 0) return ST_INVALID_CBOR;
            p = item.next;
            if (cb_get_text(&item, "id", &id) == 1 && va_owns(d, &id, rp_hash)) {
                found = id;
                have = 1;
            }
        }
    }
    if (!have) return ST_NO_CREDENTIALS;
    /* skip-up: a faulty (or hostile) key that answers without asking for the touch: no
       presence test, the UP flag clear, the answer signed all the same. */
    if (d->skip_up) up = 0;
    if (up) {
        st = va_presence(d);
        if (st != ST_OK) return st;
    }
    cbw ext = {.len = 0};
    int want_ext = cb_get_int(req, 4, &exts) == 1 && cb_get_text(&exts, "hmac-secret", &hs) == 1;
    if (want_ext) {
        st = va_hmac_secret(d, &hs, found.data, uv, &ext);
        if (st != ST_OK) return st;
    }
    EC_KEY *k = va_credential_key(d, found.data);
    if (k == NULL) return ST_OTHER;
    cbw ad = {.len = 0};
    va_auth_data_head(d, &ad, rp_hash, (up ? 0x01 : 0) | (uv ? 0x04 : 0) | (want_ext ? 0x80 : 0));
    if (want_ext) cbw_raw(&ad, ext.buf, ext.len);
    uint8_t sig[80];
    unsigned int siglen = sizeof sig;
    if (!va_sign_auth_data(k, &ad, cdh.data, sig, &siglen)) return ST_OTHER;
    cbw_map(w, 3);
    cbw_int(w, 1);
    cbw_map(w, 2);
    cbw_text(w, "id");
    cbw_bytes(w, found.data, (size_t)found.val);
    cbw_text(w, "type");
    cbw_text(w, "public-key");
    cbw_int(w, 2);
    cbw_bytes(w, ad.buf, ad.len);
    cbw_int(w, 3);
    cbw_bytes(w, sig, siglen);
    d->assertions++;
    return ST_OK;
}

static uint8_t va_cbor(va_device *d, const uint8_t *msg, size_t n, cbw *w) {
    if (n < 1) return ST_INVALID_LENGTH;
    uint8_t cmd = msg[0];
    cbi req = {0};
    if (n > 1) {
        if (cb_parse(msg + 1, msg + n, &req, 0) < 0 || req.next != msg + n) return ST_INVALID_CBOR;
        if (req.major != 5) return ST_CBOR_UNEXPECTED_TYPE;
    }
    switch (cmd) {
    case 0x04: return va_get_info(d, w);
    case 0x06: return n > 1 ? va_client_pin(d, &req, w) : ST_MISSING_PARAMETER;
    case 0x01: return n > 1 ? va_make_credential(d, &req, w) : ST_MISSING_PARAMETER;
    case 0x02: return n > 1 ? va_get_assertion(d, &req, w) : ST_MISSING_PARAMETER;
    default: return ST_INVALID_COMMAND;
    }
}

/* ---------------------------------------------------------------- libfido2 hooks */

static va_device *va_device_of(fido_dev_t *dev) {
    va_handle *h = fido_dev_io_handle(dev);
    if (h == NULL || h->index < 0 || h->index >= KEYBAY_VA_MAX_DEVICES) return NULL;
    return &va_devices[h->index];
}

static void *va_open(const char *path) {
    if (path == NULL || strncmp(path, "virtual:", 8) != 0 || path[8] < '0' ||
        path[8] >= '0' + KEYBAY_VA_MAX_DEVICES || path[9] != '\0')
        return NULL;
    int index = path[8] - '0';
    pthread_mutex_lock(&va_lock);
    int present = va_devices[index].present;
    if (present) va_devices[index].opens++;
    pthread_mutex_unlock(&va_lock);
    if (!present) return NULL;
    va_handle *h = malloc(sizeof *h);
    if (h != NULL) h->index = index;
    return h;
}

static void va_close(void *handle) { free(handle); }

static int va_read(void *handle, unsigned char *buf, size_t n, int ms) {
    (void)handle; (void)buf; (void)n; (void)ms;
    return -1; /* never used: the transport functions carry whole messages */
}

static int va_write(void *handle, const unsigned char *buf, size_t n) {
    (void)handle; (void)buf; (void)n;
    return -1;
}

static int va_tx(fido_dev_t *dev, uint8_t cmd, const unsigned char *buf, size_t n) {
    pthread_mutex_lock(&va_lock);
    va_device *d = va_device_of(dev);
    int rc = -1;
    if (d != NULL && d->present) {
        if (cmd == CTAP_CMD_CANCEL) {
            d->cancel = 1;
            d->cancels++;
            rc = 0;
        } else if (n <= sizeof d->request && (n == 0 || buf != NULL)) {
            if (n > 0) memcpy(d->request, buf, n);
            d->request_length = n;
            d->request_cmd = cmd;
            d->pending = 1;
            d->cancel = 0;
            rc = 0;
        }
    }
    pthread_mutex_unlock(&va_lock);
    return rc;
}

static int va_rx(fido_dev_t *dev, uint8_t cmd, unsigned char *buf, size_t n, int ms) {
    (void)ms;
    cbw *w = calloc(1, sizeof *w);
    uint8_t reply[VA_MSG_MAX + 1];
    if (w == NULL) return -1;
    size_t length = 0;
    pthread_mutex_lock(&va_lock);
    va_device *d = va_device_of(dev);
    if (d == NULL || !d->present || !d->pending || d->request_cmd != cmd) {
        pthread_mutex_unlock(&va_lock);
        free(w);
        return -1;
    }
    d->pending = 0;
    if (cmd == CTAP_CMD_INIT) {
        if (d->request_length != 8) {
            pthread_mutex_unlock(&va_lock);
            free(w);
            return -1;
        }
        memcpy(reply, d->request, 8);
        uint32_t cid = 0x4b420001u + (uint32_t)(d - va_devices);
        memcpy(reply + 8, &cid, 4);
        reply[12] = 2;    /* CTAPHID protocol version */
        reply[13] = 1;    /* major */
        reply[14] = 0;    /* minor */
        reply[15] = 0;    /* build */
        reply[16] = 0x04 | 0x08; /* CBOR, NMSG */
        length = 17;
    } else if (cmd == CTAP_CMD_CBOR) {
        uint8_t request[VA_MSG_MAX];
        size_t request_length = d->request_length;
        memcpy(request, d->request, request_length);
        uint8_t st = va_cbor(d, request, request_length, w);
        /* a touch may have released the lock: the device may have been pulled meanwhile */
        if (!d->present) {
            pthread_mutex_unlock(&va_lock);
            OPENSSL_cleanse(w, sizeof *w);
            free(w);
            return -1;
        }
        if (st == ST_OK && w->overflow) st = ST_OTHER;
        reply[0] = st;
        length = 1;
        if (st == ST_OK) {
            memcpy(reply + 1, w->buf, w->len);
            length += w->len;
        }
    } else {
        pthread_mutex_unlock(&va_lock);
        free(w);
        return -1;
    }
    pthread_mutex_unlock(&va_lock);
    OPENSSL_cleanse(w, sizeof *w);
    free(w);
    if (length > n) return -1;
    memcpy(buf, reply, length);
    OPENSSL_cleanse(reply, sizeof reply);
    return (int)length;
}

/* ---------------------------------------------------------------- configuration */

static void va_seed(va_device *d, const char *seed) {
    uint8_t buf[300];
    static const char label[] = "keybay-va-seed";
    size_t l = strlen(seed);
    if (l > sizeof buf - sizeof label) l = sizeof buf - sizeof label;
    memcpy(buf, label, sizeof label); /* includes the 0x00 separator */
    memcpy(buf + sizeof label, seed, l);
    va_sha256(buf, sizeof label + l, d->master);
}

static void va_defaults(int i) {
    va_device *d = &va_devices[i];
    EC_KEY_free(d->ka);
    memset(d, 0, sizeof *d);
    d->present = i == 0;
    d->retries = VA_MAX_RETRIES;
    d->permissions = 1;
    d->protocols[0] = 2;
    d->protocols[1] = 1;
    d->protocol_count = 2;
    char seed[32];
    snprintf(seed, sizeof seed, "device-%d", i);
    va_seed(d, seed);
}

static void va_ensure_ready(void) {
    if (va_ready) return;
    for (int i = 0; i < KEYBAY_VA_MAX_DEVICES; i++) va_defaults(i);
    va_ready = 1;
}

void keybay_va_reset(void) {
    pthread_mutex_lock(&va_lock);
    va_ready = 0;
    va_ensure_ready();
    pthread_mutex_unlock(&va_lock);
}

static int va_parse_long(const char *s, long lo, long hi, long *out) {
    if (s == NULL || *s == '\0') return -1;
    char *end = NULL;
    long v = strtol(s, &end, 10);
    if (*end != '\0' || v < lo || v > hi) return -1;
    *out = v;
    return 0;
}

int keybay_va_set(int index, const char *name, const char *value) {
    if (index < 0 || index >= KEYBAY_VA_MAX_DEVICES || name == NULL || value == NULL) return -1;
    pthread_mutex_lock(&va_lock);
    va_ensure_ready();
    va_device *d = &va_devices[index];
    long v = 0;
    int rc = 0;
    if (strcmp(name, "pin") == 0) {
        size_t l = strlen(value);
        if (l != 0 && (l < 4 || l >= sizeof d->pin)) rc = -1;
        else {
            memset(d->pin, 0, sizeof d->pin);
            memcpy(d->pin, value, l);
            d->has_pin = l != 0;
            d->retries = VA_MAX_RETRIES;
            d->in_a_row = 0;
        }
    } else if (strcmp(name, "seed") == 0) {
        va_seed(d, value);
    } else if (strcmp(name, "protocols") == 0) {
        uint8_t p[2];
        size_t n = 0;
        for (const char *s = value; *s != '\0'; s++) {
            if (*s == ',') continue;
            if ((*s != '1' && *s != '2') || n == 2) { rc = -1; break; }
            p[n++] = (uint8_t)(*s - '0');
        }
        if (rc == 0 && n > 0) {
            memcpy(d->protocols, p, n);
            d->protocol_count = n;
        } else rc = -1;
    } else if (va_parse_long(value, 0, 600000, &v) < 0) {
        rc = -1;
    } else if (strcmp(name, "present") == 0) {
        if (v > 1) rc = -1;
        else {
            if (!d->present && v) va_power_cycle(d);
            d->present = (int)v;
        }
    } else if (strcmp(name, "retries") == 0) {
        if (v > VA_MAX_RETRIES) rc = -1;
        else d->retries = (int)v;
    } else if (strcmp(name, "deny") == 0) d->deny = v != 0;
    else if (strcmp(name, "timeout") == 0) d->timeout = v != 0;
    else if (strcmp(name, "touch-delay-ms") == 0) d->touch_delay_ms = (int)v;
    else if (strcmp(name, "uv") == 0) d->uv = v != 0;
    else if (strcmp(name, "force-uv") == 0) d->force_uv = v != 0;
    else if (strcmp(name, "skip-up") == 0) d->skip_up = v != 0;
    else if (strcmp(name, "permissions") == 0) d->permissions = v != 0;
    else if (strcmp(name, "replug") == 0) va_power_cycle(d);
    else rc = -1;
    pthread_mutex_unlock(&va_lock);
    return rc;
}

long keybay_va_get(int index, const char *name) {
    if (index < 0 || index >= KEYBAY_VA_MAX_DEVICES || name == NULL) return -1;
    pthread_mutex_lock(&va_lock);
    va_ensure_ready();
    const va_device *d = &va_devices[index];
    long v = -1;
    if (strcmp(name, "retries") == 0) v = d->retries;
    else if (strcmp(name, "touches") == 0) v = d->touches;
    else if (strcmp(name, "assertions") == 0) v = d->assertions;
    else if (strcmp(name, "credentials") == 0) v = d->credentials;
    else if (strcmp(name, "pin-failures") == 0) v = d->pin_failures;
    else if (strcmp(name, "opens") == 0) v = d->opens;
    else if (strcmp(name, "cancels") == 0) v = d->cancels;
    else if (strcmp(name, "waiting-for-touch") == 0) v = d->waiting_for_touch;
    else if (strcmp(name, "present") == 0) v = d->present;
    pthread_mutex_unlock(&va_lock);
    return v;
}

size_t keybay_va_list(char paths[][KEYBAY_VA_PATH_MAX], size_t capacity) {
    size_t n = 0;
    pthread_mutex_lock(&va_lock);
    va_ensure_ready();
    for (int i = 0; i < KEYBAY_VA_MAX_DEVICES && n < capacity; i++)
        if (va_devices[i].present) snprintf(paths[n++], KEYBAY_VA_PATH_MAX, "virtual:%d", i);
    pthread_mutex_unlock(&va_lock);
    return n;
}

fido_dev_t *keybay_va_new_device(void) {
    static const fido_dev_io_t io = {va_open, va_close, va_read, va_write};
    static const fido_dev_transport_t transport = {va_rx, va_tx};
    fido_dev_t *dev = fido_dev_new();
    if (dev == NULL) return NULL;
    if (fido_dev_set_io_functions(dev, &io) != FIDO_OK ||
        fido_dev_set_transport_functions(dev, &transport) != FIDO_OK) {
        fido_dev_free(&dev);
        return NULL;
    }
    return dev;
}
