/*
 * SPDX-License-Identifier: Apache-2.0
 * docker-credential-keybay: a Docker credential helper (the docker-credential-helpers protocol)
 * that keeps registry credentials in a Keybay store, app id "docker-credential" (--app ID
 * chooses another), through the C API. docs/integrations.md describes its records and behaviour.
 *
 *   ~/.docker/config.json: { "credsStore": "keybay" }
 *   docker-credential-keybay [--app ID] store|get|erase|list|version
 *
 * As the protocol says, errors go to standard output with exit status 1; a credential that is
 * not stored is exactly "credentials not found in native keychain".
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sodium.h>
#include <keybay/keybay.h>

#include "helper_io.h"
#include "helper_store.h"
#include "integration_record.h"
#include "docker_record.h"
#include "docker_import.h"
#include "strict_json.h"

#define PROGRAM "docker-credential-keybay"
#define DEFAULT_APP "docker-credential"
#define INPUT_LIMIT (1024 * 1024)
#define NOT_FOUND "credentials not found in native keychain"


/* A protocol error: one line on standard output, exit status 1. */
static int fail(const char *line) {
    printf("%s\n", line);
    fflush(stdout);
    return 1;
}

/* A failure of the store: the protocol's line on standard output, and the same on stderr, where
 * a person running docker sees what to do. */
static int fail_store(const char *line) {
    fprintf(stderr, "%s\n", line);
    return fail(line);
}

static int fail_call(keybay_error *err) {
    char message[512];
    helper_describe_error(PROGRAM, err, message, sizeof message);
    keybay_error_free(err);
    return fail_store(message);
}

/* Go's strings.TrimSpace for the ASCII spaces: what get and erase read is the URL. */
static record_field trimmed_url(const guarded_buffer *input) {
    size_t start = 0, end = input->length;
    while (start < end && strchr(" \t\n\v\f\r", input->bytes[start])) start++;
    while (end > start && strchr(" \t\n\v\f\r", input->bytes[end - 1])) end--;
    return (record_field){1, input->bytes + start, end - start};
}

static int open_store(const char *app, int create, keybay_store **store, int *absent) {
    char message[512];
    *absent = 0;
    switch (helper_open_store(PROGRAM, app, create, store, message, sizeof message)) {
    case HELPER_OPENED: return 0;
    case HELPER_NO_STORE: *absent = 1; return 0;
    default: fail_store(message); return 1;
    }
}

/* get and erase: the URL read, and its store: 0 with *store open, else the exit status (a miss
 * when there is no store; the failure said). */
static int open_for_url(const char *app, const guarded_buffer *input, record_field *url, keybay_store **store) {
    *url = trimmed_url(input);
    if (url->length == 0) return fail("no credentials server URL");
    int absent;
    if (open_store(app, 0, store, &absent) != 0) return 1;
    return absent ? fail(NOT_FOUND) : 0;
}

static int store_credentials(const char *app, const guarded_buffer *input) {
    uint8_t *scratch = sodium_malloc(input->length + 1);
    if (!scratch) return fail("out of memory");
    json_member members[3] = {{"ServerURL", 0, NULL, 0}, {"Username", 0, NULL, 0}, {"Secret", 0, NULL, 0}};
    int status;
    if (json_read_object(input->bytes, input->length, members, 3, scratch, input->length + 1) != 0) {
        status = fail("the credentials are not a JSON object of strings ServerURL, Username and Secret");
    } else if (!members[0].present || members[0].length == 0) {
        status = fail("no credentials server URL");
    } else if (!members[1].present || members[1].length == 0) {
        status = fail("no credentials username");
    } else {
        integration_record record = {.kind = RECORD_KIND_DOCKER};
        for (int tag = SERVER_URL; tag <= SECRET; tag++)
            record.fields[tag] = (record_field){1, members[tag - 1].value, members[tag - 1].length};
        char key[RECORD_KEY_CAPACITY + 1];
        docker_record_key(&record, key, sizeof key);
        size_t length = record_encoded_length(&record);
        uint8_t *value = sodium_malloc(length);
        keybay_store *store = NULL;
        int absent;
        if (!value) {
            status = fail("out of memory");
        } else if ((status = open_store(app, 1, &store, &absent)) == 0) {
            record_encode(&record, value, length);
            keybay_error *err = NULL;
            status = keybay_set(store, key, value, length, &err) == 0 ? 0 : fail_call(err);
            keybay_close(store);
        }
        if (value) { sodium_memzero(value, length); sodium_free(value); }
    }
    sodium_memzero(scratch, input->length + 1);
    sodium_free(scratch);
    return status;
}

/* The stored record of `url`: 0 with *value (free with keybay_free_value) decoded into *record;
 * else the exit status, the failure said. */
static int find(keybay_store *store, const record_field *url, uint8_t **value, size_t *length, integration_record *record) {
    integration_record wanted = {.kind = RECORD_KIND_DOCKER};
    wanted.fields[SERVER_URL] = *url;
    char key[RECORD_KEY_CAPACITY + 1];
    docker_record_key(&wanted, key, sizeof key);
    keybay_error *err = NULL;
    int code = keybay_get(store, key, value, length, &err);
    if (code == KEYBAY_ERR_NOT_FOUND) { keybay_error_free(err); return fail(NOT_FOUND); }
    if (code != 0) return fail_call(err);
    if (record_decode(*value, *length, RECORD_KIND_DOCKER, SECRET, record) != 0
        || !record_field_equal(&record->fields[SERVER_URL], url)) {
        keybay_free_value(*value, *length);
        return fail_store(PROGRAM ": the record of this server URL is not a version-1 docker credential record");
    }
    return 0;
}

static int append_json_string(guarded_buffer *out, const record_field *field) {
    size_t capacity = JSON_STRING_CAPACITY(field->length);
    if (guarded_reserve(out, capacity) != 0) return -1;
    size_t written = json_write_string(out->bytes + out->length, capacity, field->bytes, field->length);
    if (!written) return -1;
    out->length += written;
    return 0;
}

static int get_credentials(const char *app, const guarded_buffer *input) {
    record_field url;
    keybay_store *store = NULL;
    int opened = open_for_url(app, input, &url, &store);
    if (opened != 0) return opened;
    uint8_t *value = NULL;
    size_t length = 0;
    integration_record record;
    int status = find(store, &url, &value, &length, &record);
    if (status == 0) {
        guarded_buffer out = {0};
        int failed = guarded_append(&out, "{\"ServerURL\":", 13) || append_json_string(&out, &record.fields[SERVER_URL])
            || guarded_append(&out, ",\"Username\":", 12) || append_json_string(&out, &record.fields[USERNAME])
            || guarded_append(&out, ",\"Secret\":", 10) || append_json_string(&out, &record.fields[SECRET])
            || guarded_append(&out, "}\n", 2);
        status = failed ? fail_store(PROGRAM ": the stored credentials are not valid UTF-8")
                        : (write_all(STDOUT_FILENO, out.bytes, out.length) == 0 ? 0 : 1);
        guarded_free(&out);
        keybay_free_value(value, length);
    }
    keybay_close(store);
    return status;
}

static int erase_credentials(const char *app, const guarded_buffer *input) {
    record_field url;
    keybay_store *store = NULL;
    int opened = open_for_url(app, input, &url, &store);
    if (opened != 0) return opened;
    integration_record wanted = {.kind = RECORD_KIND_DOCKER};
    wanted.fields[SERVER_URL] = url;
    char key[RECORD_KEY_CAPACITY + 1];
    docker_record_key(&wanted, key, sizeof key);
    keybay_error *err = NULL;
    int code = keybay_delete(store, key, &err), status = 0;
    if (code == KEYBAY_ERR_NOT_FOUND) { keybay_error_free(err); status = fail(NOT_FOUND); }
    else if (code != 0) status = fail_call(err);
    keybay_close(store);
    return status;
}

typedef struct { uint8_t *value; size_t length; integration_record record; } listed;

static int by_url(const void *a, const void *b) {
    const record_field *x = &((const listed *)a)->record.fields[SERVER_URL], *y = &((const listed *)b)->record.fields[SERVER_URL];
    size_t n = x->length < y->length ? x->length : y->length;
    int c = n ? memcmp(x->bytes, y->bytes, n) : 0;
    return c ? c : (x->length > y->length) - (x->length < y->length);
}

/* list: {"URL":"username",...} in byte order of the URLs ({} with no store). */
static int list_credentials(const char *app) {
    keybay_store *store = NULL;
    int absent;
    if (open_store(app, 0, &store, &absent) != 0) return 1;
    if (absent) { printf("{}\n"); return 0; }
    char **keys = NULL;
    size_t count = 0, found = 0;
    keybay_error *err = NULL;
    if (keybay_keys(store, &keys, &count, &err) != 0) { keybay_close(store); return fail_call(err); }
    listed *entries = calloc(count ? count : 1, sizeof *entries);
    int status = entries ? 0 : fail("out of memory");
    for (size_t i = 0; i < count && status == 0; i++) {
        if (strncmp(keys[i], KEY_PREFIX, strlen(KEY_PREFIX)) != 0) continue;
        listed *entry = &entries[found];
        int code = keybay_get(store, keys[i], &entry->value, &entry->length, &err);
        if (code == KEYBAY_ERR_NOT_FOUND) { keybay_error_free(err); err = NULL; continue; }
        if (code != 0) { status = fail_call(err); break; }
        if (record_decode(entry->value, entry->length, RECORD_KIND_DOCKER, SECRET, &entry->record) != 0) {
            fprintf(stderr, PROGRAM ": skipped %s: not a version-1 docker credential record\n", keys[i]);
            keybay_free_value(entry->value, entry->length);
            continue;
        }
        found++;
    }
    if (status == 0) {
        qsort(entries, found, sizeof *entries, by_url);
        guarded_buffer out = {0};
        int failed = guarded_append(&out, "{", 1);
        for (size_t i = 0; i < found && !failed; i++)
            failed = (i && guarded_append(&out, ",", 1)) || append_json_string(&out, &entries[i].record.fields[SERVER_URL])
                || guarded_append(&out, ":", 1) || append_json_string(&out, &entries[i].record.fields[USERNAME]);
        failed = failed || guarded_append(&out, "}\n", 2);
        status = failed ? fail_store(PROGRAM ": a stored server URL or username is not valid UTF-8")
                        : (write_all(STDOUT_FILENO, out.bytes, out.length) == 0 ? 0 : 1);
        guarded_free(&out);
    }
    if (entries) for (size_t i = 0; i < found; i++) keybay_free_value(entries[i].value, entries[i].length);
    free(entries);
    keybay_free_strings(keys, count);
    keybay_close(store);
    return status;
}

int main(int argc, char **argv) {
    limit_core_dumps();
    const char *app = DEFAULT_APP, *action = NULL;
    for (int i = 1; i < argc; i++) {
        if (helper_app_argument(argc, argv, &i, &app)) continue;
        if (action) action = "";
        else action = argv[i];
    }
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--app") == 0) { i++; continue; }
        if (strncmp(argv[i], "--app=", 6) == 0) continue;
        if (strcmp(argv[i], "import") != 0) break;
        if (sodium_init() < 0) return fail(PROGRAM ": libsodium did not initialise");
        return docker_import(app, argc - i - 1, argv + i + 1);
    }
    if (!action || !*action) return fail("Usage: " PROGRAM " [--app ID] <store|get|erase|list|version>\n"
                                         "       " PROGRAM " [--app ID] import [--replace] [--dry-run] [--remove-source] [CONFIG]");
    if (strcmp(action, "version") == 0) {
        printf(PROGRAM " (keybay) %s\n", keybay_version());
        return 0;
    }
    int is_store = strcmp(action, "store") == 0, is_get = strcmp(action, "get") == 0, is_erase = strcmp(action, "erase") == 0;
    if (strcmp(action, "list") != 0 && !is_store && !is_get && !is_erase) {
        printf("Unknown credential action `%s`\n", action);
        return 1;
    }
    if (sodium_init() < 0) return fail(PROGRAM ": libsodium did not initialise");
    if (!is_store && !is_get && !is_erase) return list_credentials(app);
    guarded_buffer input = {0};
    int read = guarded_read_all(STDIN_FILENO, INPUT_LIMIT, &input), status;
    if (read != 0) status = fail(read == -2 ? PROGRAM ": the input is longer than 1 MiB" : PROGRAM ": cannot read standard input");
    else status = is_store ? store_credentials(app, &input) : is_get ? get_credentials(app, &input) : erase_credentials(app, &input);
    guarded_free(&input);
    return status;
}
