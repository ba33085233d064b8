/*
 * SPDX-License-Identifier: Apache-2.0
 * libFuzzer target for the credential helpers' decoders (integrations/common): the first byte
 * chooses one. Even: the strict JSON reader with the Docker members; what it accepts is written
 * back with the writer and must read back to the same values. Odd: the record decoder; what it
 * accepts must encode back to exactly its own bytes (one encoding per record).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "integration_record.h"
#include "strict_json.h"

static void check_json(const uint8_t *data, size_t size) {
    uint8_t *scratch = malloc(size + 1);
    json_member members[3] = {{"ServerURL", 0, NULL, 0}, {"Username", 0, NULL, 0}, {"Secret", 0, NULL, 0}};
    if (json_read_object(data, size, members, 3, scratch, size + 1) == 0) {
        size_t capacity = 16;
        for (int i = 0; i < 3; i++) capacity += 16 + JSON_STRING_CAPACITY(members[i].length);
        uint8_t *object = malloc(capacity), *again = malloc(capacity);
        size_t at = 0;
        object[at++] = '{';
        for (int i = 0; i < 3; i++) {
            if (!members[i].present) continue;
            if (at > 1) object[at++] = ',';
            size_t n = json_write_string(object + at, capacity - at, (const uint8_t *)members[i].name, strlen(members[i].name));
            if (!n) abort();
            at += n;
            object[at++] = ':';
            n = json_write_string(object + at, capacity - at, members[i].value, members[i].length);
            if (!n) abort(); /* the reader only hands out valid UTF-8 */
            at += n;
        }
        object[at++] = '}';
        json_member back[3] = {{"ServerURL", 0, NULL, 0}, {"Username", 0, NULL, 0}, {"Secret", 0, NULL, 0}};
        if (json_read_object(object, at, back, 3, again, capacity) != 0) abort();
        for (int i = 0; i < 3; i++)
            if (back[i].present != members[i].present || back[i].length != members[i].length
                || (back[i].length && memcmp(back[i].value, members[i].value, back[i].length) != 0))
                abort();
        free(object);
        free(again);
    }
    free(scratch);
}

static void check_record(const uint8_t *data, size_t size) {
    integration_record record;
    if (record_decode(data, size, RECORD_KIND_GIT, RECORD_MAX_TAG, &record) != 0) return;
    uint8_t *encoded = malloc(size ? size : 1);
    if (record_encoded_length(&record) != size || record_encode(&record, encoded, size) != size || memcmp(encoded, data, size) != 0)
        abort();
    free(encoded);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size == 0) return 0;
    if (data[0] % 2 == 0) check_json(data + 1, size - 1);
    else check_record(data + 1, size - 1);
    return 0;
}
