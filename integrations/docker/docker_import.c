/*
 * SPDX-License-Identifier: Apache-2.0
 * `docker-credential-keybay import [--replace] [--dry-run] [--remove-source] [CONFIG]`
 * (docs/integrations.md, "Migrating"). Each `auths` entry of Docker's config.json with `auth`
 * (base64 of user:secret) or `identitytoken` is stored as `store` would store it, then read back.
 * --remove-source takes those two members out of the entries that are verifiably in the store
 * and sets "credsStore": "keybay", editing the file's bytes in place so every other member, its
 * order and the file's layout stay as they were; a file that is not exactly one JSON object with
 * unique member names is refused.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sodium.h>
#include <keybay/keybay.h>

#include "docker_import.h"
#include "docker_record.h"
#include "helper_io.h"
#include "helper_store.h"
#include "import_source.h"
#include "import_store.h"
#include "strict_json.h"

#define PROGRAM "docker-credential-keybay"
#define MAX_MEMBERS 4096
#define TOKEN_USERNAME "<token>" /* what Docker stores as the username of an identity token */

static const uint8_t same_tags[] = {USERNAME, SECRET};

/* One edit of the file: bytes [start, end) replaced by replacement[0..length). */
typedef struct {
    size_t start, end;
    guarded_buffer replacement;
} edit;

static int is_space(uint8_t c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

/* The members of the object at bytes[start], names unique: their count, or -1. */
static long object_members(const guarded_buffer *bytes, size_t start, json_span *members, size_t *end, guarded_buffer *scratch) {
    size_t count = 0;
    scratch->length = 0;
    if (guarded_reserve(scratch, bytes->length + 1) != 0) return -1;
    if (json_object_spans(bytes->bytes, bytes->length, start, members, MAX_MEMBERS, &count, end, scratch->bytes, scratch->capacity) != 0)
        return -1;
    for (size_t i = 0; i < count; i++)
        for (size_t j = 0; j < i; j++)
            if (members[i].name_length == members[j].name_length && memcmp(members[i].name, members[j].name, members[i].name_length) == 0)
                return -1;
    return (long)count;
}

static long find(const json_span *members, long count, const char *name) {
    for (long i = 0; i < count; i++)
        if (members[i].name_length == strlen(name) && memcmp(members[i].name, name, members[i].name_length) == 0) return i;
    return -1;
}

/* The entry object rebuilt without the members marked in `drop`: "{}" when none is left,
 * else its own whitespace, the kept members and the separator between its first two. */
static int rebuild_entry(const guarded_buffer *bytes, size_t start, size_t end, const json_span *m, long count, const int *drop,
                         guarded_buffer *out) {
    const uint8_t *b = bytes->bytes;
    long kept = 0;
    for (long i = 0; i < count; i++) kept += !drop[i];
    if (kept == 0) return guarded_append(out, "{}", 2);
    int failed = guarded_append(out, b + start, m[0].name_start - start);
    long written = 0;
    for (long i = 0; i < count && !failed; i++) {
        if (drop[i]) continue;
        if (written++) failed |= guarded_append(out, b + m[0].value_end, m[1].name_start - m[0].value_end);
        failed |= guarded_append(out, b + m[i].name_start, m[i].value_end - m[i].name_start);
    }
    return failed | guarded_append(out, b + m[count - 1].value_end, end - m[count - 1].value_end);
}

typedef struct {
    import_target target;
    int remove_source;
    import_counts counts;
    edit *edits;
    size_t edit_count;
} import_run;

/* One `auths` entry: 0, or -1 when a store call failed (the import stops). */
static int import_entry(import_run *run, const guarded_buffer *bytes, const json_span *entry, const char *path) {
    json_span *m = malloc(MAX_MEMBERS * sizeof *m);
    guarded_buffer scratch = {0}, server = {0}, auth = {0}, token = {0}, decoded = {0};
    int status = 0;
    size_t end;
    long count = m && bytes->bytes[entry->value_start] == '{' ? object_members(bytes, entry->value_start, m, &end, &scratch) : -1;
    long a = count >= 0 ? find(m, count, "auth") : -1, t = count >= 0 ? find(m, count, "identitytoken") : -1;
    const char *problem = NULL;
#define DECODE(buffer, span) (guarded_reserve(&buffer, bytes->length + 1) == 0 \
        && (long)(buffer.length = (size_t)json_decode_string(bytes->bytes, bytes->length, (span).value_start, buffer.bytes, buffer.capacity)) >= 0)
    if (count < 0) problem = "is not an object with unique member names";
    else if (a < 0 && t < 0) goto done; /* nothing to import (credsStore keeps it elsewhere) */
    else if ((a >= 0 && !DECODE(auth, m[a])) || (t >= 0 && !DECODE(token, m[t]))) problem = "has an auth or identitytoken that is not a string";
    if (!problem && guarded_reserve(&server, bytes->length + 1) == 0) {
        long n = json_decode_string(bytes->bytes, bytes->length, entry->name_start, server.bytes, server.capacity);
        server.length = n > 0 ? (size_t)n : 0;
        if (n <= 0) problem = "has an empty registry name";
    }
    integration_record record = {.kind = RECORD_KIND_DOCKER};
    if (!problem) {
        record.fields[SERVER_URL] = (record_field){1, server.bytes, server.length};
        if (t >= 0 && token.length > 0) {
            record.fields[USERNAME] = (record_field){1, (const uint8_t *)TOKEN_USERNAME, strlen(TOKEN_USERNAME)};
            record.fields[SECRET] = (record_field){1, token.bytes, token.length};
        } else {
            size_t length = 0;
            uint8_t *colon = NULL;
            if (a < 0 || guarded_reserve(&decoded, auth.length + 1) != 0
                || sodium_base642bin(decoded.bytes, decoded.capacity, (const char *)auth.bytes, auth.length, NULL, &length, NULL,
                                     sodium_base64_VARIANT_ORIGINAL) != 0
                || !(colon = memchr(decoded.bytes, ':', length)) || colon == decoded.bytes) {
                problem = "has an auth that is not base64 of user:secret";
            } else {
                decoded.length = length;
                record.fields[USERNAME] = (record_field){1, decoded.bytes, (size_t)(colon - decoded.bytes)};
                record.fields[SECRET] = (record_field){1, colon + 1, length - (size_t)(colon - decoded.bytes) - 1};
            }
        }
    }
    if (problem) {
        run->counts.malformed++;
        fprintf(stderr, PROGRAM ": %s: the auths entry %.*s %s; skipped\n", path, (int)(entry->name_length), (const char *)entry->name, problem);
        goto done;
    }
    char key[RECORD_KEY_CAPACITY + 1];
    docker_record_key(&record, key, sizeof key);
    import_outcome outcome = import_record(&run->target, key, &record, SECRET, same_tags, sizeof same_tags, &run->counts);
    if (outcome == IMPORT_FAILED) { status = -1; goto done; }
    if (outcome == IMPORT_CONFLICT) {
        fprintf(stderr, PROGRAM ": %s: conflict: other credentials for %.*s are stored; kept (--replace replaces them)\n", path,
                (int)server.length, (const char *)server.bytes);
        goto done;
    }
    if (run->remove_source) {
        int drop[MAX_MEMBERS] = {0};
        if (a >= 0) drop[a] = 1;
        if (t >= 0) drop[t] = 1;
        edit *e = &run->edits[run->edit_count++];
        *e = (edit){entry->value_start, end, {0}};
        if (rebuild_entry(bytes, entry->value_start, end, m, count, drop, &e->replacement) != 0) status = -1;
        run->counts.removed++;
    }
done:
#undef DECODE
    guarded_free(&scratch); guarded_free(&server); guarded_free(&auth); guarded_free(&token); guarded_free(&decoded);
    free(m);
    return status;
}

/* The file with every edit applied (edits in ascending order, disjoint). */
static int apply_edits(const guarded_buffer *bytes, const edit *edits, size_t count, guarded_buffer *out) {
    size_t at = 0;
    int failed = 0;
    for (size_t i = 0; i < count && !failed; i++) {
        failed |= guarded_append(out, bytes->bytes + at, edits[i].start - at);
        failed |= guarded_append(out, edits[i].replacement.bytes, edits[i].replacement.length);
        at = edits[i].end;
    }
    return failed | guarded_append(out, bytes->bytes + at, bytes->length - at);
}

static int by_start(const void *x, const void *y) {
    size_t a = ((const edit *)x)->start, b = ((const edit *)y)->start;
    return a < b ? -1 : a > b;
}

int docker_import(const char *app, int argc, char **argv) {
    import_run run = {{PROGRAM, NULL, 0, 0}, 0, {0}, NULL, 0};
    const char *named = NULL;
    for (int i = 0; i < argc; i++) {
        if (strcmp(argv[i], "--replace") == 0) run.target.replace = 1;
        else if (strcmp(argv[i], "--dry-run") == 0) run.target.dry_run = 1;
        else if (strcmp(argv[i], "--remove-source") == 0) run.remove_source = 1;
        else if (argv[i][0] == '-' || named) {
            fprintf(stderr, "usage: " PROGRAM " [--app ID] import [--replace] [--dry-run] [--remove-source] [CONFIG]\n");
            return 2;
        } else named = argv[i];
    }
    char path[4096];
    const char *directory = getenv("DOCKER_CONFIG"), *home = getenv("HOME");
    if (named) snprintf(path, sizeof path, "%s", named);
    else if (directory && directory[0]) snprintf(path, sizeof path, "%s/config.json", directory);
    else if (home && home[0] == '/') snprintf(path, sizeof path, "%s/.docker/config.json", home);
    else { fprintf(stderr, PROGRAM ": HOME is not set: name the config file to import\n"); return 2; }

    import_source source;
    char message[512];
    int read = import_source_read(path, &source, message, sizeof message);
    if (read == 1) { fprintf(stderr, PROGRAM ": %s does not exist\n", path); return 1; }
    if (read < 0) { fprintf(stderr, PROGRAM ": %s\n", message); return 1; }
    const guarded_buffer *bytes = &source.bytes;
    json_span *top = malloc(MAX_MEMBERS * sizeof *top), *auths = malloc(MAX_MEMBERS * sizeof *auths);
    guarded_buffer top_names = {0}, auth_names = {0}, rewritten = {0};
    run.edits = calloc(MAX_MEMBERS + 1, sizeof *run.edits);
    int status = 1;
    size_t start = 0, end = 0, auths_end = 0;
    while (start < bytes->length && is_space(bytes->bytes[start])) start++;
    long top_count = top && auths && run.edits && start < bytes->length && bytes->bytes[start] == '{'
        ? object_members(bytes, start, top, &end, &top_names) : -1;
    for (size_t i = end; top_count >= 0 && i < bytes->length; i++) if (!is_space(bytes->bytes[i])) top_count = -1;
    long a = top_count >= 0 ? find(top, top_count, "auths") : -1;
    long auth_count = a < 0 ? 0 : bytes->bytes[top[a].value_start] == '{' ? object_members(bytes, top[a].value_start, auths, &auths_end, &auth_names) : -1;
    /* Every entry an object with unique member names, before anything is imported. */
    json_span *entry_members = malloc(MAX_MEMBERS * sizeof *entry_members);
    guarded_buffer entry_names = {0};
    size_t entry_end;
    for (long i = 0; i < auth_count && auth_count >= 0; i++)
        if (!entry_members || bytes->bytes[auths[i].value_start] != '{'
            || object_members(bytes, auths[i].value_start, entry_members, &entry_end, &entry_names) < 0) auth_count = -1;
    free(entry_members);
    guarded_free(&entry_names);
    if (top_count < 0 || auth_count < 0) {
        fprintf(stderr, PROGRAM ": %s is not a Docker config this import can read exactly (one JSON object, unique member names, auths an object of objects); nothing was changed\n", path);
        goto out;
    }
    switch (helper_open_store(PROGRAM, app, !run.target.dry_run, &run.target.store, message, sizeof message)) {
    case HELPER_OPENED: case HELPER_NO_STORE: break;
    default: fprintf(stderr, "%s\n", message); goto out;
    }
    int failed = 0;
    for (long i = 0; i < auth_count && !failed; i++) failed = import_entry(&run, bytes, &auths[i], path) != 0;
    status = failed || run.counts.conflicts ? 1 : 0;
    if (failed) {
        fprintf(stderr, PROGRAM ": %s: the import stopped; the file is left as it was\n", path);
        run.counts.removed = 0;
    } else if (run.remove_source && !run.target.dry_run && run.counts.removed > 0) {
        /* "credsStore": "keybay", replacing the member's value or after the last member. */
        long c = find(top, top_count, "credsStore");
        edit *e = &run.edits[run.edit_count++];
        if (c >= 0) {
            *e = (edit){top[c].value_start, top[c].value_end, {0}};
            failed = guarded_append(&e->replacement, "\"keybay\"", 8);
        } else {
            size_t last = top[top_count - 1].value_end;
            *e = (edit){last, last, {0}};
            failed = guarded_append(&e->replacement, ",", 1)
                || guarded_append(&e->replacement, bytes->bytes + start + 1, top[0].name_start - start - 1)
                || guarded_append(&e->replacement, "\"credsStore\": \"keybay\"", 22);
        }
        qsort(run.edits, run.edit_count, sizeof *run.edits, by_start);
        size_t check_end;
        if (failed || apply_edits(bytes, run.edits, run.edit_count, &rewritten) != 0
            || import_source_rewrite(&source, rewritten.bytes, rewritten.length, message, sizeof message) != 0) {
            fprintf(stderr, PROGRAM ": %s\n", failed ? "out of memory" : message);
            run.counts.removed = 0;
            status = 1;
        } else if (object_members(&rewritten, start, top, &check_end, &top_names) < 0) {
            fprintf(stderr, PROGRAM ": %s was rewritten but no longer parses\n", path);
            status = 1;
        }
    } else if (run.target.dry_run) {
        /* counted as it would be */
    } else {
        run.counts.removed = 0;
    }
    import_print_counts(path, &run.counts, run.target.dry_run, run.remove_source);
out:
    if (run.target.store) keybay_close(run.target.store);
    for (size_t i = 0; run.edits && i < run.edit_count; i++) guarded_free(&run.edits[i].replacement);
    free(run.edits); free(top); free(auths);
    guarded_free(&top_names); guarded_free(&auth_names); guarded_free(&rewritten);
    import_source_free(&source);
    return status;
}
