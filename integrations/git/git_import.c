/*
 * SPDX-License-Identifier: Apache-2.0
 * `git-credential-keybay import [--replace] [--dry-run] [--remove-source] [FILE...]`
 * (docs/integrations.md, "Migrating"). Each line of git's store file (one URL per credential,
 * `protocol://user:password@host[:port][/path]`, %-encoded) is stored as `store` would store it,
 * then read back. A line whose credential is readable from the store is the only kind
 * --remove-source takes out of the file; malformed lines are named by number, never shown.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sodium.h>
#include <keybay/keybay.h>

#include "git_import.h"
#include "git_record.h"
#include "helper_io.h"
#include "helper_store.h"
#include "import_source.h"
#include "import_store.h"

#define PROGRAM "git-credential-keybay"

typedef struct {
    import_target target;
    int remove_source;
    int failed; /* a store call failed: nothing more is read, nothing removed */
} import_run;

static const uint8_t same_tags[] = {PASSWORD};

/* One store file: 0, 1 (conflicts or a failure), with its counts printed. */
static int import_file(import_run *run, const char *path, int named) {
    import_source source;
    char message[512];
    int read = import_source_read(path, &source, message, sizeof message);
    if (read == 1) {
        if (!named) return 0; /* a default file that is not there */
        fprintf(stderr, PROGRAM ": %s does not exist\n", path);
        return 1;
    }
    if (read < 0) { fprintf(stderr, PROGRAM ": %s\n", message); return 1; }
    import_counts counts = {0};
    guarded_buffer kept = {0}, scratch = {0};
    int status = 0;
    size_t at = 0, number = 0;
    const guarded_buffer *in = &source.bytes;
    while (at < in->length && !run->failed) {
        uint8_t *line = in->bytes + at;
        uint8_t *newline = memchr(line, '\n', in->length - at);
        size_t length = newline ? (size_t)(newline - line) : in->length - at, whole = length + (newline ? 1 : 0);
        at += whole;
        number++;
        enum { LINE_KEPT, LINE_IN_STORE } outcome = LINE_KEPT;
        if (length > 0) {
            scratch.length = 0;
            integration_record query;
            memset(&query, 0, sizeof query);
            query.kind = RECORD_KIND_GIT;
            /* parse_url decodes in place: it works on a copy, the line is kept as it was. The URL's
             * path is kept as written: git's store wrote one only under credential.useHttpPath. */
            if (guarded_append(&scratch, line, length) != 0) { run->failed = 1; break; }
            if (parse_url(scratch.bytes, length, &query, 1) != 0 || !git_record_is_complete(&query)) {
                counts.malformed++;
                fprintf(stderr, PROGRAM ": %s:%zu: not a credential URL (protocol://user:password@host); skipped\n", path, number);
            } else {
                char key[RECORD_KEY_CAPACITY + 1];
                git_record_key(&query, key, sizeof key);
                import_outcome imported = import_record(&run->target, key, &query, OAUTH_REFRESH_TOKEN, same_tags, sizeof same_tags, &counts);
                if (imported == IMPORT_FAILED) run->failed = 1;
                if (imported == IMPORT_CONFLICT)
                    fprintf(stderr, PROGRAM ": %s:%zu: conflict: another password for %.*s://%.*s is stored; kept (--replace replaces it)\n",
                            path, number, (int)query.fields[PROTOCOL].length, (const char *)query.fields[PROTOCOL].bytes,
                            (int)query.fields[HOST].length, (const char *)query.fields[HOST].bytes);
                outcome = imported == IMPORT_IN_STORE ? LINE_IN_STORE : LINE_KEPT;
            }
        }
        if (outcome == LINE_IN_STORE && run->remove_source) counts.removed++;
        else if (guarded_append(&kept, line, whole) != 0) run->failed = 1;
    }
    if (run->failed) {
        status = 1;
        fprintf(stderr, PROGRAM ": %s: stopped at line %zu; the file is left as it was\n", path, number);
    } else if (run->remove_source && !run->target.dry_run && counts.removed > 0
               && import_source_rewrite(&source, kept.bytes, kept.length, message, sizeof message) != 0) {
        fprintf(stderr, PROGRAM ": %s\n", message);
        counts.removed = 0;
        status = 1;
    }
    import_print_counts(path, &counts, run->target.dry_run, run->remove_source);
    if (counts.conflicts) status = 1;
    guarded_free(&kept);
    guarded_free(&scratch);
    import_source_free(&source);
    return status;
}

int git_import(const char *app, int argc, char **argv) {
    import_run run = {{PROGRAM, NULL, 0, 0}, 0, 0};
    const char *files[64];
    int count = 0;
    for (int i = 0; i < argc; i++) {
        if (strcmp(argv[i], "--replace") == 0) run.target.replace = 1;
        else if (strcmp(argv[i], "--dry-run") == 0) run.target.dry_run = 1;
        else if (strcmp(argv[i], "--remove-source") == 0) run.remove_source = 1;
        else if (argv[i][0] == '-' || count == 64) {
            fprintf(stderr, "usage: " PROGRAM " [--app ID] import [--replace] [--dry-run] [--remove-source] [FILE...]\n");
            return 2;
        } else files[count++] = argv[i];
    }
    char home_file[4096], config_file[4096];
    if (count == 0) {
        const char *home = getenv("HOME"), *config = getenv("XDG_CONFIG_HOME");
        if (!home || home[0] != '/') { fprintf(stderr, PROGRAM ": HOME is not set: name the files to import\n"); return 2; }
        snprintf(home_file, sizeof home_file, "%s/.git-credentials", home);
        if (config && config[0] == '/') snprintf(config_file, sizeof config_file, "%s/git/credentials", config);
        else snprintf(config_file, sizeof config_file, "%s/.config/git/credentials", home);
    }
    char message[512];
    switch (helper_open_store(PROGRAM, app, !run.target.dry_run, &run.target.store, message, sizeof message)) {
    case HELPER_OPENED: break;
    case HELPER_NO_STORE: break; /* a dry run: everything would be imported */
    default: fprintf(stderr, "%s\n", message); return 1;
    }
    int status = 0;
    if (count == 0) {
        status |= import_file(&run, home_file, 0);
        if (!run.failed) status |= import_file(&run, config_file, 0);
    } else {
        for (int i = 0; i < count && !run.failed; i++) status |= import_file(&run, files[i], 1);
    }
    if (run.target.store) keybay_close(run.target.store);
    return status ? 1 : 0;
}
