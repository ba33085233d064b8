/*
 * SPDX-License-Identifier: Apache-2.0
 * The files the helpers' `import` reads credentials from (git's store files, Docker's
 * config.json), and their rewrite for --remove-source: atomic (a temporary beside the file,
 * written, fsynced, renamed over it, the directory fsynced, read back), with the file's mode and
 * owner, and only when the file is still the one that was read. A temporary an import killed
 * before its rename left beside the file is removed by the next rewrite.
 */
#ifndef KEYBAY_IMPORT_SOURCE_H
#define KEYBAY_IMPORT_SOURCE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include "helper_io.h"

#define IMPORT_SOURCE_LIMIT (16 * 1024 * 1024)

typedef struct {
    const char *path;
    guarded_buffer bytes; /* the contents, in guarded memory: they hold passwords */
    struct stat status;   /* at the time of reading */
} import_source;

/* Reads `path` whole: 0; 1 when it does not exist; -1 with `message` (one line, no secret). */
int import_source_read(const char *path, import_source *source, char *message, size_t capacity);

/* Replaces the file with bytes[0..length): 0, or -1 with `message`; the file is then as it was
 * (or, if only the final directory sync or read-back failed, says so). A file that changed
 * since it was read (device, inode, size, modification time) is refused and left alone. */
int import_source_rewrite(const import_source *source, const uint8_t *bytes, size_t length, char *message, size_t capacity);

void import_source_free(import_source *source);

/* What an import did to one source, and its line on standard output. */
typedef struct {
    unsigned imported, unchanged, replaced, conflicts, malformed, removed;
} import_counts;

/* "<path>: imported N, unchanged N, replaced N, conflicts N, malformed N[, removed N]" (or
 * "would import" for a dry run). */
void import_print_counts(const char *path, const import_counts *counts, int dry_run, int remove_source);

#endif
