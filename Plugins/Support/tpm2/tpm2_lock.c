// SPDX-License-Identifier: Apache-2.0
/* One process at a time on a TPM: see keybay_tpm2_lock in include/keybay_tpm2.h.

   Without a resource manager (swtpm's socket, /dev/tpm0) the TPM's few object slots are shared
   by every process using it, and one that finds them full flushes the others' objects. So this
   user's processes take turns: <state_home>/keybay/tpm2-<hash of the TCTI>.lock, held from the
   TPM's opening to its closing, waited for until the operation's deadline. */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <sodium.h>

#include "keybay_plugin_host.h"
#include "keybay_root_files.h"
#include "keybay_tpm2.h"

#define fail keybay_rf_fail

/* What is left of the operation's deadline, in milliseconds. */
static long remaining_ms(const keybay_tpm2 *t) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (long)(t->deadline.tv_sec - now.tv_sec) * 1000 + (t->deadline.tv_nsec - now.tv_nsec) / 1000000;
}

keybay_status keybay_tpm2_lock(const keybay_host *host, keybay_tpm2 *t, int keybay_dir, const char *keybay_dir_path, int create) {
    char path[KEYBAY_ROOT_PATH_BYTES], name[64];
    keybay_status s;
    uint8_t digest[crypto_hash_sha256_BYTES];
    crypto_hash_sha256_state h;
    crypto_hash_sha256_init(&h);
    crypto_hash_sha256_update(&h, (const uint8_t *)t->library, strlen(t->library) + 1);
    crypto_hash_sha256_update(&h, (const uint8_t *)t->conf, strlen(t->conf));
    crypto_hash_sha256_final(&h, digest);
    int at = snprintf(name, sizeof name, "tpm2-");
    for (int i = 0; i < 8; i++) at += snprintf(name + at, sizeof name - (size_t)at, "%02x", digest[i]);
    snprintf(name + at, sizeof name - (size_t)at, ".lock");
    snprintf(path, sizeof path, "%.4100s/%s", keybay_dir_path, name);
    /* Read-only is enough for flock, and opens a lock file that exists on a read-only mount. */
    int fd = openat(keybay_dir, name, O_RDONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
    /* A read-only state directory without the lock file (a root made before the lock existed):
       the operation goes on without taking turns, as before; creating a root fails there anyway. */
    if (fd < 0 && errno == EROFS && !create) return KEYBAY_OK;
    if (fd < 0) return keybay_rf_fail_errno(host, "cannot open the TPM lock file", path);
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != geteuid() || (st.st_mode & 022)) {
        close(fd);
        return fail(host, KEYBAY_ERR_INSECURE, "the TPM lock file %s is not a regular file of this user's that only it may write", path);
    }
    long pause_us = 500;
    while (flock(fd, LOCK_EX | LOCK_NB) != 0) {
        if (errno == EINTR) continue;
        if (errno != EWOULDBLOCK) { s = keybay_rf_fail_errno(host, "cannot lock", path); close(fd); return s; }
        long left = remaining_ms(t);
        if (left <= 0) {
            close(fd);
            keybay_host_error_reason(host, "tpm-busy");
            return fail(host, KEYBAY_ERR_NOT_AVAILABLE, "%s is busy: another process of this user held it for more than %ld ms (%s)",
                        t->where, t->timeout_ms, path);
        }
        struct timespec nap = { 0, (left * 1000 < pause_us ? left * 1000 : pause_us) * 1000 };
        nanosleep(&nap, NULL);
        if (pause_us < 20000) pause_us *= 2;
    }
    t->lock = fd;
    return KEYBAY_OK;
}
