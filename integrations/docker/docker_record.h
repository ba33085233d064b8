/*
 * SPDX-License-Identifier: Apache-2.0
 * Docker credentials as docker-credential-keybay keeps them (docs/integrations.md, "Records"):
 * server URL, username, secret; the record key is the digest of the server URL.
 */
#ifndef KEYBAY_DOCKER_RECORD_H
#define KEYBAY_DOCKER_RECORD_H

#include <stddef.h>
#include "integration_record.h"

#define KEY_PREFIX "docker/"

enum { SERVER_URL = 1, USERNAME, SECRET };

/* "docker/<64 hex>" for the record's server URL (RECORD_KEY_CAPACITY + 1 bytes). */
void docker_record_key(const integration_record *record, char *key, size_t capacity);

#endif
