/*
 * SPDX-License-Identifier: Apache-2.0
 * git credentials: their URL form and their record key (git_record.h).
 */
#include <stdio.h>
#include <string.h>

#include "git_record.h"

const char *const attribute_names[RECORD_MAX_TAG + 1] = {
    NULL, "protocol", "host", "path", "username", "password", "password_expiry_utc", "oauth_refresh_token"};
const uint8_t group_tags[2] = {PROTOCOL, HOST};
const uint8_t identity_tags[4] = {PROTOCOL, HOST, PATH, USERNAME};

static int hex_digit(uint8_t c) {
    return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

/* bytes[0..length) %-decoded in place as git's url_decode does ('+' stays; a '%' without two hex
 * digits after it stays); the field points at the result. */
static void set_decoded(record_field *field, uint8_t *bytes, size_t length) {
    size_t out = 0;
    for (size_t i = 0; i < length; i++) {
        int high, low;
        if (bytes[i] == '%' && i + 2 < length && (high = hex_digit(bytes[i + 1])) >= 0 && (low = hex_digit(bytes[i + 2])) >= 0) {
            bytes[out++] = (uint8_t)(high * 16 + low);
            i += 2;
        } else {
            bytes[out++] = bytes[i];
        }
    }
    *field = (record_field){1, bytes, out};
}

static int is_http(const record_field *protocol) {
    return (protocol->length == 4 && memcmp(protocol->bytes, "http", 4) == 0)
        || (protocol->length == 5 && memcmp(protocol->bytes, "https", 5) == 0);
}

int parse_url(uint8_t *url, size_t length, integration_record *query, int use_http_path) {
    memset(query->fields, 0, sizeof query->fields);
    uint8_t *end = url + length, *protocol_end = NULL;
    for (uint8_t *p = url; p + 3 <= end; p++)
        if (memcmp(p, "://", 3) == 0) { protocol_end = p; break; }
    if (!protocol_end || protocol_end == url) return -1;
    uint8_t *start = protocol_end + 3, *slash = start;
    while (slash < end && *slash != '/' && *slash != '?' && *slash != '#') slash++;
    uint8_t *at = memchr(start, '@', (size_t)(end - start)), *colon = memchr(start, ':', (size_t)(end - start));
    uint8_t *host = start;
    if (at && at < slash) {
        if (colon && colon < at) {
            set_decoded(&query->fields[USERNAME], start, (size_t)(colon - start));
            set_decoded(&query->fields[PASSWORD], colon + 1, (size_t)(at - colon - 1));
        } else {
            set_decoded(&query->fields[USERNAME], start, (size_t)(at - start));
        }
        host = at + 1;
    }
    query->fields[PROTOCOL] = (record_field){1, url, (size_t)(protocol_end - url)};
    set_decoded(&query->fields[HOST], host, (size_t)(slash - host));
    while (slash < end && *slash == '/') slash++;
    if (slash < end) {
        set_decoded(&query->fields[PATH], slash, (size_t)(end - slash));
        while (query->fields[PATH].length > 1 && query->fields[PATH].bytes[query->fields[PATH].length - 1] == '/')
            query->fields[PATH].length--;
    }
    for (int tag = PROTOCOL; tag <= PASSWORD; tag++)
        if (query->fields[tag].present && memchr(query->fields[tag].bytes, '\n', query->fields[tag].length)) return -1;
    if (!use_http_path && is_http(&query->fields[PROTOCOL])) query->fields[PATH] = (record_field){0, NULL, 0};
    return 0;
}

int git_record_is_complete(const integration_record *query) {
    return query->fields[PROTOCOL].present && (query->fields[HOST].present || query->fields[PATH].present)
        && query->fields[USERNAME].present && query->fields[PASSWORD].present;
}

void git_record_key(const integration_record *query, char *key, size_t capacity) {
    char identity[65], group[33];
    record_digest_hex(query, RECORD_ROLE_GROUP, group_tags, sizeof group_tags, 16, group);
    record_digest_hex(query, RECORD_ROLE_IDENTITY, identity_tags, sizeof identity_tags, 32, identity);
    snprintf(key, capacity, KEY_PREFIX "%s/%s", group, identity);
}
