// SPDX-License-Identifier: Apache-2.0
/* The private files of first-party root plugins: see include/keybay_root_files.h. */
#define _POSIX_C_SOURCE 200809L /* openat and friends under -std=c11 */

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sodium.h>

#include "keybay_plugin_host.h"
#include "keybay_private_directory.h"
#include "keybay_root_files.h"

#define STAGE_SUFFIX ".stage"

keybay_status keybay_rf_fail(const keybay_host *host, keybay_status status, const char *fmt, ...) {
    va_list args;
    va_start(args, fmt);
    keybay_host_verror(host, fmt, args);
    va_end(args);
    return status;
}

int keybay_rf_buffer_alloc(keybay_buffer *b, size_t length) {
    b->data = sodium_malloc(length ? length : 1);
    b->length = length;
    return b->data != NULL;
}

void keybay_rf_free_buffer(keybay_buffer *b) {
    if (b && b->data) { sodium_free(b->data); b->data = NULL; b->length = 0; }
}

keybay_status keybay_rf_text(const keybay_host *host, const char *text, size_t length, keybay_buffer *text_out) {
    if (!keybay_rf_buffer_alloc(text_out, length)) return keybay_rf_fail(host, KEYBAY_ERR_INTERNAL, "out of memory");
    memcpy(text_out->data, text, length);
    return KEYBAY_OK;
}

#define fail keybay_rf_fail
#define fail_errno keybay_rf_fail_errno

int keybay_rf_path(const keybay_root_context *c, const char *name, char *out, size_t size) {
    int n = snprintf(out, size, "%s/keybay/%s/%s", c->state_home, c->application_id, name);
    return n < 0 || (size_t)n >= size ? -1 : n;
}

keybay_status keybay_rf_open_dir(const keybay_host *host, const keybay_root_context *c, int create, int *fd,
                                 char *path, size_t path_size) {
    const char *const components[2] = { "keybay", c->application_id };
    return keybay_private_open(host, c->state_home, components, 2, create, fd, path, path_size);
}

keybay_status keybay_rf_exists(const keybay_host *host, const keybay_root_context *c, const char *name, int *exists) {
    char dir_path[4096];
    int dir;
    *exists = 0;
    keybay_status s = keybay_rf_open_dir(host, c, 0, &dir, dir_path, sizeof dir_path);
    if (s != KEYBAY_OK || dir < 0) return s;
    struct stat st;
    if (fstatat(dir, name, &st, AT_SYMLINK_NOFOLLOW) == 0) *exists = 1;
    else if (errno != ENOENT) { char p[KEYBAY_ROOT_PATH_BYTES]; snprintf(p, sizeof p, "%s/%s", dir_path, name); s = fail_errno(host, "cannot inspect", p); }
    close(dir);
    return s;
}

keybay_status keybay_rf_read(const keybay_host *host, const keybay_root_context *c, const char *name, const char *what,
                             uint8_t *out, size_t capacity, size_t *length) {
    char dir_path[4096], path[KEYBAY_ROOT_PATH_BYTES];
    int dir;
    *length = 0;
    keybay_status s = keybay_rf_open_dir(host, c, 0, &dir, dir_path, sizeof dir_path);
    if (s != KEYBAY_OK) return s;
    keybay_rf_path(c, name, path, sizeof path); /* for messages: truncation is harmless */
    if (dir < 0) {
        keybay_host_error_detail(host, "root-missing", -1, path);
        return fail(host, KEYBAY_ERR_ROOT_MISSING, "platform key invalidated: %s %s is missing", what, path);
    }
    int fd = openat(dir, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    close(dir);
    if (fd < 0) {
        if (errno == ENOENT) {
            keybay_host_error_detail(host, "root-missing", -1, path);
            return fail(host, KEYBAY_ERR_ROOT_MISSING, "platform key invalidated: %s %s is missing", what, path);
        }
        if (errno == ELOOP) {
            keybay_host_error_detail(host, "symbolic-link", -1, path);
            return fail(host, KEYBAY_ERR_INSECURE, "%s is a symbolic link; refusing to use it", path);
        }
        return fail_errno(host, "cannot open", path);
    }
    s = keybay_private_check(host, fd, path, 0);
    size_t total = 0;
    ssize_t n;
    while (s == KEYBAY_OK && total < capacity && (n = read(fd, out + total, capacity - total)) != 0) {
        if (n < 0) { if (errno == EINTR) continue; s = fail_errno(host, "cannot read", path); break; }
        total += (size_t)n;
    }
    close(fd);
    *length = total;
    return s;
}

static keybay_status write_all_and_sync(int fd, const uint8_t *bytes, size_t length) {
    size_t done = 0;
    while (done < length) {
        ssize_t n = write(fd, bytes + done, length - done);
        if (n < 0) { if (errno == EINTR) continue; return KEYBAY_ERR_IO; }
        done += (size_t)n;
    }
    return fsync(fd) == 0 ? KEYBAY_OK : KEYBAY_ERR_IO;
}

/* Removes a staging entry left by an interrupted write: a file, or an empty directory of that
   name (which Keybay never makes); anything else is named for the user to remove by hand. */
static keybay_status remove_staging(const keybay_host *host, int dir, const char *stage_name, const char *staging) {
    if (unlinkat(dir, stage_name, 0) == 0 || errno == ENOENT) return KEYBAY_OK;
    if (errno == EISDIR && unlinkat(dir, stage_name, AT_REMOVEDIR) == 0) return KEYBAY_OK;
    if (errno == ENOTEMPTY || errno == EEXIST) {
        keybay_host_error_detail(host, "stage-not-empty", -1, staging);
        return fail(host, KEYBAY_ERR_IO, "%s is a directory that is not empty (Keybay never makes one there); remove it by hand", staging);
    }
    return fail_errno(host, "cannot remove", staging);
}

/* Stages `bytes` as <name>.stage (0600, fsynced), then links (create-only) or renames it to
   <name> and fsyncs the directory. */
static keybay_status write_file(const keybay_host *host, const keybay_root_context *c, const char *name,
                                const uint8_t *bytes, size_t length, int create_only) {
    char dir_path[4096], path[KEYBAY_ROOT_PATH_BYTES], staging[KEYBAY_ROOT_PATH_BYTES], stage_name[256];
    if (snprintf(stage_name, sizeof stage_name, "%s" STAGE_SUFFIX, name) >= (int)sizeof stage_name)
        return fail(host, KEYBAY_ERR_INTERNAL, "file name too long: %s", name);
    int dir;
    keybay_status s = keybay_rf_open_dir(host, c, create_only, &dir, dir_path, sizeof dir_path);
    if (s != KEYBAY_OK) return s;
    snprintf(path, sizeof path, "%s/%s", dir_path, name);
    if (dir < 0) return fail(host, KEYBAY_ERR_ROOT_MISSING, "platform key invalidated: %s is missing", path);
    snprintf(staging, sizeof staging, "%s/%s", dir_path, stage_name);
    s = remove_staging(host, dir, stage_name, staging);
    int fd = -1;
    if (s == KEYBAY_OK) {
        fd = openat(dir, stage_name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (fd < 0) {
            s = fail_errno(host, "cannot create", staging);
        } else if (fchmod(fd, 0600) != 0) { /* exactly 0600 whatever the umask */
            s = fail_errno(host, "cannot set the mode of", staging);
            close(fd);
            unlinkat(dir, stage_name, 0);
        }
    }
    if (s == KEYBAY_OK) {
        s = write_all_and_sync(fd, bytes, length);
        if (close(fd) != 0 && s == KEYBAY_OK) s = KEYBAY_ERR_IO;
        if (s != KEYBAY_OK) s = fail_errno(host, "cannot write", staging);
        else if (create_only && linkat(dir, stage_name, dir, name, 0) != 0)
            s = errno == EEXIST ? fail(host, KEYBAY_ERR_ROOT_EXISTS, "%s already exists; refusing to overwrite it", path)
                                : fail_errno(host, "cannot create", path);
        else if (!create_only && renameat(dir, stage_name, dir, name) != 0)
            s = fail_errno(host, "cannot replace", path);
        unlinkat(dir, stage_name, 0);
        if (s == KEYBAY_OK && fsync(dir) != 0) s = fail_errno(host, "cannot fsync directory", dir_path);
    }
    close(dir);
    return s;
}

keybay_status keybay_rf_create(const keybay_host *host, const keybay_root_context *c, const char *name,
                               const uint8_t *bytes, size_t length) {
    return write_file(host, c, name, bytes, length, 1);
}

keybay_status keybay_rf_replace(const keybay_host *host, const keybay_root_context *c, const char *name,
                                const uint8_t *bytes, size_t length) {
    return write_file(host, c, name, bytes, length, 0);
}

keybay_status keybay_rf_remove(const keybay_host *host, const keybay_root_context *c, const char *name) {
    char dir_path[4096], path[KEYBAY_ROOT_PATH_BYTES], staging[KEYBAY_ROOT_PATH_BYTES], stage_name[256];
    if (snprintf(stage_name, sizeof stage_name, "%s" STAGE_SUFFIX, name) >= (int)sizeof stage_name)
        return fail(host, KEYBAY_ERR_INTERNAL, "file name too long: %s", name);
    int dir;
    keybay_status s = keybay_rf_open_dir(host, c, 0, &dir, dir_path, sizeof dir_path);
    if (s != KEYBAY_OK || dir < 0) return s;
    snprintf(path, sizeof path, "%s/%s", dir_path, name);
    snprintf(staging, sizeof staging, "%s/%s", dir_path, stage_name);
    s = remove_staging(host, dir, stage_name, staging);
    if (s == KEYBAY_OK && unlinkat(dir, name, 0) != 0 && errno != ENOENT) s = fail_errno(host, "cannot remove", path);
    if (s == KEYBAY_OK && fsync(dir) != 0) s = fail_errno(host, "cannot fsync directory", dir_path);
    close(dir);
    return s;
}
