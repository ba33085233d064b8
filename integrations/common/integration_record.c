/* SPDX-License-Identifier: Apache-2.0 */
#include "integration_record.h"

#include <string.h>
#include <sodium.h>

static const uint8_t magic[4] = {'K', 'B', 'I', 'R'};
#define RECORD_VERSION 1
#define HEADER_BYTES 6
#define FIELD_HEADER_BYTES 5
static const char digest_label[] = "keybay:integration-record:v1";

static void put_u32(uint8_t *out, size_t value) {
    out[0] = (uint8_t)(value >> 24); out[1] = (uint8_t)(value >> 16); out[2] = (uint8_t)(value >> 8); out[3] = (uint8_t)value;
}

static size_t get_u32(const uint8_t *in) {
    return ((size_t)in[0] << 24) | ((size_t)in[1] << 16) | ((size_t)in[2] << 8) | (size_t)in[3];
}

size_t record_encoded_length(const integration_record *record) {
    size_t total = HEADER_BYTES;
    for (int tag = 1; tag <= RECORD_MAX_TAG; tag++)
        if (record->fields[tag].present) total += FIELD_HEADER_BYTES + record->fields[tag].length;
    return total;
}

size_t record_encode(const integration_record *record, uint8_t *out, size_t capacity) {
    size_t total = record_encoded_length(record);
    if (total > capacity) return 0;
    for (int tag = 1; tag <= RECORD_MAX_TAG; tag++)
        if (record->fields[tag].present && record->fields[tag].length > UINT32_MAX) return 0;
    memcpy(out, magic, sizeof magic);
    out[4] = RECORD_VERSION;
    out[5] = record->kind;
    size_t at = HEADER_BYTES;
    for (int tag = 1; tag <= RECORD_MAX_TAG; tag++) {
        const record_field *field = &record->fields[tag];
        if (!field->present) continue;
        out[at] = (uint8_t)tag;
        put_u32(out + at + 1, field->length);
        if (field->length) memcpy(out + at + FIELD_HEADER_BYTES, field->bytes, field->length);
        at += FIELD_HEADER_BYTES + field->length;
    }
    return at;
}

int record_decode(const uint8_t *value, size_t length, uint8_t kind, uint8_t max_tag, integration_record *record) {
    memset(record, 0, sizeof *record);
    if (max_tag > RECORD_MAX_TAG || length < HEADER_BYTES || memcmp(value, magic, sizeof magic) != 0
        || value[4] != RECORD_VERSION || value[5] != kind)
        return -1;
    record->kind = kind;
    size_t at = HEADER_BYTES;
    int last = 0;
    while (at < length) {
        if (length - at < FIELD_HEADER_BYTES) return -1;
        int tag = value[at];
        size_t field_length = get_u32(value + at + 1);
        at += FIELD_HEADER_BYTES;
        /* Strictly ascending tags: each at most once, and one encoding per record. */
        if (tag <= last || tag > max_tag || field_length > length - at) return -1;
        record->fields[tag] = (record_field){1, value + at, field_length};
        at += field_length;
        last = tag;
    }
    return 0;
}

void record_digest_hex(const integration_record *record, uint8_t role, const uint8_t *tags, size_t count,
                       size_t digest_bytes, char *out) {
    crypto_generichash_state state;
    uint8_t digest[32], prefix[2] = {record->kind, role}, field_header[FIELD_HEADER_BYTES];
    crypto_generichash_init(&state, NULL, 0, digest_bytes);
    crypto_generichash_update(&state, (const uint8_t *)digest_label, sizeof digest_label); /* with its NUL */
    crypto_generichash_update(&state, prefix, sizeof prefix);
    for (size_t i = 0; i < count; i++) {
        const record_field *field = &record->fields[tags[i]];
        if (!field->present) continue;
        field_header[0] = tags[i];
        put_u32(field_header + 1, field->length);
        crypto_generichash_update(&state, field_header, sizeof field_header);
        if (field->length) crypto_generichash_update(&state, field->bytes, field->length);
    }
    crypto_generichash_final(&state, digest, digest_bytes);
    sodium_bin2hex(out, 2 * digest_bytes + 1, digest, digest_bytes);
}

int record_field_equal(const record_field *a, const record_field *b) {
    if (a->present != b->present) return 0;
    if (!a->present) return 1;
    return a->length == b->length && (a->length == 0 || memcmp(a->bytes, b->bytes, a->length) == 0);
}
