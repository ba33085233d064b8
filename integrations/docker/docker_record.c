/*
 * SPDX-License-Identifier: Apache-2.0
 * The record key of a Docker credential (docker_record.h).
 */
#include <stdio.h>

#include "docker_record.h"

static const uint8_t identity_tags[] = {SERVER_URL};

void docker_record_key(const integration_record *record, char *key, size_t capacity) {
    char identity[65];
    record_digest_hex(record, RECORD_ROLE_IDENTITY, identity_tags, sizeof identity_tags, 32, identity);
    snprintf(key, capacity, KEY_PREFIX "%s", identity);
}
