/*
 * SPDX-License-Identifier: Apache-2.0
 * git credentials as git-credential-keybay keeps them (docs/integrations.md, "Records"): the
 * attributes, git's URL form of them (credential_from_url), and the record key of a credential.
 * Shared by the helper's store and its import of git's store files.
 */
#ifndef KEYBAY_GIT_RECORD_H
#define KEYBAY_GIT_RECORD_H

#include <stddef.h>
#include <stdint.h>
#include "integration_record.h"

#define KEY_PREFIX "git/"

enum { PROTOCOL = 1, HOST, PATH, USERNAME, PASSWORD, PASSWORD_EXPIRY_UTC, OAUTH_REFRESH_TOKEN };
extern const char *const attribute_names[RECORD_MAX_TAG + 1];
extern const uint8_t group_tags[2];
extern const uint8_t identity_tags[4];

/* url=: git's credential_from_url. The URL's parts (protocol, host with its port, username,
 * password, path) replace every attribute of `query`; username, password, host and path are
 * %-decoded in place; the path loses its leading and trailing slashes. An http(s) URL's path is
 * dropped unless `use_http_path`. -1 for a URL without a scheme or with a newline in a decoded
 * part, which git refuses too. */
int parse_url(uint8_t *url, size_t length, integration_record *query, int use_http_path);

/* Whether `query` holds what a stored credential needs: protocol, host or path, username, password. */
int git_record_is_complete(const integration_record *query);

/* The record key "git/<group>/<identity>" of a credential (RECORD_KEY_CAPACITY + 1 bytes). */
void git_record_key(const integration_record *query, char *key, size_t capacity);

#endif
