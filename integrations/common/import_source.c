/*
 * SPDX-License-Identifier: Apache-2.0
 * Reading and atomically rewriting an import's source file (import_source.h).
 */
#define _GNU_SOURCE /* mkostemp */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sodium.h>

#include "import_source.h"

int import_source_read(const char *path, import_source *source, char *message, size_t capacity) {
    memset(source, 0, sizeof *source);
    source->path = path;
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0 && errno == ENOENT) return 1;
    if (fd < 0) { snprintf(message, capacity, "cannot open %s: %s", path, strerror(errno)); return -1; }
    int failed = fstat(fd, &source->status) != 0 || !S_ISREG(source->status.st_mode);
    int read = failed ? -1 : guarded_read_all(fd, IMPORT_SOURCE_LIMIT, &source->bytes);
    close(fd);
    if (failed) { snprintf(message, capacity, "%s is not a regular file", path); return -1; }
    if (read != 0) {
        snprintf(message, capacity, read == -2 ? "%s is larger than 16 MiB" : "cannot read %s", path);
        import_source_free(source);
        return -1;
    }
    return 0;
}

static int same_file(const struct stat *a, const struct stat *b) {
    return a->st_dev == b->st_dev && a->st_ino == b->st_ino && a->st_size == b->st_size
        && a->st_mtim.tv_sec == b->st_mtim.tv_sec && a->st_mtim.tv_nsec == b->st_mtim.tv_nsec;
}

/* The file's bytes equal bytes[0..length). */
static int reads_back(const char *path, const uint8_t *bytes, size_t length) {
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0) return 0;
    guarded_buffer back = {0};
    int ok = guarded_read_all(fd, IMPORT_SOURCE_LIMIT, &back) == 0 && back.length == length
        && (length == 0 || memcmp(back.bytes, bytes, length) == 0);
    close(fd);
    guarded_free(&back);
    return ok;
}

/* Temporaries an import killed before its rename left beside the file (".NAME.keybay-import-"
 * and mkostemp's six characters): removed before a new one is made. One that another import is
 * writing at this moment goes too; that import's rename then fails and it leaves the file alone. */
static void remove_stale_temporaries(const char *directory, const char *name) {
    char prefix[512];
    if (snprintf(prefix, sizeof prefix, ".%s.keybay-import-", name) >= (int)sizeof prefix) return;
    int dfd = open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    DIR *dir = dfd >= 0 ? fdopendir(dfd) : NULL;
    if (!dir) { if (dfd >= 0) close(dfd); return; }
    size_t prefix_length = strlen(prefix);
    for (struct dirent *entry; (entry = readdir(dir)) != NULL;)
        if (strncmp(entry->d_name, prefix, prefix_length) == 0 && strlen(entry->d_name) == prefix_length + 6)
            (void)unlinkat(dfd, entry->d_name, 0);
    closedir(dir);
}

int import_source_rewrite(const import_source *source, const uint8_t *bytes, size_t length, char *message, size_t capacity) {
    const char *path = source->path;
    char directory[4096], temporary[4096];
    if (snprintf(directory, sizeof directory, "%s", path) >= (int)sizeof directory) { snprintf(message, capacity, "%s: path too long", path); return -1; }
    char *dir = dirname(directory);
    const char *slash = strrchr(path, '/');
    if (snprintf(temporary, sizeof temporary, "%s/.%s.keybay-import-XXXXXX", dir, slash ? slash + 1 : path) >= (int)sizeof temporary) {
        snprintf(message, capacity, "%s: path too long", path);
        return -1;
    }
    remove_stale_temporaries(dir, slash ? slash + 1 : path);
    int fd = mkostemp(temporary, O_CLOEXEC);
    if (fd < 0) { snprintf(message, capacity, "cannot create a file beside %s: %s", path, strerror(errno)); return -1; }
    /* The file's own mode, and its owner where we may set it. */
    int failed = fchmod(fd, source->status.st_mode & 07777) != 0
        || (fchown(fd, source->status.st_uid, source->status.st_gid) != 0 && errno != EPERM)
        || write_all(fd, bytes, length) != 0 || fsync(fd) != 0;
    int saved = errno;
    if (close(fd) != 0 && !failed) { failed = 1; saved = errno; }
    struct stat now;
    if (!failed && (lstat(path, &now) != 0 || !same_file(&now, &source->status))) {
        unlink(temporary);
        snprintf(message, capacity, "%s changed while it was imported; it is left as it was (run the import again)", path);
        return -1;
    }
    if (failed || rename(temporary, path) != 0) {
        if (!failed) saved = errno;
        unlink(temporary);
        snprintf(message, capacity, "cannot rewrite %s: %s; it is left as it was", path, strerror(saved));
        return -1;
    }
    int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    int synced = dfd >= 0 && fsync(dfd) == 0;
    saved = errno;
    if (dfd >= 0) close(dfd);
    if (!synced) {
        snprintf(message, capacity, "%s was rewritten but its directory could not be synced: %s", path, strerror(saved));
        return -1;
    }
    if (!reads_back(path, bytes, length)) {
        snprintf(message, capacity, "%s was rewritten but does not read back as written", path);
        return -1;
    }
    return 0;
}

void import_source_free(import_source *source) {
    guarded_free(&source->bytes);
}

void import_print_counts(const char *path, const import_counts *c, int dry_run, int remove_source) {
    printf("%s: %s %u, unchanged %u, replaced %u, conflicts %u, malformed %u", path, dry_run ? "would import" : "imported",
           c->imported, c->unchanged, c->replaced, c->conflicts, c->malformed);
    if (remove_source) printf(", %s %u", dry_run ? "would remove" : "removed", c->removed);
    printf("\n");
    fflush(stdout);
}
