/*
 * file-root — the TPM-less platform root, as a Keybay root plugin (libkeybay-file-root.so).
 *
 * 32 random bytes in a private file, <state_home>/keybay/<app>/file-root.key, kept apart from
 * the store so that a copy of the data directory alone opens nothing. Any process of the same
 * user can read it: it protects against copied files, backups and other users, not against
 * same-user malware.
 *
 * Root file, version 1 (38 bytes, as created):  "KBFR" | version:u16 BE (= 1) | root(32)
 * Root file, version 2 (46 bytes, once a floor is recorded): "KBFR" | 2:u16 BE | root(32) | floor:u64 BE
 * Provider state (32 B):  SHA-256("keybay:v2:s1:provider-state:file-root" | 0x00 | storageDomain | root)
 * Sealed package:         nonce(24) | XChaCha20-Poly1305(root, plaintext, aad)
 *
 * The rollback floor lives in the root file because open reads that file anyway: checking it
 * costs no extra read. A version-1 file has floor 0.
 *
 * Directories below state_home ("keybay", the app) are 0700, the file 0600, all owned by the
 * effective user and opened without following links; anything else is refused, never repaired.
 */
#define _POSIX_C_SOURCE 200809L /* openat and friends under -std=c11 */

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sodium.h>

#include "keybay_plugin.h"
#include "keybay_plugin_host.h"

#define ROOT_BYTES 32
#define ROOT_FILE_BYTES 38
#define ROOT_FILE_V2_BYTES 46
#define STATE_BYTES 32
#define FILE_NAME "file-root.key"
#define STAGING_NAME "file-root.key.stage"
static const char provider_state_label[] = "keybay:v2:s1:provider-state:file-root";

/* ---- errors ---- */

static keybay_status fail(const keybay_host *host, keybay_status status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static keybay_status fail(const keybay_host *host, keybay_status status, const char *fmt, ...) {
    va_list args;
    va_start(args, fmt);
    keybay_host_verror(host, fmt, args);
    va_end(args);
    return status;
}

static keybay_status fail_errno(const keybay_host *host, const char *what, const char *path) {
    int code = errno;
    keybay_status s = (code == EACCES || code == EPERM) ? KEYBAY_ERR_INSECURE : KEYBAY_ERR_IO;
    return fail(host, s, "%s %s: %s", what, path, strerror(code));
}

/* ---- private directories ---- */

static keybay_status check_private(const keybay_host *host, int fd, const char *path, int directory) {
    struct stat st;
    if (fstat(fd, &st) != 0) return fail_errno(host, "cannot inspect", path);
    if (directory ? !S_ISDIR(st.st_mode) : !S_ISREG(st.st_mode))
        return fail(host, KEYBAY_ERR_INSECURE, "%s is not a %s; refusing to use it", path, directory ? "directory" : "regular file");
    if (st.st_uid != geteuid())
        return fail(host, KEYBAY_ERR_INSECURE, "%s is owned by another user; refusing to use it", path);
    if (st.st_mode & 077) {
        return fail(host, KEYBAY_ERR_INSECURE, "%s is open to group or others; refusing to use it (expected %s)", path, directory ? "0700" : "0600");
    }
    return KEYBAY_OK;
}

/* mkdir -p for the XDG base directory itself (new levels get 0700). */
static keybay_status make_base(const keybay_host *host, const char *base) {
    struct stat st;
    if (stat(base, &st) == 0) return KEYBAY_OK;
    char prefix[4096];
    size_t n = strlen(base);
    if (n >= sizeof prefix) return fail(host, KEYBAY_ERR_IO, "path too long: %s", base);
    for (size_t i = 1; i <= n; i++) {
        if (i == n || base[i] == '/') {
            memcpy(prefix, base, i);
            prefix[i] = 0;
            if (mkdir(prefix, 0700) == 0) {
                /* The umask may have taken bits away: a new level is exactly 0700. */
                if (chmod(prefix, 0700) != 0) return fail_errno(host, "cannot set the mode of", prefix);
            } else if (errno != EEXIST) {
                return fail_errno(host, "cannot create directory", prefix);
            }
        }
    }
    return KEYBAY_OK;
}

/* Opens <state_home>/keybay/<app>; *fd = -1 (and OK) when missing and !create. */
static keybay_status open_root_dir(const keybay_host *host, const keybay_root_context *c, int create, int *fd, char *path, size_t path_size) {
    *fd = -1;
    if (create) {
        keybay_status s = make_base(host, c->state_home);
        if (s != KEYBAY_OK) return s;
    }
    int current = open(c->state_home, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (current < 0) {
        if (errno == ENOENT && !create) return KEYBAY_OK;
        return fail_errno(host, "cannot open directory", c->state_home);
    }
    const char *components[2] = { "keybay", c->application_id };
    snprintf(path, path_size, "%s", c->state_home);
    for (int i = 0; i < 2; i++) {
        size_t used = strlen(path);
        snprintf(path + used, path_size - used, "/%s", components[i]);
        int next = openat(current, components[i], O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (next < 0 && errno == ENOENT && create) {
            if (mkdirat(current, components[i], 0700) == 0) {
                /* Exactly 0700 whatever the umask (the parent is ours: nothing can swap the entry). */
                if (fchmodat(current, components[i], 0700, 0) != 0) {
                    keybay_status s = fail_errno(host, "cannot set the mode of", path);
                    close(current);
                    return s;
                }
            } else if (errno != EEXIST) {
                keybay_status s = fail_errno(host, "cannot create directory", path);
                close(current);
                return s;
            }
            next = openat(current, components[i], O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        }
        int open_errno = errno;
        close(current);
        if (next < 0) {
            if (open_errno == ENOENT && !create) return KEYBAY_OK;
            if (open_errno == ELOOP || open_errno == ENOTDIR)
                return fail(host, KEYBAY_ERR_INSECURE, "%s is a symbolic link or not a directory; refusing to use it", path);
            errno = open_errno;
            return fail_errno(host, "cannot open directory", path);
        }
        keybay_status s = check_private(host, next, path, 1);
        if (s != KEYBAY_OK) { close(next); return s; }
        current = next;
    }
    *fd = current;
    return KEYBAY_OK;
}

/* Removes a staging entry left by an interrupted create: a file, or an empty directory of that
   name (which Keybay never makes); anything else is named for the user to remove by hand. */
static keybay_status remove_staging(const keybay_host *host, int dir, const char *staging) {
    if (unlinkat(dir, STAGING_NAME, 0) == 0 || errno == ENOENT) return KEYBAY_OK;
    if (errno == EISDIR && unlinkat(dir, STAGING_NAME, AT_REMOVEDIR) == 0) return KEYBAY_OK;
    if (errno == ENOTEMPTY || errno == EEXIST)
        return fail(host, KEYBAY_ERR_IO, "%s is a directory that is not empty (Keybay never makes one there); remove it by hand", staging);
    return fail_errno(host, "cannot remove", staging);
}

static void file_path(const char *dir_path, char *out, size_t size) {
    snprintf(out, size, "%s/%s", dir_path, FILE_NAME);
}

/* <state_home>/keybay/<app>/file-root.key; its length, or -1 if it does not fit in `size`
   (`out` then holds a truncated path, still good for a message). */
static int root_file_path(const keybay_root_context *c, char *out, size_t size) {
    int n = snprintf(out, size, "%s/keybay/%s/%s", c->state_home, c->application_id, FILE_NAME);
    return n < 0 || (size_t)n >= size ? -1 : n;
}

/* ---- the root ---- */

static void provider_state(const uint8_t *root, const uint8_t *domain, uint8_t out[STATE_BYTES]) {
    crypto_hash_sha256_state h;
    const uint8_t zero = 0;
    crypto_hash_sha256_init(&h);
    crypto_hash_sha256_update(&h, (const uint8_t *)provider_state_label, sizeof provider_state_label - 1);
    crypto_hash_sha256_update(&h, &zero, 1);
    crypto_hash_sha256_update(&h, domain, 32);
    crypto_hash_sha256_update(&h, root, ROOT_BYTES);
    crypto_hash_sha256_final(&h, out);
    sodium_memzero(&h, sizeof h);
}

/* Reads the root into guarded memory and checks it against `state`; `*floor_out` gets the
   rollback floor (0 in a version-1 file). */
static keybay_status load_matching_root(const keybay_host *host, const keybay_root_context *c,
                                        const uint8_t *state, size_t state_length, uint8_t **root_out,
                                        uint64_t *floor_out) {
    char dir_path[4096], path[4200];
    int dir;
    keybay_status s = open_root_dir(host, c, 0, &dir, dir_path, sizeof dir_path);
    if (s != KEYBAY_OK) return s;
    root_file_path(c, path, sizeof path); /* for messages: truncation is harmless */
    if (dir < 0) return fail(host, KEYBAY_ERR_ROOT_MISSING, "platform key invalidated: the root file %s is missing", path);
    int fd = openat(dir, FILE_NAME, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    close(dir);
    if (fd < 0) {
        if (errno == ENOENT) return fail(host, KEYBAY_ERR_ROOT_MISSING, "platform key invalidated: the root file %s is missing", path);
        if (errno == ELOOP) return fail(host, KEYBAY_ERR_INSECURE, "%s is a symbolic link; refusing to use it", path);
        return fail_errno(host, "cannot open", path);
    }
    s = check_private(host, fd, path, 0);
    if (s != KEYBAY_OK) { close(fd); return s; }
    uint8_t *file = sodium_malloc(ROOT_FILE_V2_BYTES + 1);
    if (!file) { close(fd); return fail(host, KEYBAY_ERR_INTERNAL, "out of memory reading %s", path); }
    ssize_t total = 0, n;
    while (total < ROOT_FILE_V2_BYTES + 1 && (n = read(fd, file + total, ROOT_FILE_V2_BYTES + 1 - total)) != 0) {
        if (n < 0) { if (errno == EINTR) continue; s = fail_errno(host, "cannot read", path); break; }
        total += n;
    }
    close(fd);
    int version1 = total == ROOT_FILE_BYTES && file[5] == 1, version2 = total == ROOT_FILE_V2_BYTES && file[5] == 2;
    if (s == KEYBAY_OK && ((!version1 && !version2) || memcmp(file, "KBFR", 4) != 0 || file[4] != 0))
        s = fail(host, KEYBAY_ERR_ROOT_MISMATCH, "platform key invalidated: the root file %s is not a version-1 or version-2 file-root key", path);
    if (s == KEYBAY_OK) {
        uint8_t expected[STATE_BYTES];
        provider_state(file + 6, c->storage_domain, expected);
        if (state_length != STATE_BYTES || sodium_memcmp(expected, state, STATE_BYTES) != 0)
            s = fail(host, KEYBAY_ERR_ROOT_MISMATCH, "platform key invalidated: the root file %s does not belong to this store", path);
    }
    if (s != KEYBAY_OK) { sodium_free(file); return s; }
    uint64_t floor = 0;
    if (version2)
        for (int i = 0; i < 8; i++) floor = floor << 8 | file[6 + ROOT_BYTES + i];
    memmove(file, file + 6, ROOT_BYTES);
    sodium_memzero(file + ROOT_BYTES, ROOT_FILE_V2_BYTES + 1 - ROOT_BYTES);
    *root_out = file;
    *floor_out = floor;
    return KEYBAY_OK;
}

/* All buffers come from sodium_malloc, so free_buffer wipes them whatever they hold. */
static int buffer_alloc(keybay_buffer *b, size_t length) {
    b->data = sodium_malloc(length ? length : 1);
    b->length = length;
    return b->data != NULL;
}

static void free_buffer(keybay_buffer *b) {
    if (b && b->data) { sodium_free(b->data); b->data = NULL; b->length = 0; }
}

static keybay_status root_exists(const keybay_host *host, const keybay_root_context *c, int *exists) {
    char dir_path[4096];
    int dir;
    *exists = 0;
    keybay_status s = open_root_dir(host, c, 0, &dir, dir_path, sizeof dir_path);
    if (s != KEYBAY_OK || dir < 0) return s;
    struct stat st;
    if (fstatat(dir, FILE_NAME, &st, AT_SYMLINK_NOFOLLOW) == 0) *exists = 1;
    else if (errno != ENOENT) { char p[4200]; file_path(dir_path, p, sizeof p); s = fail_errno(host, "cannot inspect", p); }
    close(dir);
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

static keybay_status root_create(const keybay_host *host, const keybay_root_context *c, keybay_buffer *state_out) {
    char dir_path[4096], path[4200];
    int dir;
    keybay_status s = open_root_dir(host, c, 1, &dir, dir_path, sizeof dir_path);
    if (s != KEYBAY_OK) return s;
    file_path(dir_path, path, sizeof path);
    uint8_t *file = sodium_malloc(ROOT_FILE_BYTES);
    if (!file || !buffer_alloc(state_out, STATE_BYTES)) {
        if (file) sodium_free(file);
        close(dir);
        return fail(host, KEYBAY_ERR_INTERNAL, "out of memory creating %s", path);
    }
    memcpy(file, "KBFR\0\1", 6);
    randombytes_buf(file + 6, ROOT_BYTES);
    /* Create-only: write a staging file, then link(2) it to the final name, which fails if the
       name exists; the root appears complete or not at all and is never overwritten. */
    char staging[4200];
    snprintf(staging, sizeof staging, "%s/%s", dir_path, STAGING_NAME);
    s = remove_staging(host, dir, staging);
    int fd = -1;
    if (s == KEYBAY_OK) {
        fd = openat(dir, STAGING_NAME, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (fd < 0) {
            s = fail_errno(host, "cannot create", staging);
        } else if (fchmod(fd, 0600) != 0) { /* exactly 0600 whatever the umask */
            s = fail_errno(host, "cannot set the mode of", staging);
            close(fd);
            unlinkat(dir, STAGING_NAME, 0);
        }
    }
    if (s == KEYBAY_OK) {
        s = write_all_and_sync(fd, file, ROOT_FILE_BYTES);
        if (close(fd) != 0 && s == KEYBAY_OK) s = KEYBAY_ERR_IO;
        if (s != KEYBAY_OK) s = fail_errno(host, "cannot write", path);
        else if (linkat(dir, STAGING_NAME, dir, FILE_NAME, 0) != 0) {
            s = errno == EEXIST ? fail(host, KEYBAY_ERR_ROOT_EXISTS, "%s already exists; refusing to overwrite it", path)
                                : fail_errno(host, "cannot create", path);
        }
        unlinkat(dir, STAGING_NAME, 0);
        if (s == KEYBAY_OK && fsync(dir) != 0) s = fail_errno(host, "cannot fsync directory", dir_path);
    }
    if (s == KEYBAY_OK) provider_state(file + 6, c->storage_domain, state_out->data);
    else free_buffer(state_out);
    sodium_free(file);
    close(dir);
    return s;
}

static keybay_status root_seal(const keybay_host *host, const keybay_root_context *c,
                               const uint8_t *state, size_t state_length,
                               const uint8_t *plaintext, size_t plaintext_length,
                               const uint8_t *aad, size_t aad_length, keybay_buffer *sealed_out) {
    uint8_t *root;
    uint64_t floor;
    keybay_status s = load_matching_root(host, c, state, state_length, &root, &floor);
    if (s != KEYBAY_OK) return s;
    /* The core never seals an empty package and refuses an empty one from root_open. */
    if (plaintext_length == 0) {
        sodium_free(root);
        return fail(host, KEYBAY_ERR_INTERNAL, "refusing to seal an empty key package");
    }
    size_t length = crypto_aead_xchacha20poly1305_ietf_NPUBBYTES + plaintext_length + crypto_aead_xchacha20poly1305_ietf_ABYTES;
    if (!buffer_alloc(sealed_out, length)) { sodium_free(root); return KEYBAY_ERR_INTERNAL; }
    uint8_t *nonce = sealed_out->data;
    randombytes_buf(nonce, crypto_aead_xchacha20poly1305_ietf_NPUBBYTES);
    unsigned long long written = 0;
    crypto_aead_xchacha20poly1305_ietf_encrypt(nonce + crypto_aead_xchacha20poly1305_ietf_NPUBBYTES, &written,
                                               plaintext, plaintext_length, aad, aad_length, NULL, nonce, root);
    sodium_free(root);
    return KEYBAY_OK;
}

static keybay_status root_open_with_floor(const keybay_host *host, const keybay_root_context *c,
                                          const uint8_t *state, size_t state_length,
                                          const uint8_t *sealed, size_t sealed_length,
                                          const uint8_t *aad, size_t aad_length, keybay_buffer *plaintext_out,
                                          uint64_t *floor_out) {
    const size_t overhead = crypto_aead_xchacha20poly1305_ietf_NPUBBYTES + crypto_aead_xchacha20poly1305_ietf_ABYTES;
    uint8_t *root;
    keybay_status s = load_matching_root(host, c, state, state_length, &root, floor_out);
    if (s != KEYBAY_OK) return s;
    char path[4200];
    root_file_path(c, path, sizeof path); /* for messages: truncation is harmless */
    if (sealed_length <= overhead) {
        sodium_free(root);
        return fail(host, KEYBAY_ERR_INTEGRITY, "the sealed key package is too short for the platform root %s", path);
    }
    if (!buffer_alloc(plaintext_out, sealed_length - overhead)) {
        sodium_free(root);
        return fail(host, KEYBAY_ERR_INTERNAL, "out of memory opening the key package with %s", path);
    }
    unsigned long long written = 0;
    int rc = crypto_aead_xchacha20poly1305_ietf_decrypt(plaintext_out->data, &written, NULL,
                                                        sealed + crypto_aead_xchacha20poly1305_ietf_NPUBBYTES,
                                                        sealed_length - crypto_aead_xchacha20poly1305_ietf_NPUBBYTES,
                                                        aad, aad_length, sealed, root);
    sodium_free(root);
    if (rc != 0) {
        free_buffer(plaintext_out);
        return fail(host, KEYBAY_ERR_INTEGRITY, "the store's key package failed authentication with the platform root %s (the store file was modified)", path);
    }
    return KEYBAY_OK;
}

static keybay_status root_open(const keybay_host *host, const keybay_root_context *c,
                               const uint8_t *state, size_t state_length,
                               const uint8_t *sealed, size_t sealed_length,
                               const uint8_t *aad, size_t aad_length, keybay_buffer *plaintext_out) {
    uint64_t floor;
    return root_open_with_floor(host, c, state, state_length, sealed, sealed_length, aad, aad_length, plaintext_out, &floor);
}

/* Rewrites the root file as version 2 with the new floor and the same root: staged, fsynced,
   renamed over the old file, directory fsynced (the old file or the new one, never a torn one).
   The host holds the store's exclusive lock, so no other writer races it. */
static keybay_status root_raise_floor(const keybay_host *host, const keybay_root_context *c,
                                      const uint8_t *state, size_t state_length, uint64_t epoch) {
    uint8_t *root;
    uint64_t floor;
    keybay_status s = load_matching_root(host, c, state, state_length, &root, &floor);
    if (s != KEYBAY_OK || epoch <= floor) {
        if (s == KEYBAY_OK) sodium_free(root);
        return s;
    }
    char dir_path[4096], path[4200], staging[4200];
    int dir;
    s = open_root_dir(host, c, 0, &dir, dir_path, sizeof dir_path);
    if (s == KEYBAY_OK && dir < 0) {
        root_file_path(c, path, sizeof path);
        s = fail(host, KEYBAY_ERR_ROOT_MISSING, "platform key invalidated: the root file %s is missing", path);
    }
    uint8_t *file = s == KEYBAY_OK ? sodium_malloc(ROOT_FILE_V2_BYTES) : NULL;
    if (s == KEYBAY_OK && !file) s = fail(host, KEYBAY_ERR_INTERNAL, "out of memory raising the rollback floor");
    if (s != KEYBAY_OK) {
        sodium_free(root);
        if (dir >= 0) close(dir);
        return s;
    }
    file_path(dir_path, path, sizeof path);
    snprintf(staging, sizeof staging, "%s/%s", dir_path, STAGING_NAME);
    memcpy(file, "KBFR\0\2", 6);
    memcpy(file + 6, root, ROOT_BYTES);
    for (int i = 0; i < 8; i++) file[6 + ROOT_BYTES + i] = (uint8_t)(epoch >> (56 - 8 * i));
    sodium_free(root);
    s = remove_staging(host, dir, staging);
    int fd = -1;
    if (s == KEYBAY_OK) {
        fd = openat(dir, STAGING_NAME, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (fd < 0) s = fail_errno(host, "cannot create", staging);
        else if (fchmod(fd, 0600) != 0) { s = fail_errno(host, "cannot set the mode of", staging); close(fd); fd = -1; }
    }
    if (s == KEYBAY_OK) {
        s = write_all_and_sync(fd, file, ROOT_FILE_V2_BYTES);
        if (close(fd) != 0 && s == KEYBAY_OK) s = KEYBAY_ERR_IO;
        if (s != KEYBAY_OK) s = fail_errno(host, "cannot write", staging);
        else if (renameat(dir, STAGING_NAME, dir, FILE_NAME) != 0) s = fail_errno(host, "cannot replace", path);
        else if (fsync(dir) != 0) s = fail_errno(host, "cannot fsync directory", dir_path);
    }
    if (s != KEYBAY_OK) unlinkat(dir, STAGING_NAME, 0);
    sodium_free(file);
    close(dir);
    return s;
}

static keybay_status copy_text(const keybay_host *host, const char *text, size_t length, keybay_buffer *text_out) {
    if (!buffer_alloc(text_out, length)) return fail(host, KEYBAY_ERR_INTERNAL, "out of memory");
    memcpy(text_out->data, text, length);
    return KEYBAY_OK;
}

static keybay_status root_location(const keybay_host *host, const keybay_root_context *c, keybay_buffer *text_out) {
    char path[4200];
    int n = root_file_path(c, path, sizeof path);
    if (n < 0) return fail(host, KEYBAY_ERR_IO, "the root file's path under %.64s... is longer than PATH_MAX", c->state_home);
    return copy_text(host, path, (size_t)n, text_out);
}

/* Any process of the same user can read the root file: say so wherever the store is shown. */
static const char protection_note[] =
    "file-root keeps the platform key in a private file: it protects against copied files, backups "
    "and other users, not against other programs running as this user";

static keybay_status root_protection(const keybay_host *host, const keybay_root_context *c, keybay_buffer *text_out) {
    (void)c;
    return copy_text(host, protection_note, sizeof protection_note - 1, text_out);
}

static keybay_status root_reset(const keybay_host *host, const keybay_root_context *c) {
    char dir_path[4096], path[4200];
    int dir;
    keybay_status s = open_root_dir(host, c, 0, &dir, dir_path, sizeof dir_path);
    if (s != KEYBAY_OK || dir < 0) return s;
    file_path(dir_path, path, sizeof path);
    char staging[4200];
    snprintf(staging, sizeof staging, "%s/%s", dir_path, STAGING_NAME);
    s = remove_staging(host, dir, staging);
    if (s == KEYBAY_OK && unlinkat(dir, FILE_NAME, 0) != 0 && errno != ENOENT) s = fail_errno(host, "cannot remove", path);
    if (s == KEYBAY_OK && fsync(dir) != 0) s = fail_errno(host, "cannot fsync directory", dir_path);
    close(dir);
    return s;
}

static const keybay_plugin descriptor = {
    .abi_version = KEYBAY_PLUGIN_ABI_VERSION,
    .struct_size = sizeof(keybay_plugin),
    .id = "file-root",
    .name = "Private file (TPM-less platform root)",
    .version = "1.0.0",
    .kind = KEYBAY_KIND_ROOT,
    .flags = 0,
    .options = NULL,
    .option_count = 0,
    .free_buffer = free_buffer,
    .root_exists = root_exists,
    .root_create = root_create,
    .root_seal = root_seal,
    .root_open = root_open,
    .root_reset = root_reset,
    .root_location_with_host = root_location,
    .root_protection = root_protection,
    .root_open_with_floor = root_open_with_floor,
    .root_raise_floor = root_raise_floor,
};

__attribute__((visibility("default")))
const keybay_plugin *keybay_plugin_entry_v1(void) {
    if (sodium_init() < 0) return NULL;
    return &descriptor;
}
