// SPDX-License-Identifier: Apache-2.0
/*
 * libkeybay-com.example.pin.so — an example third-party Keybay method plugin (plugin ABI v1),
 * written against <keybay_plugin.h> alone: no libsodium, no OpenSSL.
 *
 * The user types a PIN (1 to 64 bytes); the method secret is
 *     M = HMAC-SHA-256(key = salt, message = PIN)
 * with a random 16-byte salt chosen at enrollment. Public parameters (21 bytes):
 *     "EXPN" | version u8 = 1 | salt[16]
 * The plugin keeps no verifier: it always returns M, and the host checks M against the store's
 * public key, so a wrong PIN shows up there.
 *
 * This shows the ABI; it is not a strong method. A short PIN behind one HMAC can be guessed
 * offline by anyone who holds the stored parameters and public key. A real PIN method should put
 * the PIN behind hardware that limits the tries (a TPM, a security key).
 */
#define _DEFAULT_SOURCE /* explicit_bzero */

#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include <keybay_plugin.h>

#define PIN_ID "com.example.pin"
#define PIN_MAX 64u
#define SALT_BYTES 16u
#define PARAMS_BYTES (4u + 1u + SALT_BYTES)
#define PARAMS_VERSION 1u

/* ---- SHA-256 (FIPS 180-4) and HMAC-SHA-256 (RFC 2104) ---- */

typedef struct {
    uint32_t h[8];
    uint64_t length; /* bytes hashed so far */
    uint8_t block[64];
    size_t used;
} sha256_ctx;

static const uint32_t sha256_k[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
};

#define ROR(x, n) (((x) >> (n)) | ((x) << (32 - (n))))

static void sha256_compress(uint32_t h[8], const uint8_t p[64]) {
    uint32_t w[64], v[8];
    for (int i = 0; i < 16; i++)
        w[i] = (uint32_t)p[4 * i] << 24 | (uint32_t)p[4 * i + 1] << 16 | (uint32_t)p[4 * i + 2] << 8 | p[4 * i + 3];
    for (int i = 16; i < 64; i++) {
        uint32_t s0 = ROR(w[i - 15], 7) ^ ROR(w[i - 15], 18) ^ (w[i - 15] >> 3);
        uint32_t s1 = ROR(w[i - 2], 17) ^ ROR(w[i - 2], 19) ^ (w[i - 2] >> 10);
        w[i] = w[i - 16] + s0 + w[i - 7] + s1;
    }
    memcpy(v, h, sizeof v);
    for (int i = 0; i < 64; i++) {
        uint32_t t1 = v[7] + (ROR(v[4], 6) ^ ROR(v[4], 11) ^ ROR(v[4], 25)) +
                      ((v[4] & v[5]) ^ (~v[4] & v[6])) + sha256_k[i] + w[i];
        uint32_t t2 = (ROR(v[0], 2) ^ ROR(v[0], 13) ^ ROR(v[0], 22)) +
                      ((v[0] & v[1]) ^ (v[0] & v[2]) ^ (v[1] & v[2]));
        memmove(v + 1, v, 7 * sizeof v[0]); /* h=g, g=f, ..., b=a */
        v[4] += t1;
        v[0] = t1 + t2;
    }
    for (int i = 0; i < 8; i++) h[i] += v[i];
    explicit_bzero(w, sizeof w);
    explicit_bzero(v, sizeof v);
}

static void sha256_init(sha256_ctx *c) {
    static const uint32_t iv[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                                   0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
    memcpy(c->h, iv, sizeof iv);
    c->length = 0;
    c->used = 0;
}

static void sha256_update(sha256_ctx *c, const uint8_t *data, size_t n) {
    c->length += n;
    while (n > 0) {
        size_t take = 64 - c->used < n ? 64 - c->used : n;
        memcpy(c->block + c->used, data, take);
        c->used += take;
        data += take;
        n -= take;
        if (c->used == 64) {
            sha256_compress(c->h, c->block);
            c->used = 0;
        }
    }
}

static void sha256_final(sha256_ctx *c, uint8_t out[32]) {
    uint64_t bits = c->length * 8;
    uint8_t pad = 0x80, zero = 0, len[8];
    sha256_update(c, &pad, 1);
    while (c->used != 56) sha256_update(c, &zero, 1);
    for (int i = 0; i < 8; i++) len[i] = (uint8_t)(bits >> (56 - 8 * i));
    sha256_update(c, len, 8);
    for (int i = 0; i < 8; i++) {
        out[4 * i] = (uint8_t)(c->h[i] >> 24);
        out[4 * i + 1] = (uint8_t)(c->h[i] >> 16);
        out[4 * i + 2] = (uint8_t)(c->h[i] >> 8);
        out[4 * i + 3] = (uint8_t)c->h[i];
    }
    explicit_bzero(c, sizeof *c);
}

static void hmac_sha256(const uint8_t *key, size_t key_length, const uint8_t *msg, size_t msg_length,
                        uint8_t out[32]) {
    uint8_t k[64] = {0}, pad[64], inner[32];
    sha256_ctx c;
    if (key_length > sizeof k) {
        sha256_init(&c);
        sha256_update(&c, key, key_length);
        sha256_final(&c, k);
    } else {
        memcpy(k, key, key_length);
    }
    for (int i = 0; i < 64; i++) pad[i] = k[i] ^ 0x36;
    sha256_init(&c);
    sha256_update(&c, pad, 64);
    sha256_update(&c, msg, msg_length);
    sha256_final(&c, inner);
    for (int i = 0; i < 64; i++) pad[i] = k[i] ^ 0x5c;
    sha256_init(&c);
    sha256_update(&c, pad, 64);
    sha256_update(&c, inner, 32);
    sha256_final(&c, out);
    explicit_bzero(k, sizeof k);
    explicit_bzero(pad, sizeof pad);
    explicit_bzero(inner, sizeof inner);
}

/* ---- host services (each checked with KEYBAY_HOST_HAS: struct_size and NULL, so an older
   host is fine) ---- */

static void pin_error(const keybay_host *host, const char *text) {
    if (KEYBAY_HOST_HAS(host, set_error)) host->set_error(host->context, text);
}

/* Asks for the PIN into `pin` (PIN_MAX + 1 bytes: one spare byte detects an overlong answer).
   Statuses from the host (CANCELLED, INTERACTION_UNAVAILABLE, ...) are returned unchanged. */
static keybay_status pin_ask(const keybay_host *host, uint32_t flags, const char *prompt,
                             uint8_t pin[PIN_MAX + 1], size_t *length) {
    if (!KEYBAY_HOST_HAS(host, ask_secret)) {
        pin_error(host, PIN_ID ": the host offers no way to ask for a PIN");
        return KEYBAY_ERR_INTERACTION_UNAVAILABLE;
    }
    *length = 0;
    keybay_status status =
        host->ask_secret(host->context, KEYBAY_SECRET_PIN, flags, prompt, -1, pin, PIN_MAX + 1, length);
    if (status != KEYBAY_OK) return status;
    if (*length == 0 || *length > PIN_MAX) {
        pin_error(host, PIN_ID ": the PIN must be 1 to 64 bytes");
        return (flags & KEYBAY_ASK_NEW) ? KEYBAY_ERR_INVALID_OPTION : KEYBAY_ERR_WRONG_SECRET;
    }
    return KEYBAY_OK;
}

/* Checks the parameters and returns a pointer to the salt, or NULL (with set_error). */
static const uint8_t *pin_decode(const keybay_host *host, const uint8_t *params, size_t length) {
    if (params == NULL || length != PARAMS_BYTES) {
        pin_error(host, PIN_ID " params: wrong length (expected 21 bytes)");
        return NULL;
    }
    if (memcmp(params, "EXPN", 4) != 0) {
        pin_error(host, PIN_ID " params: bad magic (expected \"EXPN\")");
        return NULL;
    }
    if (params[4] != PARAMS_VERSION) {
        pin_error(host, PIN_ID " params: unsupported version (expected 1)");
        return NULL;
    }
    return params + 5;
}

/* ---- operations ---- */

static void pin_free_buffer(keybay_buffer *buffer) {
    if (buffer == NULL) return;
    if (buffer->data != NULL) {
        explicit_bzero(buffer->data, buffer->length);
        free(buffer->data);
    }
    buffer->data = NULL;
    buffer->length = 0;
}

static keybay_status pin_probe(const keybay_host *host) {
    (void)host; /* nothing to look for: no device, no library */
    return KEYBAY_OK;
}

static keybay_status pin_enroll(const keybay_host *host, const keybay_option *options, size_t option_count,
                                keybay_buffer *params_out, uint8_t secret_out[KEYBAY_METHOD_SECRET_BYTES]) {
    if (params_out == NULL || secret_out == NULL) return KEYBAY_ERR_INTERNAL;
    params_out->data = NULL;
    params_out->length = 0;
    if (option_count > 0) {
        char line[160];
        snprintf(line, sizeof line, PIN_ID ": unknown option '%.64s' (this method takes none)",
                 options != NULL && options[0].name != NULL ? options[0].name : "");
        pin_error(host, line);
        return KEYBAY_ERR_INVALID_OPTION;
    }

    uint8_t *params = malloc(PARAMS_BYTES);
    if (params == NULL) {
        pin_error(host, PIN_ID ": out of memory");
        return KEYBAY_ERR_INTERNAL;
    }
    memcpy(params, "EXPN", 4);
    params[4] = PARAMS_VERSION;
    for (size_t got = 0; got < SALT_BYTES;) {
        ssize_t n = getrandom(params + 5 + got, SALT_BYTES - got, 0);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) {
            pin_error(host, PIN_ID ": getrandom failed");
            free(params);
            return KEYBAY_ERR_INTERNAL;
        }
        got += (size_t)n;
    }

    uint8_t pin[PIN_MAX + 1];
    size_t length = 0;
    keybay_status status = pin_ask(host, KEYBAY_ASK_NEW, "New PIN", pin, &length);
    if (status == KEYBAY_OK) {
        hmac_sha256(params + 5, SALT_BYTES, pin, length, secret_out);
        params_out->data = params;
        params_out->length = PARAMS_BYTES;
    } else {
        free(params);
    }
    explicit_bzero(pin, sizeof pin);
    return status;
}

/* Unwrap: M from the PIN the user types (verify is left NULL: the host then calls unwrap). */
static keybay_status pin_unwrap(const keybay_host *host, const uint8_t *params, size_t params_length,
                                uint8_t secret_out[KEYBAY_METHOD_SECRET_BYTES]) {
    if (secret_out == NULL) return KEYBAY_ERR_INTERNAL;
    const uint8_t *salt = pin_decode(host, params, params_length);
    if (salt == NULL) return KEYBAY_ERR_MALFORMED_PARAMS;
    uint8_t pin[PIN_MAX + 1];
    size_t length = 0;
    keybay_status status = pin_ask(host, 0, "PIN", pin, &length);
    if (status == KEYBAY_OK) hmac_sha256(salt, SALT_BYTES, pin, length, secret_out);
    explicit_bzero(pin, sizeof pin);
    return status;
}

static keybay_status pin_describe(const keybay_host *host, const uint8_t *params, size_t params_length,
                                  keybay_buffer *text_out) {
    static const char text[] = "example PIN method";
    if (text_out == NULL) return KEYBAY_ERR_INTERNAL;
    text_out->data = NULL;
    text_out->length = 0;
    if (pin_decode(host, params, params_length) == NULL) return KEYBAY_ERR_MALFORMED_PARAMS;
    text_out->data = malloc(sizeof text);
    if (text_out->data == NULL) return KEYBAY_ERR_INTERNAL;
    memcpy(text_out->data, text, sizeof text); /* NUL-terminated; the NUL is not counted */
    text_out->length = sizeof text - 1;
    return KEYBAY_OK;
}

/* ---- descriptor: the one exported symbol ---- */

static const keybay_plugin pin_plugin = {
    .abi_version = KEYBAY_PLUGIN_ABI_VERSION,
    .struct_size = sizeof(keybay_plugin),
    .id = PIN_ID, /* must match the file name: libkeybay-com.example.pin.so */
    .name = "Example PIN (HMAC-SHA-256)",
    .version = "1.0",
    .kind = KEYBAY_KIND_METHOD,
    .flags = KEYBAY_FLAG_INTERACTIVE,
    .options = NULL,
    .option_count = 0,
    .free_buffer = pin_free_buffer,
    .probe = pin_probe,
    .enroll = pin_enroll,
    .unwrap = pin_unwrap,
    .describe_with_host = pin_describe,
};

__attribute__((visibility("default"))) const keybay_plugin *keybay_plugin_entry_v1(void) {
    return &pin_plugin;
}
