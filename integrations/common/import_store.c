/*
 * SPDX-License-Identifier: Apache-2.0
 * A credential put into the store under the import rules (import_store.h).
 */
#include <stdio.h>
#include <sodium.h>

#include "helper_store.h"
#include "import_store.h"

static void say_error(const char *program, keybay_error *err) {
    char message[512];
    helper_describe_error(program, err, message, sizeof message);
    keybay_error_free(err);
    fprintf(stderr, "%s\n", message);
}

/* The stored value of `key` equals value[0..length). */
static int reads_back(const import_target *target, const char *key, const uint8_t *value, size_t length) {
    uint8_t *back = NULL;
    size_t back_length = 0;
    keybay_error *err = NULL;
    if (keybay_get(target->store, key, &back, &back_length, &err) != 0) { say_error(target->program, err); return 0; }
    int same = back_length == length && sodium_memcmp(back, value, length) == 0;
    keybay_free_value(back, back_length);
    return same;
}

import_outcome import_record(const import_target *target, const char *key, const integration_record *record, uint8_t max_tag,
                             const uint8_t *same_tags, size_t same_count, import_counts *counts) {
    int found = 0, same = 0;
    keybay_error *err = NULL;
    if (target->store) {
        uint8_t *existing = NULL;
        size_t existing_length = 0;
        int code = keybay_get(target->store, key, &existing, &existing_length, &err);
        if (code != 0 && code != KEYBAY_ERR_NOT_FOUND) { say_error(target->program, err); return IMPORT_FAILED; }
        if (code == KEYBAY_ERR_NOT_FOUND) keybay_error_free(err);
        found = code == 0;
        integration_record stored;
        if (found && record_decode(existing, existing_length, record->kind, max_tag, &stored) == 0) {
            same = 1;
            for (size_t i = 0; i < same_count; i++)
                same &= record_field_equal(&stored.fields[same_tags[i]], &record->fields[same_tags[i]]);
        }
        if (found) keybay_free_value(existing, existing_length);
    }
    if (same) { counts->unchanged++; return IMPORT_IN_STORE; }
    if (found && !target->replace) { counts->conflicts++; return IMPORT_CONFLICT; }
    if (found) counts->replaced++; else counts->imported++;
    if (target->dry_run) return IMPORT_IN_STORE;
    size_t length = record_encoded_length(record);
    uint8_t *value = sodium_malloc(length);
    if (!value) { fprintf(stderr, "%s: out of memory\n", target->program); return IMPORT_FAILED; }
    record_encode(record, value, length);
    import_outcome outcome = IMPORT_FAILED;
    if (keybay_set(target->store, key, value, length, &err) != 0) say_error(target->program, err);
    else if (reads_back(target, key, value, length)) outcome = IMPORT_IN_STORE;
    else fprintf(stderr, "%s: a stored credential does not read back as written\n", target->program);
    sodium_memzero(value, length);
    sodium_free(value);
    return outcome;
}
