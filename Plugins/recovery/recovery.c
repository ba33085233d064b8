// SPDX-License-Identifier: Apache-2.0
/*
 * libkeybay-recovery.so — the first-party `recovery` method plugin (Keybay plugin ABI v1).
 *
 * Enrollment makes a 256-bit random key K and shows it to the user once (host->show_secret),
 * written to be typed back: K and a 3-byte checksum in Crockford base32, 56 characters in 7
 * groups of 8. M = keyed BLAKE2b of K; the 17-byte public parameters hold a format byte and a
 * 16-byte check value, which is all unwrap needs to tell "a typo" (the checksum fails) from "a
 * valid key, but not this store's" (the check value differs). No KDF: K has 256 bits. The
 * derivations and the text format are specified byte for byte in docs/recovery.md.
 *
 * On enrollment the key is also drawn as a QR code (Unicode half blocks) for a phone to
 * photograph. libqrencode is opened with dlopen on the first enrollment, never linked; without
 * it the picture is simply left out. Every buffer that holds K, its text or its picture is
 * guarded memory (sodium_malloc), wiped before it is freed.
 */
#define _POSIX_C_SOURCE 200809L

#include <dlfcn.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "keybay_plugin.h"
#include "keybay_plugin_host.h"

#define RK_FORMAT 1u
#define RK_KEY_BYTES 32u
#define RK_CHECKSUM_BYTES 3u
#define RK_CHECK_BYTES 16u
#define RK_PARAMS_BYTES (1u + RK_CHECK_BYTES)
#define RK_RAW_BYTES (RK_KEY_BYTES + RK_CHECKSUM_BYTES) /* 35 bytes = 280 bits */
#define RK_SYMBOLS (RK_RAW_BYTES * 8u / 5u)               /* 56 characters of 5 bits */
#define RK_GROUP 8u
#define RK_TEXT_BYTES (RK_SYMBOLS + RK_SYMBOLS / RK_GROUP - 1u) /* 7 groups of 8, 6 dashes: 62 */
#define RK_INPUT_BYTES 256u /* what a typed key may take, separators included */

_Static_assert(RK_RAW_BYTES * 8u == RK_SYMBOLS * 5u, "no padding bits");
_Static_assert(RK_SYMBOLS % RK_GROUP == 0, "whole groups");

/* Crockford's base32: digits and capitals without I, L, O, U. */
static const char rk_alphabet[] = "0123456789ABCDEFGHJKMNPQRSTVWXYZ";

/* Keyed BLAKE2b-256 messages (the key is K): one label per derived value. */
static const char rk_label_checksum[] = "keybay recovery v1 checksum";
static const char rk_label_check[] = "keybay recovery v1 check";
static const char rk_label_secret[] = "keybay recovery v1 method secret";

/* Everything secret, in guarded memory (byte arrays only: sodium_malloc's placement against the
   guard page is unaligned). */
typedef struct rk_secret {
    uint8_t raw[RK_RAW_BYTES];                  /* K | checksum */
    uint8_t hash[crypto_generichash_BYTES];     /* one BLAKE2b-256 output at a time */
    uint8_t secret[KEYBAY_METHOD_SECRET_BYTES]; /* M */
    char text[RK_TEXT_BYTES + 1];               /* the key as shown */
    uint8_t input[RK_INPUT_BYTES + 1];          /* the key as typed; a spare byte detects an overlong one */
    uint8_t symbols[RK_SYMBOLS];                /* the typed key, one 5-bit value each */
} rk_secret;

/* ---- the key ---- */

/* BLAKE2b-256 keyed with K over `label` into secret->hash. */
static void rk_derive(rk_secret *s, const char *label) {
    crypto_generichash(s->hash, sizeof s->hash, (const unsigned char *)label, strlen(label), s->raw, RK_KEY_BYTES);
}

/* The 3 checksum bytes after K. */
static void rk_checksum(rk_secret *s, uint8_t out[RK_CHECKSUM_BYTES]) {
    rk_derive(s, rk_label_checksum);
    memcpy(out, s->hash, RK_CHECKSUM_BYTES);
}

/* M and the check value from K. */
static void rk_secret_and_check(rk_secret *s, uint8_t check[RK_CHECK_BYTES]) {
    rk_derive(s, rk_label_check);
    memcpy(check, s->hash, RK_CHECK_BYTES);
    rk_derive(s, rk_label_secret);
    memcpy(s->secret, s->hash, KEYBAY_METHOD_SECRET_BYTES);
    sodium_memzero(s->hash, sizeof s->hash);
}

/* raw (35 bytes) -> "ABCDEFGH-JKMNPQRS-…" (7 groups of 8): 5 bits a character, most significant first. */
static void rk_encode(rk_secret *s) {
    size_t out = 0;
    for (size_t i = 0; i < RK_SYMBOLS; i++) {
        if (i > 0 && i % RK_GROUP == 0) s->text[out++] = '-';
        size_t bit = i * 5u;
        unsigned pair = ((unsigned)s->raw[bit / 8u] << 8) | (bit / 8u + 1u < RK_RAW_BYTES ? s->raw[bit / 8u + 1u] : 0u);
        s->text[out++] = rk_alphabet[(pair >> (11u - bit % 8u)) & 31u];
    }
    s->text[out] = '\0';
}

/* The value of one typed character: -1 for a separator (ASCII space, tab, CR, LF, '-'), -2 for a
   character outside the alphabet. Case is ignored; O reads as 0 and I, L as 1 (Crockford). */
static int rk_symbol(uint8_t c) {
    if (c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '-') return -1;
    if (c >= 'a' && c <= 'z') c = (uint8_t)(c - 'a' + 'A');
    if (c == 'O') return 0;
    if (c == 'I' || c == 'L') return 1;
    for (int v = 0; v < 32; v++)
        if (rk_alphabet[v] == c) return v;
    return -2;
}

/* Typed input (secret->input, `length` bytes) -> secret->raw, checksum checked. */
static keybay_status rk_decode(const keybay_host *host, rk_secret *s, size_t length) {
    size_t count = 0;
    for (size_t i = 0; i < length; i++) {
        int v = rk_symbol(s->input[i]);
        if (v == -1) continue;
        if (v == -2) {
            /* The position only: the character would be part of a nearly right key. */
            keybay_host_error_reason(host, "typo-character");
            keybay_host_error(host, "recovery: the recovery key has a typo: character %zu is not one of its letters "
                                    "(0-9 and A-Z without I, L, O, U)", count + 1);
            return KEYBAY_ERR_WRONG_SECRET;
        }
        if (count == RK_SYMBOLS) {
            keybay_host_error_reason(host, "typo-length");
            keybay_host_error(host, "recovery: the recovery key has a typo: it has more than %u characters "
                                    "(spaces and dashes aside)", RK_SYMBOLS);
            return KEYBAY_ERR_WRONG_SECRET;
        }
        s->symbols[count++] = (uint8_t)v;
    }
    if (count != RK_SYMBOLS) {
        keybay_host_error_reason(host, "typo-length");
        keybay_host_error(host, "recovery: the recovery key has a typo: it has %zu characters, not %u "
                                "(spaces and dashes aside)", count, RK_SYMBOLS);
        return KEYBAY_ERR_WRONG_SECRET;
    }
    memset(s->raw, 0, sizeof s->raw);
    for (size_t i = 0; i < RK_SYMBOLS; i++) {
        size_t bit = i * 5u;
        unsigned shifted = (unsigned)s->symbols[i] << (11u - bit % 8u);
        s->raw[bit / 8u] |= (uint8_t)(shifted >> 8);
        if (bit / 8u + 1u < RK_RAW_BYTES) s->raw[bit / 8u + 1u] |= (uint8_t)shifted;
    }
    uint8_t expected[RK_CHECKSUM_BYTES];
    rk_checksum(s, expected);
    int same = sodium_memcmp(expected, s->raw + RK_KEY_BYTES, RK_CHECKSUM_BYTES) == 0;
    sodium_memzero(expected, sizeof expected);
    sodium_memzero(s->hash, sizeof s->hash);
    if (!same) {
        keybay_host_error_reason(host, "typo-checksum");
        keybay_host_error(host, "recovery: the recovery key has a typo: its checksum does not match "
                                "(check each character; spaces, dashes and case do not matter)");
        return KEYBAY_ERR_WRONG_SECRET;
    }
    return KEYBAY_OK;
}

/* ---- the QR code: libqrencode, opened on first use ---- */

/* The few declarations of <qrencode.h> the plugin needs (libqrencode 4's ABI), so that building
   it needs no -dev package. */
typedef struct rk_qrcode {
    int version;
    int width;
    unsigned char *data; /* width * width modules, row by row; bit 0 set = dark */
} rk_qrcode;
typedef rk_qrcode *(*rk_qr_encode_fn)(const char *string, int version, int level, int hint, int casesensitive);
typedef void (*rk_qr_free_fn)(rk_qrcode *code);
#define RK_QR_LIBRARY "libqrencode.so.4"
#define RK_QR_ECLEVEL_M 1 /* QR_ECLEVEL_M: about 15% of the code may be damaged */
#define RK_QR_MODE_8 2    /* QR_MODE_8; with case sensitivity libqrencode picks the modes itself */
#define RK_QR_QUIET 4     /* the quiet zone, in modules, that the QR standard asks for */

static pthread_once_t rk_qr_once = PTHREAD_ONCE_INIT;
static rk_qr_encode_fn rk_qr_encode;
static rk_qr_free_fn rk_qr_free;
static char rk_qr_error[256];

static void rk_qr_load(void) {
    dlerror();
    void *handle = dlopen(RK_QR_LIBRARY, RTLD_NOW | RTLD_LOCAL);
    if (handle == NULL) {
        const char *why = dlerror();
        snprintf(rk_qr_error, sizeof rk_qr_error, "%s", why != NULL ? why : "unknown error");
        return;
    }
    rk_qr_encode_fn encode = (rk_qr_encode_fn)dlsym(handle, "QRcode_encodeString");
    rk_qr_free_fn release = encode != NULL ? (rk_qr_free_fn)dlsym(handle, "QRcode_free") : NULL;
    if (encode == NULL || release == NULL) {
        const char *why = dlerror();
        snprintf(rk_qr_error, sizeof rk_qr_error, "%s", why != NULL ? why : "a function is missing");
        dlclose(handle);
        return;
    }
    rk_qr_encode = encode; /* the handle stays open for the life of the process */
    rk_qr_free = release;
}

/* The QR code of `text` in Unicode half blocks, two module rows a line, with the quiet zone, as
   `qrencode -t UTF8` draws it: light modules are drawn (█ ▀ ▄), dark ones left blank, for a
   terminal with a dark background. Guarded memory (rk_picture_free); NULL when libqrencode is
   missing or fails, which is never an error: the text is what counts. */
static char *rk_picture(const keybay_host *host, const char *text, size_t *size_out) {
    pthread_once(&rk_qr_once, rk_qr_load);
    if (rk_qr_encode == NULL) {
        keybay_host_log(host, KEYBAY_LOG_INFO, "recovery: no QR code: cannot load " RK_QR_LIBRARY " (%s; Debian: libqrencode4)",
                        rk_qr_error);
        return NULL;
    }
    rk_qrcode *code = rk_qr_encode(text, 0, RK_QR_ECLEVEL_M, RK_QR_MODE_8, 1);
    if (code == NULL || code->data == NULL || code->width <= 0 || code->width > 177) {
        keybay_host_log(host, KEYBAY_LOG_INFO, "recovery: no QR code: libqrencode could not encode the key");
        if (code != NULL) rk_qr_free(code);
        return NULL;
    }
    const size_t width = (size_t)code->width;
    const size_t side = width + 2u * RK_QR_QUIET;
    const size_t lines = (side + 1u) / 2u;
    const size_t size = lines * (side * 3u + 1u) + 1u; /* each cell at most 3 bytes of UTF-8 */
    char *picture = sodium_malloc(size);
    if (picture != NULL) {
        size_t n = 0;
        for (size_t line = 0; line < lines; line++) {
            for (size_t x = 0; x < side; x++) {
                int light[2];
                for (int half = 0; half < 2; half++) {
                    size_t y = line * 2u + (size_t)half;
                    int inside = y >= RK_QR_QUIET && y < RK_QR_QUIET + width && x >= RK_QR_QUIET && x < RK_QR_QUIET + width;
                    /* below the last row (an odd side) counts as dark: nothing is drawn there */
                    light[half] = y >= side ? 0 : !(inside && (code->data[(y - RK_QR_QUIET) * width + (x - RK_QR_QUIET)] & 1u));
                }
                const char *cell = light[0] && light[1] ? "\xe2\x96\x88" /* █ */
                                 : light[0]              ? "\xe2\x96\x80" /* ▀ */
                                 : light[1]              ? "\xe2\x96\x84" /* ▄ */
                                                         : " ";
                size_t cell_length = strlen(cell);
                memcpy(picture + n, cell, cell_length);
                n += cell_length;
            }
            picture[n++] = '\n';
        }
        picture[n] = '\0';
        *size_out = size;
    } else {
        keybay_host_log(host, KEYBAY_LOG_INFO, "recovery: no QR code: could not allocate guarded memory");
    }
    /* The modules are the key too. libqrencode's own intermediate buffers are freed by it. */
    sodium_memzero(code->data, width * width);
    rk_qr_free(code);
    return picture;
}

static void rk_picture_free(char *picture, size_t size) {
    if (picture == NULL) return;
    sodium_memzero(picture, size);
    sodium_free(picture);
}

/* ---- parameters ---- */

/* Strict decoding into `check`; `host` may be NULL. */
static keybay_status rk_decode_params(const keybay_host *host, const uint8_t *params, size_t length,
                                      uint8_t check[RK_CHECK_BYTES]) {
    if (params == NULL) length = 0;
    if (length != RK_PARAMS_BYTES) {
        keybay_host_error(host, "recovery params: length is %zu bytes, expected %u", length, RK_PARAMS_BYTES);
        return KEYBAY_ERR_MALFORMED_PARAMS;
    }
    if (params[0] != RK_FORMAT) {
        keybay_host_error(host, "recovery params: format %u is not supported (expected %u)", (unsigned)params[0], RK_FORMAT);
        return KEYBAY_ERR_MALFORMED_PARAMS;
    }
    memcpy(check, params + 1, RK_CHECK_BYTES);
    return KEYBAY_OK;
}

/* ---- operations ---- */

static keybay_status rk_probe(const keybay_host *host) {
    (void)host; /* libsodium is all it needs; the QR code is optional */
    return KEYBAY_OK;
}

static keybay_status rk_enroll(const keybay_host *host, const keybay_option *options, size_t option_count,
                               keybay_buffer *params_out, uint8_t secret_out[KEYBAY_METHOD_SECRET_BYTES]) {
    keybay_status status = keybay_method_enroll_begin(host, "recovery", params_out, secret_out);
    if (status != KEYBAY_OK) return status;
    if (option_count > 0) {
        const char *name = options != NULL && options[0].name != NULL ? options[0].name : "";
        keybay_host_error(host, "recovery: unknown option '%.64s' (the recovery plugin takes no options)", name);
        return KEYBAY_ERR_INVALID_OPTION;
    }
    if (!KEYBAY_HOST_HAS(host, show_secret)) {
        keybay_host_error_reason(host, "cannot-show");
        keybay_host_error(host, "recovery: the host cannot show a recovery key, so none is made");
        return KEYBAY_ERR_INTERACTION_UNAVAILABLE;
    }
    uint8_t *encoded = malloc(RK_PARAMS_BYTES);
    if (encoded == NULL) {
        keybay_host_error(host, "recovery: out of memory");
        return KEYBAY_ERR_INTERNAL;
    }
    rk_secret *s = keybay_method_secret_new(host, "recovery", sizeof(rk_secret));
    if (s == NULL) {
        free(encoded);
        return KEYBAY_ERR_INTERNAL;
    }
    randombytes_buf(s->raw, RK_KEY_BYTES);
    rk_checksum(s, s->raw + RK_KEY_BYTES);
    encoded[0] = (uint8_t)RK_FORMAT;
    rk_secret_and_check(s, encoded + 1);
    rk_encode(s);

    size_t picture_size = 0;
    char *picture = rk_picture(host, s->text, &picture_size);
    status = host->show_secret(host->context, KEYBAY_SECRET_RECOVERY_KEY, s->text, picture);
    rk_picture_free(picture, picture_size);
    if (status == KEYBAY_OK) {
        memcpy(secret_out, s->secret, KEYBAY_METHOD_SECRET_BYTES);
        params_out->data = encoded;
        params_out->length = RK_PARAMS_BYTES;
        encoded = NULL;
    }
    free(encoded);
    keybay_method_secret_free(s, sizeof *s);
    return status;
}

/* Unwrap and verify: M from the key the user types. */
static keybay_status rk_unwrap(const keybay_host *host, const uint8_t *params, size_t params_length,
                               uint8_t secret_out[KEYBAY_METHOD_SECRET_BYTES]) {
    keybay_status status = keybay_method_unwrap_begin(host, "recovery", secret_out);
    if (status != KEYBAY_OK) return status;
    uint8_t stored[RK_CHECK_BYTES], check[RK_CHECK_BYTES];
    status = rk_decode_params(host, params, params_length, stored);
    if (status != KEYBAY_OK) return status;
    if (!KEYBAY_HOST_HAS(host, ask_secret)) {
        keybay_host_error(host, "recovery: the host offers no way to ask for the recovery key");
        return KEYBAY_ERR_INTERACTION_UNAVAILABLE;
    }
    rk_secret *s = keybay_method_secret_new(host, "recovery", sizeof(rk_secret));
    if (s == NULL) return KEYBAY_ERR_INTERNAL;
    size_t length = 0;
    status = host->ask_secret(host->context, KEYBAY_SECRET_RECOVERY_KEY, 0, "Recovery key", -1, s->input, sizeof s->input,
                              &length);
    if (status != KEYBAY_OK) goto done; /* CANCELLED, INTERACTION_UNAVAILABLE, ...: as is */
    if (length > sizeof s->input) {
        keybay_host_error(host, "recovery: the host reported more bytes than the buffer holds");
        status = KEYBAY_ERR_INTERNAL;
        goto done;
    }
    if (length > RK_INPUT_BYTES) {
        keybay_host_error_reason(host, "too-long");
        keybay_host_error(host, "recovery: the recovery key is longer than %u bytes", RK_INPUT_BYTES);
        status = KEYBAY_ERR_WRONG_SECRET;
        goto done;
    }
    status = rk_decode(host, s, length);
    if (status != KEYBAY_OK) goto done;
    rk_secret_and_check(s, check);
    if (sodium_memcmp(check, stored, RK_CHECK_BYTES) != 0) {
        keybay_host_error_reason(host, "other-store");
        keybay_host_error(host, "recovery: this is a valid recovery key, but not this store's");
        status = KEYBAY_ERR_WRONG_SECRET;
        goto done;
    }
    memcpy(secret_out, s->secret, KEYBAY_METHOD_SECRET_BYTES);

done:
    sodium_memzero(check, sizeof check);
    keybay_method_secret_free(s, sizeof *s);
    return status;
}

static keybay_status rk_describe(const keybay_host *host, const uint8_t *params, size_t params_length,
                                 keybay_buffer *text_out) {
    keybay_status status = keybay_method_describe_begin(text_out);
    if (status != KEYBAY_OK) return status;
    uint8_t check[RK_CHECK_BYTES];
    status = rk_decode_params(host, params, params_length, check);
    if (status != KEYBAY_OK) return status;
    static const char line[] = "recovery key (256-bit)";
    return keybay_method_text(line, sizeof line - 1u, text_out);
}

/* ---- descriptor ---- */

static const keybay_plugin rk_plugin = {
    .abi_version = KEYBAY_PLUGIN_ABI_VERSION,
    .struct_size = sizeof(keybay_plugin),
    .id = "recovery",
    .name = "Recovery key",
    .version = "1.0",
    .kind = KEYBAY_KIND_METHOD,
    /* Not one per store: a second key (one in a safe, one with someone trusted) is a second
       method, removable on its own. */
    .flags = KEYBAY_FLAG_INTERACTIVE,
    .options = NULL,
    .option_count = 0,
    .free_buffer = keybay_method_free_buffer,
    .probe = rk_probe,
    .enroll = rk_enroll,
    .unwrap = rk_unwrap,
    .describe_with_host = rk_describe,
};

KEYBAY_EXPORT const keybay_plugin *keybay_plugin_entry_v1(void) {
    return &rk_plugin;
}
