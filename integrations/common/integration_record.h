/*
 * SPDX-License-Identifier: Apache-2.0
 * The records the credential helpers keep in a Keybay store (docs/integrations.md, "Records"):
 * a record key made of digests of the attributes that identify a credential, and a value that
 * holds every attribute, in a versioned tag-length-value encoding.
 */
#ifndef KEYBAY_INTEGRATION_RECORD_H
#define KEYBAY_INTEGRATION_RECORD_H

#include <stddef.h>
#include <stdint.h>

/* Which program a record belongs to: the value's kind byte and the digests' domain. */
#define RECORD_KIND_GIT    1
#define RECORD_KIND_DOCKER 2
#define RECORD_KIND_KEYRING 3

/* Tags: 1..RECORD_MAX_TAG; each kind uses its own (docs/integrations.md lists them). */
#define RECORD_MAX_TAG 7

/* A record key: "<prefix>/<32 hex>/<64 hex>" or "<prefix>/<64 hex>"; prefixes are short. */
#define RECORD_KEY_CAPACITY 120

/* One attribute: absent, or present with `length` bytes (possibly none) at `bytes`. */
typedef struct {
    int present;
    const uint8_t *bytes;
    size_t length;
} record_field;

typedef struct {
    uint8_t kind;
    record_field fields[RECORD_MAX_TAG + 1]; /* indexed by tag; [0] unused */
} integration_record;

/* The encoded value's length: 6 bytes of header, then 5 per present field plus its bytes. */
size_t record_encoded_length(const integration_record *record);
/* Encodes into out[0..capacity); returns the length, or 0 when it does not fit. */
size_t record_encode(const integration_record *record, uint8_t *out, size_t capacity);
/* Decodes a value of `kind` whose tags are 1..max_tag: 0, with every field pointing into `value`,
 * or -1 for anything that is not exactly such a value (wrong magic, version or kind, tags not
 * strictly ascending, unknown tag, a length past the end, bytes after the last field). */
int record_decode(const uint8_t *value, size_t length, uint8_t kind, uint8_t max_tag, integration_record *record);

/* The hex digest of the fields named in `tags` (ascending, `count` of them): BLAKE2b with
 * `digest_bytes` (16 or 32) of output over the domain label, the kind, `role` and the fields'
 * tag-length-value encoding (absent fields left out). Writes 2 * digest_bytes + 1 characters. */
void record_digest_hex(const integration_record *record, uint8_t role, const uint8_t *tags, size_t count,
                       size_t digest_bytes, char *out);

#define RECORD_ROLE_GROUP 1
#define RECORD_ROLE_IDENTITY 2

/* Bytes equal, with presence: both absent, or both present with the same bytes. */
int record_field_equal(const record_field *a, const record_field *b);

#endif
