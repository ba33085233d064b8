// SPDX-License-Identifier: Apache-2.0
/*
 * libkeybay-com.example.keyfile.so — a test fixture: a third-party method plugin written from the
 * installed plugin guide alone (share/doc/keybay/plugins.md), built against the installed header
 * with the guide's build line. The credential is a file the user names at enrollment, which the
 * host opens for it (open_file): the sandbox it runs in lets it open no file of the user's itself.
 *
 *     enroll --opt path=/absolute/key/file
 *     params = format u8 (1) | path length u16 (big-endian) | path bytes
 *     M      = SHA-256("com.example.keyfile v1" | 0x00 | file contents)
 *
 * No salt: the core salts every enrollment itself, so M depends on the file alone (which also lets
 * plugin-check compare two enrollments: `--opt path=A --wrong-opt path=B`).
 * Built with -DKEYFILE_BROKEN_SAME_M it hashes none of the file: the same M for any file, which
 * plugin-check must catch (`--wrong-opt` and `--change-credential` each do).
 * Built with -DKEYFILE_BROKEN_SALTED it ignores the file too, but its parameters carry a random
 * salt that M is derived from: two enrollments differ, so `--wrong-opt` alone is inconclusive;
 * `--change-credential 'cp b.key a.key'` must catch it.
 * Built with -DKEYFILE_OWN_OPEN it opens the file itself, as a plugin written before open_file
 * did (which works only in process).
 */
#define _DEFAULT_SOURCE /* explicit_bzero, O_NOFOLLOW with -std=c11 */

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <keybay_plugin.h>
#include <sodium.h>

#define KF_ID "com.example.keyfile"
#define KF_FORMAT 1u
#define KF_PATH_MAX 4000u
#define KF_FILE_MAX 65536u
#define KF_FILE_MIN 32u
#ifdef KEYFILE_BROKEN_SALTED
#define KF_SALT 16u /* appended to the parameters */
#else
#define KF_SALT 0u
#endif

static keybay_status kf_error(const keybay_host *host, keybay_status status, const char *format, const char *path) {
    char line[4200];
    snprintf(line, sizeof line, format, path);
    if (KEYBAY_HOST_HAS(host, set_error)) host->set_error(host->context, line);
    return status;
}

/* kf_error with a stable reason and the key file's path (the guide: set_error_detail, then the line). */
static keybay_status kf_detailed_error(const keybay_host *host, keybay_status status, const char *reason, const char *format, const char *path) {
    if (KEYBAY_HOST_HAS(host, set_error_detail)) host->set_error_detail(host->context, reason, -1, path[0] == '/' ? path : NULL);
    return kf_error(host, status, format, path);
}

static void kf_free_buffer(keybay_buffer *b) {
    if (b == NULL) return;
    if (b->data != NULL) {
        explicit_bzero(b->data, b->length);
        free(b->data);
    }
    b->data = NULL;
    b->length = 0;
}

static keybay_status kf_probe(const keybay_host *host) {
    if (sodium_init() < 0) return kf_error(host, KEYBAY_ERR_NOT_AVAILABLE, "%s: libsodium cannot start", KF_ID);
    return KEYBAY_OK;
}

/* Opens the key file: the host opens it when it can (open_file: the file the user named at
   enrollment, whatever the parameters say), and its refusal, which names the cause and the file,
   is passed on unchanged. A host without open_file (an older one), or one that holds no file for
   this method (UNSUPPORTED: enrolled before hosts recorded them), leaves it to the plugin, which
   can open it only in process: inside the sandbox that is refused, and the host's cause stands. */
static keybay_status kf_open(const keybay_host *host, const char *path, int enrolling, int *fd) {
    keybay_status hosted = KEYBAY_ERR_UNSUPPORTED;
#ifndef KEYFILE_OWN_OPEN
    if (KEYBAY_HOST_HAS(host, open_file)) hosted = host->open_file(host->context, "path", fd);
    if (hosted != KEYBAY_ERR_UNSUPPORTED) return hosted;
#endif
    *fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (*fd >= 0) return KEYBAY_OK;
    if (errno == EACCES && hosted == KEYBAY_ERR_UNSUPPORTED && KEYBAY_HOST_HAS(host, open_file)) return hosted;
    if (errno == ENOENT || errno == ENOTDIR)
        return enrolling ? kf_detailed_error(host, KEYBAY_ERR_INVALID_OPTION, "no-key-file", "no key file at %s", path)
                         : kf_detailed_error(host, KEYBAY_ERR_NOT_AVAILABLE, "no-key-file", "the key file %s is absent (is its disk mounted?)", path);
    if (errno == ELOOP) return kf_error(host, KEYBAY_ERR_INSECURE, "the key file %s is a symbolic link", path);
    return kf_error(host, KEYBAY_ERR_IO, "cannot open the key file %s", path);
}

/* Reads the key file and derives M. `enrolling` picks the statuses: at enroll a path that is not
   there is the user's typo (INVALID_OPTION); at unlock the file is absent (NOT_AVAILABLE). */
static keybay_status kf_derive(const keybay_host *host, const char *path, const uint8_t *salt, int enrolling,
                               uint8_t m[KEYBAY_METHOD_SECRET_BYTES]) {
    if (sodium_init() < 0) return kf_error(host, KEYBAY_ERR_INTERNAL, "%s: libsodium cannot start", KF_ID);
    int fd = -1;
    keybay_status opened = kf_open(host, path, enrolling, &fd);
    if (opened != KEYBAY_OK) return opened;
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        return kf_error(host, enrolling ? KEYBAY_ERR_INVALID_OPTION : KEYBAY_ERR_IO, "%s is not a regular file", path);
    }
    /* As the host's own rule: no one else may write it (a FAT stick shows every file as 0644). */
    if (st.st_uid != geteuid() || (st.st_mode & 022) != 0) {
        close(fd);
        return kf_error(host, KEYBAY_ERR_INSECURE, "the key file %s must be yours and writable by you alone (chmod 600)", path);
    }
    if (st.st_size < KF_FILE_MIN || st.st_size > KF_FILE_MAX) {
        close(fd);
        return enrolling ? kf_error(host, KEYBAY_ERR_INVALID_OPTION, "the key file %s must hold 32 bytes to 64 KiB", path)
                         : kf_error(host, KEYBAY_ERR_WRONG_SECRET, "the key file %s is not the enrolled one (wrong size)", path);
    }
    uint8_t *contents = sodium_malloc(KF_FILE_MAX);
    if (contents == NULL) {
        close(fd);
        return kf_error(host, KEYBAY_ERR_INTERNAL, "%s: out of memory", KF_ID);
    }
    size_t got = 0;
    while (got < (size_t)st.st_size) {
        ssize_t n = read(fd, contents + got, (size_t)st.st_size - got);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        got += (size_t)n;
    }
    close(fd);
    if (got != (size_t)st.st_size) {
        sodium_free(contents);
        return kf_error(host, KEYBAY_ERR_IO, "cannot read the key file %s", path);
    }
#if defined KEYFILE_BROKEN_SAME_M || defined KEYFILE_BROKEN_SALTED
    got = 0;
#endif
    static const char domain[] = "com.example.keyfile v1"; /* hashed with its NUL as the separator */
    crypto_hash_sha256_state state;
    crypto_hash_sha256_init(&state);
    crypto_hash_sha256_update(&state, (const unsigned char *)domain, sizeof domain);
    crypto_hash_sha256_update(&state, salt, KF_SALT);
    crypto_hash_sha256_update(&state, contents, got);
    crypto_hash_sha256_final(&state, m);
    sodium_memzero(&state, sizeof state);
    sodium_free(contents); /* wipes */
    return KEYBAY_OK;
}

/* Strict decoding: format 1, the exact length, an absolute path without NUL bytes. Copies the
   path into `path` (KF_PATH_MAX + 1 bytes), and the salt (broken build only) into `salt`. */
static keybay_status kf_decode(const keybay_host *host, const uint8_t *params, size_t length, char *path, uint8_t *salt) {
    if (params == NULL || length < 3) return kf_error(host, KEYBAY_ERR_MALFORMED_PARAMS, "%s params: too short", KF_ID);
    if (params[0] != KF_FORMAT) return kf_error(host, KEYBAY_ERR_MALFORMED_PARAMS, "%s params: unknown format (expected 1)", KF_ID);
    size_t n = (size_t)params[1] << 8 | params[2];
    if (n < 2 || n > KF_PATH_MAX || length != 3 + n + KF_SALT)
        return kf_error(host, KEYBAY_ERR_MALFORMED_PARAMS, "%s params: the path length does not match", KF_ID);
    if (params[3] != '/' || memchr(params + 3, 0, n) != NULL)
        return kf_error(host, KEYBAY_ERR_MALFORMED_PARAMS, "%s params: the path is not absolute text", KF_ID);
    memcpy(path, params + 3, n);
    path[n] = 0;
    memcpy(salt, params + 3 + n, KF_SALT);
    return KEYBAY_OK;
}

static keybay_status kf_enroll(const keybay_host *host, const keybay_option *options, size_t option_count,
                               keybay_buffer *params_out, uint8_t secret_out[KEYBAY_METHOD_SECRET_BYTES]) {
    if (params_out == NULL || secret_out == NULL) return KEYBAY_ERR_INTERNAL;
    params_out->data = NULL;
    params_out->length = 0;
    const char *path = NULL;
    for (size_t i = 0; i < option_count; i++) {
        if (strcmp(options[i].name, "path") != 0)
            return kf_error(host, KEYBAY_ERR_INVALID_OPTION, "unknown option '%.64s' (this method takes path)", options[i].name);
        path = options[i].value;
    }
    if (path == NULL) return kf_error(host, KEYBAY_ERR_INVALID_OPTION, "%s needs the key file: --opt path=/absolute/file", KF_ID);
    size_t n = strlen(path);
    if (n < 2 || n > KF_PATH_MAX || path[0] != '/')
        return kf_error(host, KEYBAY_ERR_INVALID_OPTION, "the key file path '%.200s' is not an absolute path of at most 4000 bytes", path);
    uint8_t m[KEYBAY_METHOD_SECRET_BYTES], salt[KF_SALT + 1];
    randombytes_buf(salt, sizeof salt);
    keybay_status status = kf_derive(host, path, salt, 1, m);
    if (status != KEYBAY_OK) return status;
    uint8_t *params = malloc(3 + n + KF_SALT);
    if (params == NULL) {
        explicit_bzero(m, sizeof m);
        return kf_error(host, KEYBAY_ERR_INTERNAL, "%s: out of memory", KF_ID);
    }
    params[0] = KF_FORMAT;
    params[1] = (uint8_t)(n >> 8);
    params[2] = (uint8_t)n;
    memcpy(params + 3, path, n);
    memcpy(params + 3 + n, salt, KF_SALT);
    memcpy(secret_out, m, sizeof m);
    explicit_bzero(m, sizeof m);
    params_out->data = params;
    params_out->length = 3 + n + KF_SALT;
    return KEYBAY_OK;
}

static keybay_status kf_unwrap(const keybay_host *host, const uint8_t *params, size_t params_length,
                               uint8_t secret_out[KEYBAY_METHOD_SECRET_BYTES]) {
    if (secret_out == NULL) return KEYBAY_ERR_INTERNAL;
    char path[KF_PATH_MAX + 1];
    uint8_t salt[KF_SALT + 1];
    keybay_status status = kf_decode(host, params, params_length, path, salt);
    if (status != KEYBAY_OK) return status;
    uint8_t m[KEYBAY_METHOD_SECRET_BYTES];
    status = kf_derive(host, path, salt, 0, m);
    if (status == KEYBAY_OK) memcpy(secret_out, m, sizeof m);
    explicit_bzero(m, sizeof m);
    return status;
}

static keybay_status kf_describe(const keybay_host *host, const uint8_t *params, size_t params_length, keybay_buffer *text_out) {
    if (text_out == NULL) return KEYBAY_ERR_INTERNAL;
    text_out->data = NULL;
    text_out->length = 0;
    char path[KF_PATH_MAX + 1];
    uint8_t salt[KF_SALT + 1];
    keybay_status status = kf_decode(host, params, params_length, path, salt);
    if (status != KEYBAY_OK) return status;
    char *text = malloc(sizeof "key file " + strlen(path));
    if (text == NULL) return kf_error(host, KEYBAY_ERR_INTERNAL, "%s: out of memory", KF_ID);
    strcpy(text, "key file ");
    strcat(text, path);
    text_out->data = (uint8_t *)text;
    text_out->length = strlen(text);
    return KEYBAY_OK;
}

static const keybay_option_spec kf_options[] = {
    {"path", "absolute path of the key file (32 bytes to 64 KiB, mode 0600): its contents are the credential"},
};

static const keybay_plugin kf_plugin = {
    .abi_version = KEYBAY_PLUGIN_ABI_VERSION,
    .struct_size = sizeof(keybay_plugin),
    .id = KF_ID,
    .name = "Key file (example)",
    .version = "1.0",
    .kind = KEYBAY_KIND_METHOD,
    .flags = 0, /* asks nothing, needs no device */
    .options = kf_options,
    .option_count = sizeof kf_options / sizeof kf_options[0],
    .free_buffer = kf_free_buffer,
    .probe = kf_probe,
    .enroll = kf_enroll,
    .unwrap = kf_unwrap,
    .describe_with_host = kf_describe,
};

__attribute__((visibility("default"))) const keybay_plugin *keybay_plugin_entry_v1(void) { return &kf_plugin; }
