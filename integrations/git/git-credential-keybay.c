/*
 * SPDX-License-Identifier: Apache-2.0
 * git-credential-keybay: a git credential helper (gitcredentials(7), git-credential(1)) that keeps
 * credentials in a Keybay store, app id "git-credential" (--app ID chooses another), through the
 * C API. docs/integrations.md describes its records and behaviour.
 *
 *   git config --global credential.helper keybay
 *   git-credential-keybay [--app ID] [--use-http-path] get|store|erase    (git runs it; attributes on stdin)
 *   git-credential-keybay [--app ID] import [--replace] [--dry-run] [--remove-source] [FILE...]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sodium.h>
#include <keybay/keybay.h>

#include "helper_io.h"
#include "helper_store.h"
#include "integration_record.h"
#include "git_record.h"
#include "git_import.h"

#define PROGRAM "git-credential-keybay"
#define DEFAULT_APP "git-credential"
#define INPUT_LIMIT (1024 * 1024)

/* Attributes as git sends them: "key=value" lines up to a blank line or the end. A trailing CR
 * is dropped, as git's own reader does; unknown attributes are ignored; a later line wins.
 * -1 for a line that is not key=value, -2 for a url= that cannot be parsed. */
static int parse_attributes(guarded_buffer *input, integration_record *query, int use_http_path) {
    memset(query, 0, sizeof *query);
    query->kind = RECORD_KIND_GIT;
    size_t at = 0;
    while (at < input->length) {
        uint8_t *line = input->bytes + at;
        uint8_t *newline = memchr(line, '\n', input->length - at);
        size_t length = newline ? (size_t)(newline - line) : input->length - at;
        at += length + (newline ? 1 : 0);
        if (length && line[length - 1] == '\r') length--;
        if (length == 0) break;
        uint8_t *equals = memchr(line, '=', length);
        if (!equals) return -1;
        size_t name_length = (size_t)(equals - line);
        if (name_length == 3 && memcmp(line, "url", 3) == 0) {
            if (parse_url(equals + 1, length - 4, query, use_http_path) != 0) return -2;
            continue;
        }
        for (int tag = 1; tag <= RECORD_MAX_TAG; tag++) {
            if (strlen(attribute_names[tag]) == name_length && memcmp(attribute_names[tag], line, name_length) == 0) {
                query->fields[tag] = (record_field){1, equals + 1, length - name_length - 1};
                break;
            }
        }
    }
    return 0;
}

/* git's rule: an expiry that is not a positive decimal number never expires. */
static int is_expired(const record_field *expiry) {
    if (!expiry->present || expiry->length == 0 || expiry->length > 19) return 0;
    unsigned long long value = 0;
    for (size_t i = 0; i < expiry->length; i++) {
        if (expiry->bytes[i] < '0' || expiry->bytes[i] > '9') return 0;
        value = value * 10 + (unsigned long long)(expiry->bytes[i] - '0');
    }
    return value != 0 && value < (unsigned long long)time(NULL);
}

/* A stored credential matches when every identifying attribute the query has is stored, equal;
 * `with_password` adds the password (erase removes only the credential that was rejected). */
static int matches(const integration_record *query, const integration_record *stored, int with_password) {
    for (size_t i = 0; i < sizeof identity_tags; i++) {
        int tag = identity_tags[i];
        if (query->fields[tag].present && !record_field_equal(&query->fields[tag], &stored->fields[tag])) return 0;
    }
    if (with_password && query->fields[PASSWORD].present && !record_field_equal(&query->fields[PASSWORD], &stored->fields[PASSWORD]))
        return 0;
    return 1;
}

/* The keys to look at: one host's group when the query names protocol and host, else all. */
static void search_prefix(const integration_record *query, char *prefix, size_t capacity) {
    if (query->fields[PROTOCOL].present && query->fields[HOST].present) {
        char group[33];
        record_digest_hex(query, RECORD_ROLE_GROUP, group_tags, sizeof group_tags, 16, group);
        snprintf(prefix, capacity, KEY_PREFIX "%s/", group);
    } else {
        snprintf(prefix, capacity, KEY_PREFIX);
    }
}

static void say(const char *line) { fprintf(stderr, "%s\n", line); }

/* A failed call said on stderr, in one line: the exit status 1. */
static int say_failure(keybay_error *err) {
    char message[512];
    helper_describe_error(PROGRAM, err, message, sizeof message);
    keybay_error_free(err);
    say(message);
    return 1;
}

/* Every key of the store, and in `prefix` the one the query's credentials have: 0, or 1 with
 * the failure said. */
static int candidate_keys(keybay_store *store, const integration_record *query, char ***keys, size_t *count,
                          char *prefix, size_t capacity) {
    keybay_error *err = NULL;
    if (keybay_keys(store, keys, count, &err) != 0) return say_failure(err);
    search_prefix(query, prefix, capacity);
    return 0;
}

static int write_attribute(guarded_buffer *out, int tag, const record_field *field) {
    if (!field->present) return 0;
    const char *name = attribute_names[tag];
    if (guarded_append(out, name, strlen(name)) || guarded_append(out, "=", 1)
        || guarded_append(out, field->bytes, field->length) || guarded_append(out, "\n", 1))
        return -1;
    return 0;
}

/* get: prints the first matching, unexpired credential (in key order); a miss prints nothing. */
static int get(keybay_store *store, const integration_record *query) {
    char prefix[64], **keys = NULL;
    size_t count = 0;
    keybay_error *err = NULL;
    if (candidate_keys(store, query, &keys, &count, prefix, sizeof prefix) != 0) return 1;
    int status = 0, found = 0;
    for (size_t i = 0; i < count && !found && status == 0; i++) {
        if (strncmp(keys[i], prefix, strlen(prefix)) != 0) continue;
        uint8_t *value = NULL;
        size_t length = 0;
        int code = keybay_get(store, keys[i], &value, &length, &err);
        if (code == KEYBAY_ERR_NOT_FOUND) { keybay_error_free(err); err = NULL; continue; } /* erased meanwhile */
        if (code != 0) {
            status = say_failure(err);
            break;
        }
        integration_record stored;
        if (record_decode(value, length, RECORD_KIND_GIT, OAUTH_REFRESH_TOKEN, &stored) != 0) {
            fprintf(stderr, PROGRAM ": skipped %s: not a version-1 git credential record\n", keys[i]);
        } else if (matches(query, &stored, 0) && !is_expired(&stored.fields[PASSWORD_EXPIRY_UTC])) {
            guarded_buffer out = {0};
            int failed = write_attribute(&out, USERNAME, &stored.fields[USERNAME])
                || write_attribute(&out, PASSWORD, &stored.fields[PASSWORD])
                || write_attribute(&out, PASSWORD_EXPIRY_UTC, &stored.fields[PASSWORD_EXPIRY_UTC])
                || write_attribute(&out, OAUTH_REFRESH_TOKEN, &stored.fields[OAUTH_REFRESH_TOKEN])
                || write_all(STDOUT_FILENO, out.bytes, out.length);
            guarded_free(&out);
            if (failed) { say(PROGRAM ": cannot write the credential to standard output"); status = 1; }
            found = 1;
        }
        keybay_free_value(value, length);
    }
    keybay_free_strings(keys, count);
    return status;
}

/* store: keeps the credential under the digest of its protocol, host, path and username. git
 * sends nothing to store without those (and a password), and then nothing is stored. */
static int store_credential(keybay_store *store, const integration_record *query) {
    if (!git_record_is_complete(query)) return 0;
    char key[RECORD_KEY_CAPACITY + 1];
    git_record_key(query, key, sizeof key);
    size_t length = record_encoded_length(query);
    uint8_t *value = sodium_malloc(length);
    if (!value) { say(PROGRAM ": out of memory"); return 1; }
    record_encode(query, value, length);
    keybay_error *err = NULL;
    int code = keybay_set(store, key, value, length, &err);
    sodium_memzero(value, length);
    sodium_free(value);
    return code == 0 ? 0 : say_failure(err);
}

/* erase: removes every stored credential the query matches (with its password, when given). */
static int erase(keybay_store *store, const integration_record *query) {
    char prefix[64], **keys = NULL;
    size_t count = 0;
    keybay_error *err = NULL;
    if (candidate_keys(store, query, &keys, &count, prefix, sizeof prefix) != 0) return 1;
    int status = 0;
    for (size_t i = 0; i < count && status == 0; i++) {
        if (strncmp(keys[i], prefix, strlen(prefix)) != 0) continue;
        uint8_t *value = NULL;
        size_t length = 0;
        int code = keybay_get(store, keys[i], &value, &length, &err);
        if (code == KEYBAY_ERR_NOT_FOUND) { keybay_error_free(err); err = NULL; continue; }
        if (code != 0) break;
        integration_record stored;
        int remove = record_decode(value, length, RECORD_KIND_GIT, OAUTH_REFRESH_TOKEN, &stored) == 0 && matches(query, &stored, 1);
        keybay_free_value(value, length);
        if (remove) {
            code = keybay_delete(store, keys[i], &err);
            if (code == KEYBAY_ERR_NOT_FOUND) { keybay_error_free(err); err = NULL; }
            else if (code != 0) break;
        }
    }
    if (err) status = say_failure(err);
    keybay_free_strings(keys, count);
    return status;
}

static int usage(int status) {
    fprintf(status ? stderr : stdout, "usage: " PROGRAM " [--app ID] [--use-http-path] get|store|erase   (credential.helper \"keybay [--app ID]\")\n"
                                         "       " PROGRAM " [--app ID] import [--replace] [--dry-run] [--remove-source] [FILE...]\n");
    return status;
}

int main(int argc, char **argv) {
    limit_core_dumps();
    const char *app = DEFAULT_APP, *operation = NULL;
    int use_http_path = 0;
    for (int i = 1; i < argc; i++) {
        if (helper_app_argument(argc, argv, &i, &app)) continue;
        if (strcmp(argv[i], "--use-http-path") == 0) { use_http_path = 1; continue; }
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) return usage(0);
        else if (argv[i][0] == '-' || operation) return usage(2);
        else operation = argv[i];
        if (strcmp(operation, "import") == 0) {
            if (sodium_init() < 0) { say(PROGRAM ": libsodium did not initialise"); return 1; }
            return git_import(app, argc - i - 1, argv + i + 1);
        }
    }
    if (!operation) return usage(2);
    int is_get = strcmp(operation, "get") == 0, is_store = strcmp(operation, "store") == 0, is_erase = strcmp(operation, "erase") == 0;
    if (!is_get && !is_store && !is_erase) return 0; /* gitcredentials(7): ignore other operations */
    if (sodium_init() < 0) { say(PROGRAM ": libsodium did not initialise"); return 1; }
    /* git(1): GIT_TERMINAL_PROMPT=0 means nothing may wait for a person; a locked store then gives the hint. */
    const char *prompt = getenv("GIT_TERMINAL_PROMPT");
    if (prompt && strcmp(prompt, "0") == 0) helper_forbid_asking();

    guarded_buffer input = {0};
    int read = guarded_read_all(STDIN_FILENO, INPUT_LIMIT, &input);
    integration_record query;
    int parsed = read == 0 ? parse_attributes(&input, &query, use_http_path) : 0;
    if (read != 0 || parsed != 0) {
        /* The URL itself is not repeated: it may hold a password. */
        say(read == -2 ? PROGRAM ": the input is longer than 1 MiB" : read != 0 ? PROGRAM ": cannot read standard input"
            : parsed == -2 ? PROGRAM ": the url attribute cannot be parsed (no scheme, or a newline in a %-decoded part)"
                           : PROGRAM ": a line of the input is not key=value");
        guarded_free(&input);
        return 1;
    }
    /* erase without anything that identifies a credential would match every one: git never sends that. */
    if (is_erase && !query.fields[PROTOCOL].present && !query.fields[HOST].present && !query.fields[PATH].present
        && !query.fields[USERNAME].present) {
        guarded_free(&input);
        return 0;
    }
    keybay_store *store = NULL;
    char message[512];
    int status;
    switch (helper_open_store(PROGRAM, app, is_store, &store, message, sizeof message)) {
    case HELPER_OPENED:
        status = is_get ? get(store, &query) : is_store ? store_credential(store, &query) : erase(store, &query);
        keybay_close(store);
        break;
    case HELPER_NO_STORE:
        status = 0; /* nothing stored: a miss, and nothing to erase */
        break;
    case HELPER_LOCKED:
        say(message);
        status = is_get ? 0 : 1; /* get: git goes on and asks */
        break;
    default:
        say(message);
        status = 1;
        break;
    }
    guarded_free(&input);
    return status;
}
