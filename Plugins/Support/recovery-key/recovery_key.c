// SPDX-License-Identifier: Apache-2.0
/* The recovery key's text and QR code: see include/keybay_recovery_key.h and docs/recovery.md. */
#define _POSIX_C_SOURCE 200809L

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "keybay_lazy_library.h"
#include "keybay_plugin_host.h"
#include "keybay_recovery_key.h"

_Static_assert(KEYBAY_RK_RAW_BYTES * 8u == KEYBAY_RK_SYMBOLS * 5u, "no padding bits");
_Static_assert(KEYBAY_RK_SYMBOLS % KEYBAY_RK_GROUP == 0, "whole groups");

/* Crockford's base32: digits and capitals without I, L, O, U. */
static const char rk_alphabet[] = "0123456789ABCDEFGHJKMNPQRSTVWXYZ";
static const char rk_label_checksum[] = "keybay recovery v1 checksum";

void keybay_rk_checksum(const uint8_t raw[KEYBAY_RK_RAW_BYTES], uint8_t hash[KEYBAY_RK_HASH_BYTES], uint8_t out[KEYBAY_RK_CHECKSUM_BYTES]) {
    crypto_generichash(hash, KEYBAY_RK_HASH_BYTES, (const unsigned char *)rk_label_checksum, strlen(rk_label_checksum), raw, KEYBAY_RK_KEY_BYTES);
    memcpy(out, hash, KEYBAY_RK_CHECKSUM_BYTES);
    sodium_memzero(hash, KEYBAY_RK_HASH_BYTES);
}

void keybay_rk_generate(uint8_t raw[KEYBAY_RK_RAW_BYTES], uint8_t hash[KEYBAY_RK_HASH_BYTES]) {
    randombytes_buf(raw, KEYBAY_RK_KEY_BYTES);
    keybay_rk_checksum(raw, hash, raw + KEYBAY_RK_KEY_BYTES);
}

/* 5 bits a character, most significant first. */
void keybay_rk_encode(const uint8_t raw[KEYBAY_RK_RAW_BYTES], char text[KEYBAY_RK_TEXT_BYTES + 1]) {
    size_t out = 0;
    for (size_t i = 0; i < KEYBAY_RK_SYMBOLS; i++) {
        if (i > 0 && i % KEYBAY_RK_GROUP == 0) text[out++] = '-';
        size_t bit = i * 5u;
        unsigned pair = ((unsigned)raw[bit / 8u] << 8) | (bit / 8u + 1u < KEYBAY_RK_RAW_BYTES ? raw[bit / 8u + 1u] : 0u);
        text[out++] = rk_alphabet[(pair >> (11u - bit % 8u)) & 31u];
    }
    text[out] = '\0';
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

keybay_status keybay_rk_decode(const keybay_host *host, const char *who, const uint8_t *input, size_t length,
                               uint8_t symbols[KEYBAY_RK_SYMBOLS], uint8_t hash[KEYBAY_RK_HASH_BYTES], uint8_t raw[KEYBAY_RK_RAW_BYTES]) {
    size_t count = 0;
    for (size_t i = 0; i < length; i++) {
        int v = rk_symbol(input[i]);
        if (v == -1) continue;
        if (v == -2) {
            /* The position only: the character would be part of a nearly right key. */
            keybay_host_error_reason(host, "typo-character");
            keybay_host_error(host, "%s: the recovery key has a typo: character %zu is not one of its letters "
                                    "(0-9 and A-Z without I, L, O, U)", who, count + 1);
            return KEYBAY_ERR_WRONG_SECRET;
        }
        if (count == KEYBAY_RK_SYMBOLS) {
            keybay_host_error_reason(host, "typo-length");
            keybay_host_error(host, "%s: the recovery key has a typo: it has more than %u characters "
                                    "(spaces and dashes aside)", who, KEYBAY_RK_SYMBOLS);
            return KEYBAY_ERR_WRONG_SECRET;
        }
        symbols[count++] = (uint8_t)v;
    }
    if (count != KEYBAY_RK_SYMBOLS) {
        keybay_host_error_reason(host, "typo-length");
        keybay_host_error(host, "%s: the recovery key has a typo: it has %zu characters, not %u "
                                "(spaces and dashes aside)", who, count, KEYBAY_RK_SYMBOLS);
        return KEYBAY_ERR_WRONG_SECRET;
    }
    memset(raw, 0, KEYBAY_RK_RAW_BYTES);
    for (size_t i = 0; i < KEYBAY_RK_SYMBOLS; i++) {
        size_t bit = i * 5u;
        unsigned shifted = (unsigned)symbols[i] << (11u - bit % 8u);
        raw[bit / 8u] |= (uint8_t)(shifted >> 8);
        if (bit / 8u + 1u < KEYBAY_RK_RAW_BYTES) raw[bit / 8u + 1u] |= (uint8_t)shifted;
    }
    uint8_t expected[KEYBAY_RK_CHECKSUM_BYTES];
    keybay_rk_checksum(raw, hash, expected);
    int same = sodium_memcmp(expected, raw + KEYBAY_RK_KEY_BYTES, KEYBAY_RK_CHECKSUM_BYTES) == 0;
    sodium_memzero(expected, sizeof expected);
    if (!same) {
        keybay_host_error_reason(host, "typo-checksum");
        keybay_host_error(host, "%s: the recovery key has a typo: its checksum does not match "
                                "(check each character; spaces, dashes and case do not matter)", who);
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
#define RK_QR_LIBRARY "libqrencode.so.4"
#define RK_QR_ECLEVEL_M 1 /* QR_ECLEVEL_M: about 15% of the code may be damaged */
#define RK_QR_MODE_8 2    /* QR_MODE_8; with case sensitivity libqrencode picks the modes itself */
#define RK_QR_QUIET 4     /* the quiet zone, in modules, that the QR standard asks for */
#define RK_QR_FUNCTIONS(X)                                                                                      \
    X(QRcode_encodeString, rk_qrcode *, (const char *string, int version, int level, int hint, int casesensitive)) \
    X(QRcode_free, void, (rk_qrcode *code))

static struct {
    RK_QR_FUNCTIONS(KEYBAY_LAZY_TYPED_POINTER)
} rk_qr;
KEYBAY_LAZY_LIBRARY(rk_qr_library, RK_QR_LIBRARY, RTLD_NOW, rk_qr, RK_QR_FUNCTIONS, KEYBAY_LAZY_TYPED_NAME);

/* The QR code of `text` in Unicode half blocks, two module rows a line, with the quiet zone, as
   `qrencode -t UTF8` draws it: light modules are drawn (█ ▀ ▄), dark ones left blank, for a
   terminal with a dark background. Guarded memory (rk_picture_free); NULL when libqrencode is
   missing or fails, which is never an error: the text is what counts. */
char *keybay_rk_picture(const keybay_host *host, const char *who, const char *text, size_t *size_out) {
    const char *why = keybay_lazy_library_open(&rk_qr_library);
    if (why != NULL) {
        keybay_host_log(host, KEYBAY_LOG_INFO, "%s: no QR code: cannot load " RK_QR_LIBRARY " (%s; Debian: libqrencode4)", who,
                        why);
        return NULL;
    }
    rk_qrcode *code = rk_qr.QRcode_encodeString(text, 0, RK_QR_ECLEVEL_M, RK_QR_MODE_8, 1);
    if (code == NULL || code->data == NULL || code->width <= 0 || code->width > 177) {
        keybay_host_log(host, KEYBAY_LOG_INFO, "%s: no QR code: libqrencode could not encode the key", who);
        if (code != NULL) rk_qr.QRcode_free(code);
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
        keybay_host_log(host, KEYBAY_LOG_INFO, "%s: no QR code: could not allocate guarded memory", who);
    }
    /* The modules are the key too. libqrencode's own intermediate buffers are freed by it. */
    sodium_memzero(code->data, width * width);
    rk_qr.QRcode_free(code);
    return picture;
}

void keybay_rk_picture_free(char *picture, size_t size) {
    if (picture == NULL) return;
    sodium_memzero(picture, size);
    sodium_free(picture);
}
