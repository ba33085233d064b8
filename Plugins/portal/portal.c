// SPDX-License-Identifier: Apache-2.0
/*
 * portal — the XDG Secret portal as platform root, for sandboxed apps (libkeybay-portal.so).
 *
 * Inside a Flatpak or snap sandbox, xdg-desktop-portal hands each application a secret of its
 * own (org.freedesktop.portal.Secret.RetrieveSecret, kept by the portal's backend, e.g. in one
 * gnome-keyring item per application). The root key is derived from it, 32 random bytes made
 * when the root is created (rootNonce, kept in the floor file below: the portal cannot delete its
 * secret, so removing the floor file is what destroys the root) and the storage domain; the
 * portal's secret is never stored:
 *
 *   root            = HKDF(ikm = portalSecret | rootNonce, salt = storageDomain, info = "keybay:v2:s1:key:portal-root", L = 32)
 *   Provider state  = SHA-256("keybay:v2:s1:provider-state:portal" | 0x00 | storageDomain | root)   (32 B)
 *   Sealed package  = nonce(24) | XChaCha20-Poly1305(root, plaintext, aad)
 *
 * The rollback floor lives in <state_home>/keybay/<app>/portal-root.floor, authenticated with a
 * key derived from the root (the portal keeps one secret and nothing else):
 *
 *   floorKey   = HKDF(ikm = root, salt = storageDomain, info = "keybay:v2:s1:key:portal-floor", L = 32)
 *   floor file = "KBPF" | version:u16 BE (= 2) | rootNonce(32) | floor:u64 BE | HMAC-SHA256(floorKey, the 46 bytes before)   (78 B)
 *
 * The floor file is written at creation (floor 0) and is the root's presence: without it the
 * root is missing (ROOT_MISSING), never recreated on open; reset removes it, and with it the
 * nonce, so no copy of the store opens again.
 *
 * Outside a sandbox every program gets one and the same portal secret, so the root is refused
 * there (NOT_AVAILABLE). A sandbox is a Flatpak (/.flatpak-info, its [Application] name=) or a
 * snap (SNAP_NAME, the instance SNAP_INSTANCE_NAME, with the password-manager-service interface
 * connected as `snapctl is-connected` answers); the store's application id must be the
 * sandbox's (INVALID_OPTION otherwise). Every portal call is bounded (PORTAL_TIMEOUT_MS): a
 * portal that does not answer, or refuses, is NOT_AVAILABLE, never a hang. A session bus is never
 * started (keybay_rf_check_session_bus).
 *
 * GIO (GDBus, GUnixFDList) is opened with dlopen on the first call that talks to the portal, so
 * a process whose store is on another root never loads it. The few GLib types used are declared
 * in portal_secret.c (their layout is GLib's public, stable API), which asks the portal.
 */
#define _GNU_SOURCE /* pipe2 */

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <sodium.h>

#include "keybay_plugin.h"
#include "keybay_plugin_descriptor.h"
#include "keybay_plugin_host.h"
#include "keybay_root_files.h"
#include "portal_secret.h"

#define fail keybay_rf_fail
#define buffer_alloc keybay_rf_buffer_alloc

#define ROOT_BYTES 32
#define STATE_BYTES 32
#define FLOOR_FILE "portal-root.floor"
#define NONCE_BYTES 32
#define FLOOR_BODY_BYTES (6 + NONCE_BYTES + 8)
#define FLOOR_FILE_BYTES (FLOOR_BODY_BYTES + 32)
#define FLOOR_VERSION "\0\2"
#define FLOOR_MAGIC "KBPF"
#define SNAPCTL_TIMEOUT_MS 5000
#define FLATPAK_INFO "/.flatpak-info"
#define SNAPCTL "/usr/bin/snapctl"
static const char provider_state_label[] = "keybay:v2:s1:provider-state:portal";
static const char root_info[] = "keybay:v2:s1:key:portal-root";
static const char floor_info[] = "keybay:v2:s1:key:portal-floor";

/* ---- the sandbox ---- */

typedef struct sandbox {
    const char *kind; /* "Flatpak" or "snap" */
    char app[128];    /* the application id the sandbox attests */
} sandbox;

/* The [Application] name= of a keyfile, or "" when it has none. */
static void flatpak_name(const char *text, char *out, size_t size) {
    out[0] = 0;
    int in_application = 0;
    for (const char *line = text; *line;) {
        size_t length = strcspn(line, "\n");
        if (length > 0 && line[0] == '[') in_application = length == 13 && strncmp(line, "[Application]", 13) == 0;
        else if (in_application && length > 5 && strncmp(line, "name=", 5) == 0 && length - 5 < size) {
            memcpy(out, line + 5, length - 5);
            out[length - 5] = 0;
            return;
        }
        line += length;
        if (*line == '\n') line++;
    }
}

static int valid_application_id(const char *id) {
    size_t n = strlen(id);
    if (n < 1 || n > 120) return 0;
    for (size_t i = 0; i < n; i++) {
        char ch = id[i];
        int alnum = (ch >= '0' && ch <= '9') || (ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z');
        if (!alnum && (i == 0 || (ch != '.' && ch != '_' && ch != '-'))) return 0;
    }
    return 1;
}

/* Whether `snapctl is-connected password-manager-service` says yes, within SNAPCTL_TIMEOUT_MS
   (snapd's own tool inside every snap; its exit status is the answer). */
static keybay_status snap_interface_connected(const keybay_host *host) {
    if (access(SNAPCTL, X_OK) != 0)
        return fail(host, KEYBAY_ERR_NOT_AVAILABLE, "SNAP_NAME is set but " SNAPCTL " is missing: cannot tell whether the snap's password-manager-service interface is connected");
    char *argv[] = { "snapctl", "is-connected", "password-manager-service", NULL };
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0);
    extern char **environ;
    pid_t pid;
    int rc = posix_spawn(&pid, SNAPCTL, &actions, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&actions);
    if (rc != 0) return fail(host, KEYBAY_ERR_NOT_AVAILABLE, "cannot run " SNAPCTL ": %s", strerror(rc));
    int status = 0;
    for (int64_t deadline = now_ms() + SNAPCTL_TIMEOUT_MS;;) {
        pid_t done = waitpid(pid, &status, WNOHANG);
        if (done == pid) break;
        if (done < 0 && errno != EINTR) return fail(host, KEYBAY_ERR_NOT_AVAILABLE, "cannot wait for " SNAPCTL ": %s", strerror(errno));
        if (now_ms() > deadline) {
            kill(pid, SIGKILL);
            while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
            return fail(host, KEYBAY_ERR_NOT_AVAILABLE, SNAPCTL " is-connected password-manager-service gave no answer within %d ms", SNAPCTL_TIMEOUT_MS);
        }
        usleep(10000);
    }
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
        return fail(host, KEYBAY_ERR_NOT_AVAILABLE, "the snap's password-manager-service interface is not connected (snap connect <snap>:password-manager-service)");
    return KEYBAY_OK;
}

/* The sandbox this process runs in, or NOT_AVAILABLE saying why the portal root cannot be used. */
static keybay_status find_sandbox(const keybay_host *host, sandbox *out) {
    memset(out, 0, sizeof *out);
    /* O_NONBLOCK: a FIFO at that path never blocks the open; anything but a regular file is refused. */
    int fd = open(FLATPAK_INFO, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd >= 0) {
        struct stat st;
        if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
            close(fd);
            return fail(host, KEYBAY_ERR_NOT_AVAILABLE, FLATPAK_INFO " is not a regular file");
        }
        char text[65536];
        size_t total = 0;
        ssize_t n;
        while (total < sizeof text - 1 && (n = read(fd, text + total, sizeof text - 1 - total)) != 0) {
            if (n < 0) {
                if (errno == EINTR) continue;
                int e = errno;
                close(fd);
                /* A partial text is never taken for the whole: its name= may be cut. */
                return fail(host, KEYBAY_ERR_NOT_AVAILABLE, "cannot read " FLATPAK_INFO ": %s", strerror(e));
            }
            total += (size_t)n;
        }
        close(fd);
        text[total] = 0;
        out->kind = "Flatpak";
        flatpak_name(text, out->app, sizeof out->app);
        if (!valid_application_id(out->app))
            return fail(host, KEYBAY_ERR_NOT_AVAILABLE, FLATPAK_INFO " names no valid application ([Application] name=)");
        return KEYBAY_OK;
    }
    if (errno != ENOENT) return fail(host, KEYBAY_ERR_NOT_AVAILABLE, "cannot read " FLATPAK_INFO ": %s", strerror(errno));
    const char *snap = getenv("SNAP_NAME");
    if (snap && snap[0]) {
        const char *instance = getenv("SNAP_INSTANCE_NAME");
        out->kind = "snap";
        if (!instance || strlen(instance) >= sizeof out->app || !valid_application_id(instance))
            return fail(host, KEYBAY_ERR_NOT_AVAILABLE, "SNAP_NAME is set but SNAP_INSTANCE_NAME names no valid application");
        snprintf(out->app, sizeof out->app, "%s", instance);
        return snap_interface_connected(host);
    }
    return fail(host, KEYBAY_ERR_NOT_AVAILABLE, "not inside a sandbox (no " FLATPAK_INFO ", no SNAP_NAME): outside one every program gets the same portal secret, so the portal root protects nothing there");
}

/* The sandbox, and the store's application id checked against it. */
static keybay_status check_sandbox(const keybay_host *host, const keybay_root_context *c, sandbox *box) {
    keybay_status s = find_sandbox(host, box);
    if (s == KEYBAY_OK && strcmp(box->app, c->application_id) != 0)
        s = fail(host, KEYBAY_ERR_INVALID_OPTION, "the application id %s is not this %s sandbox's (%s)", c->application_id, box->kind, box->app);
    return s;
}

/* ---- the root ---- */

/* HKDF-SHA256 (RFC 5869), extract then expand, with L = 32: one block. */
static void hkdf32(const uint8_t *ikm, size_t ikm_length, const uint8_t *salt, size_t salt_length,
                   const char *info, uint8_t out[32]) {
    uint8_t prk[crypto_auth_hmacsha256_BYTES];
    crypto_auth_hmacsha256_state h;
    crypto_auth_hmacsha256_init(&h, salt, salt_length);
    crypto_auth_hmacsha256_update(&h, ikm, ikm_length);
    crypto_auth_hmacsha256_final(&h, prk);
    const uint8_t counter = 1;
    crypto_auth_hmacsha256_init(&h, prk, sizeof prk);
    crypto_auth_hmacsha256_update(&h, (const uint8_t *)info, strlen(info));
    crypto_auth_hmacsha256_update(&h, &counter, 1);
    crypto_auth_hmacsha256_final(&h, out);
    sodium_memzero(prk, sizeof prk);
    sodium_memzero(&h, sizeof h);
}

static void provider_state(const uint8_t *root, const uint8_t *domain, uint8_t out[STATE_BYTES]) {
    keybay_rf_provider_state(provider_state_label, domain, root, out);
}

/* The root of this sandbox's portal secret, `nonce` and the storage domain, in guarded memory
   (the portal's secret is wiped and freed here). The caller has checked the sandbox. */
static keybay_status derive_root(const keybay_host *host, const keybay_root_context *c, const uint8_t nonce[NONCE_BYTES],
                                 uint8_t **root_out) {
    uint8_t *secret;
    size_t length;
    keybay_status s = retrieve_secret(host, &secret, &length);
    if (s != KEYBAY_OK) return s;
    uint8_t *ikm = sodium_malloc(length + NONCE_BYTES), *root = sodium_malloc(ROOT_BYTES);
    if (ikm && root) {
        memcpy(ikm, secret, length);
        memcpy(ikm + length, nonce, NONCE_BYTES);
        hkdf32(ikm, length + NONCE_BYTES, c->storage_domain, 32, root_info, root);
    }
    sodium_free(secret);
    sodium_free(ikm);
    if (!ikm || !root) { sodium_free(root); return fail(host, KEYBAY_ERR_INTERNAL, "out of memory"); }
    *root_out = root;
    return KEYBAY_OK;
}

/* The floor file for `nonce` and `floor`: magic, version, nonce, floor and their HMAC under the
   floor key. */
static void floor_file(const uint8_t *root, const uint8_t *domain, const uint8_t nonce[NONCE_BYTES], uint64_t floor,
                       uint8_t out[FLOOR_FILE_BYTES]) {
    memcpy(out, FLOOR_MAGIC FLOOR_VERSION, 6);
    memcpy(out + 6, nonce, NONCE_BYTES);
    for (int i = 0; i < 8; i++) out[6 + NONCE_BYTES + i] = (uint8_t)(floor >> (56 - 8 * i));
    uint8_t key[32];
    hkdf32(root, ROOT_BYTES, domain, 32, floor_info, key);
    crypto_auth_hmacsha256_state h;
    crypto_auth_hmacsha256_init(&h, key, sizeof key);
    crypto_auth_hmacsha256_update(&h, out, FLOOR_BODY_BYTES);
    crypto_auth_hmacsha256_final(&h, out + FLOOR_BODY_BYTES);
    sodium_memzero(key, sizeof key);
    sodium_memzero(&h, sizeof h);
}

/* The root `state` names, in guarded memory, with its nonce and floor from the floor file:
   ROOT_MISSING without the floor file; INTEGRITY for a file that is not a version-2 floor file
   (the root may still be there: a damaged file is not a lost key); ROOT_MISMATCH when this
   sandbox's portal secret and the file's nonce give another provider state (checked before any
   decryption); INTEGRITY when the file does not authenticate. */
static keybay_status load_matching_root(const keybay_host *host, const keybay_root_context *c,
                                        const uint8_t *state, size_t state_length, uint8_t **root_out,
                                        uint8_t nonce_out[NONCE_BYTES], uint64_t *floor_out) {
    sandbox box;
    keybay_status s = check_sandbox(host, c, &box);
    if (s != KEYBAY_OK) return s;
    char path[KEYBAY_ROOT_PATH_BYTES];
    keybay_rf_path(c, FLOOR_FILE, path, sizeof path); /* for messages: truncation is harmless */
    uint8_t file[FLOOR_FILE_BYTES + 1], recomputed[FLOOR_FILE_BYTES];
    size_t length = 0;
    s = keybay_rf_read(host, c, FLOOR_FILE, "the portal root's floor file", file, sizeof file, &length);
    if (s != KEYBAY_OK) return s;
    if (length != FLOOR_FILE_BYTES || memcmp(file, FLOOR_MAGIC FLOOR_VERSION, 6) != 0)
        return fail(host, KEYBAY_ERR_INTEGRITY, "%s is not a version-2 portal floor file (%zu bytes); it was damaged or replaced", path, length);
    uint8_t *root;
    if ((s = derive_root(host, c, file + 6, &root)) != KEYBAY_OK) return s;
    uint8_t expected[STATE_BYTES];
    provider_state(root, c->storage_domain, expected);
    uint64_t floor = 0;
    for (int i = 0; i < 8; i++) floor = floor << 8 | file[6 + NONCE_BYTES + i];
    floor_file(root, c->storage_domain, file + 6, floor, recomputed);
    if (state_length != STATE_BYTES || sodium_memcmp(expected, state, STATE_BYTES) != 0)
        s = fail(host, KEYBAY_ERR_ROOT_MISMATCH, "platform key invalidated: this sandbox's portal secret and %s do not give the root this store was made with (another application, another portal secret, or a root made again since)", path);
    else if (sodium_memcmp(file, recomputed, FLOOR_FILE_BYTES) != 0)
        s = fail(host, KEYBAY_ERR_INTEGRITY, "%s failed authentication with the portal root (it was modified, or belongs to another store)", path);
    if (s != KEYBAY_OK) { sodium_free(root); return s; }
    memcpy(nonce_out, file + 6, NONCE_BYTES);
    *root_out = root;
    *floor_out = floor;
    return KEYBAY_OK;
}

static keybay_status probe(const keybay_host *host) {
    sandbox box;
    return find_sandbox(host, &box);
}

/* The root exists when its floor file does; only inside the store's own sandbox. */
static keybay_status root_exists(const keybay_host *host, const keybay_root_context *c, int *exists) {
    *exists = 0;
    sandbox box;
    keybay_status s = check_sandbox(host, c, &box);
    if (s != KEYBAY_OK) return s;
    return keybay_rf_exists(host, c, FLOOR_FILE, exists);
}

static keybay_status root_create(const keybay_host *host, const keybay_root_context *c, keybay_buffer *state_out) {
    int exists = 0;
    keybay_status s = root_exists(host, c, &exists);
    if (s != KEYBAY_OK) return s;
    char path[KEYBAY_ROOT_PATH_BYTES];
    keybay_rf_path(c, FLOOR_FILE, path, sizeof path);
    if (exists) return fail(host, KEYBAY_ERR_ROOT_EXISTS, "%s already exists; refusing to overwrite it", path);
    uint8_t *root, nonce[NONCE_BYTES];
    randombytes_buf(nonce, sizeof nonce);
    if ((s = derive_root(host, c, nonce, &root)) != KEYBAY_OK) return s;
    if (!buffer_alloc(state_out, STATE_BYTES)) { sodium_free(root); return fail(host, KEYBAY_ERR_INTERNAL, "out of memory"); }
    uint8_t file[FLOOR_FILE_BYTES];
    floor_file(root, c->storage_domain, nonce, 0, file);
    s = keybay_rf_create(host, c, FLOOR_FILE, file, sizeof file); /* create-only: never overwritten */
    if (s == KEYBAY_OK) provider_state(root, c->storage_domain, state_out->data);
    else keybay_rf_free_buffer(state_out);
    sodium_free(root);
    return s;
}

static keybay_status root_seal(const keybay_host *host, const keybay_root_context *c,
                               const uint8_t *state, size_t state_length,
                               const uint8_t *plaintext, size_t plaintext_length,
                               const uint8_t *aad, size_t aad_length, keybay_buffer *sealed_out) {
    uint8_t *root, nonce[NONCE_BYTES];
    uint64_t floor;
    keybay_status s = load_matching_root(host, c, state, state_length, &root, nonce, &floor);
    if (s != KEYBAY_OK) return s;
    s = keybay_rf_seal(host, root, plaintext, plaintext_length, aad, aad_length, sealed_out);
    sodium_free(root);
    return s;
}

static keybay_status root_open_with_floor(const keybay_host *host, const keybay_root_context *c,
                                          const uint8_t *state, size_t state_length,
                                          const uint8_t *sealed, size_t sealed_length,
                                          const uint8_t *aad, size_t aad_length, keybay_buffer *plaintext_out,
                                          uint64_t *floor_out) {
    uint8_t *root, nonce[NONCE_BYTES];
    keybay_status s = load_matching_root(host, c, state, state_length, &root, nonce, floor_out);
    if (s != KEYBAY_OK) return s;
    s = keybay_rf_open(host, root, sealed, sealed_length, aad, aad_length, plaintext_out, "the portal root");
    sodium_free(root);
    return s;
}

/* Rewrites the floor file with the new floor (staged, fsynced, renamed over); never lowers it. */
static keybay_status root_raise_floor(const keybay_host *host, const keybay_root_context *c,
                                      const uint8_t *state, size_t state_length, uint64_t epoch) {
    uint8_t *root, nonce[NONCE_BYTES];
    uint64_t floor;
    keybay_status s = load_matching_root(host, c, state, state_length, &root, nonce, &floor);
    if (s != KEYBAY_OK) return s;
    if (epoch > floor) {
        uint8_t file[FLOOR_FILE_BYTES];
        floor_file(root, c->storage_domain, nonce, epoch, file);
        s = keybay_rf_replace(host, c, FLOOR_FILE, file, sizeof file);
    }
    sodium_free(root);
    return s;
}

/* Never reaches the portal: names the secret and the floor file. */
static keybay_status root_location(const keybay_host *host, const keybay_root_context *c, keybay_buffer *text_out) {
    char path[KEYBAY_ROOT_PATH_BYTES], text[KEYBAY_ROOT_PATH_BYTES + 200];
    if (keybay_rf_path(c, FLOOR_FILE, path, sizeof path) < 0)
        return fail(host, KEYBAY_ERR_IO, "the floor file's path under %.64s... is longer than PATH_MAX", c->state_home);
    int n = snprintf(text, sizeof text, "the Secret portal's secret for %s (rollback floor: %s)", c->application_id, path);
    return keybay_rf_text(host, text, (size_t)n, text_out);
}

static const char protection_note[] =
    "portal derives the platform key from the Secret portal's secret for this sandboxed application: it "
    "protects against copied files, backups, other users and other sandboxed applications; not against "
    "programs running as this user outside the sandbox while the keyring is unlocked";

KEYBAY_ROOT_PROTECTION(protection_note)

/* Removes the floor file, and with it the root's nonce: the portal offers no way to delete its
   secret, but without the nonce it derives no root (no copy of the store opens again); idempotent. */
static keybay_status root_reset(const keybay_host *host, const keybay_root_context *c) {
    return keybay_rf_remove(host, c, FLOOR_FILE);
}

static const keybay_plugin descriptor = {
    KEYBAY_DESCRIPTOR("portal", "XDG Secret portal (platform root for sandboxed apps)", "1.0.0", KEYBAY_KIND_ROOT, 0),
    KEYBAY_ROOT_OPERATIONS,
    .probe = probe,
    .root_create = root_create,
};

KEYBAY_PLUGIN_ENTRY_AFTER_SODIUM(descriptor)
