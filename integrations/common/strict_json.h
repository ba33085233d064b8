/*
 * SPDX-License-Identifier: Apache-2.0
 * A small strict JSON reader and writer for flat objects of strings (RFC 8259): what the
 * Docker credential protocol sends and what keybay_status_json answers.
 *
 * The reader takes exactly one JSON value, an object, with optional whitespace around it, and
 * refuses anything else: invalid UTF-8 (overlong forms, surrogates, past U+10FFFF), control
 * characters in strings, unknown escapes, a \u escape that is a lone or unpaired surrogate,
 * numbers outside the grammar, nesting deeper than 64, bytes after the object. Members it is asked
 * for must be strings and appear at most once; other members may hold any value and are skipped.
 */
#ifndef KEYBAY_STRICT_JSON_H
#define KEYBAY_STRICT_JSON_H

#include <stddef.h>
#include <stdint.h>

typedef struct {
    const char *name;    /* compared byte for byte with the decoded member name */
    int present;         /* set by the reader */
    const uint8_t *value; /* decoded bytes in the scratch buffer (may contain NUL) */
    size_t length;
} json_member;

/* Reads `input` as an object: 0, with each wanted member's value decoded into `scratch` (which
 * needs at least `length` bytes: nothing decodes longer than it is written), or -1. */
int json_read_object(const uint8_t *input, size_t length, json_member *members, size_t count,
                     uint8_t *scratch, size_t scratch_capacity);

/* One member of an object, located in the input (offsets into it): its name decoded into the
 * scratch buffer given, the opening quote of its name, and its value's bytes. */
typedef struct {
    const uint8_t *name;
    size_t name_length;
    size_t name_start;
    size_t value_start, value_end;
} json_span;

/* The members of the object that starts at input[start] (its '{'), in order: 0, with *count of
 * them (at most `capacity`) and *end just past its '}'; -1 for anything that is not a valid
 * object (values validated as json_read_object validates them, not decoded) or more members than
 * `capacity`. Names decode into scratch (which needs the object's length in bytes). */
int json_object_spans(const uint8_t *input, size_t length, size_t start, json_span *members, size_t capacity,
                      size_t *count, size_t *end, uint8_t *scratch, size_t scratch_capacity);

/* Decodes the JSON string whose opening quote is input[start]: its length, or -1 (not a string,
 * invalid, or longer than `capacity`). */
long json_decode_string(const uint8_t *input, size_t length, size_t start, uint8_t *out, size_t capacity);

/* The most bytes json_write_string can write for `length` bytes of text, quotes included. */
#define JSON_STRING_CAPACITY(length) (6 * (length) + 2)
/* Writes `bytes` (valid UTF-8, else nothing is written) as a JSON string, quotes included,
 * escaping '"', '\\' and control characters: the length written, or 0 (invalid UTF-8, no room). */
size_t json_write_string(uint8_t *out, size_t capacity, const uint8_t *bytes, size_t length);

/* 1 when bytes[0..length) is valid UTF-8 (no overlong forms, no surrogates, at most U+10FFFF). */
int json_valid_utf8(const uint8_t *bytes, size_t length);

#endif
