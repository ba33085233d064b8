// SPDX-License-Identifier: Apache-2.0
/*
 * readback_shim.so — an LD_PRELOAD shim for MutationGuardTests (test support only; built by the
 * test with cc). Once a rename or link has put a file named keybay.v2.store in place, every
 * pread of a descriptor open on a keybay.v2.store returns its bytes with the last one flipped
 * (bit 0): a disk that does not hold what was written. The CLI's read-back after the write must
 * see it and fail with `io`. Each corrupted read is logged (a line "pread OFFSET COUNT") to the
 * file KEYBAY_READBACK_SHIM_LOG names, so the test knows the read-back happened.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>

static int armed;

static int is_store(const char *path) {
    const char *slash = strrchr(path, '/');
    return strcmp(slash != NULL ? slash + 1 : path, "keybay.v2.store") == 0;
}

static int open_on_store(int fd) {
    char link[64], target[4096];
    snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
    ssize_t n = readlink(link, target, sizeof target - 1);
    if (n <= 0) return 0;
    target[n] = 0;
    return is_store(target);
}

static int placed(int rc, const char *new_path) {
    if (rc == 0 && new_path != NULL && is_store(new_path)) armed = 1;
    return rc;
}

/* The next definition of `fn` (libc's). */
#define REAL(fn) static __typeof__(&fn) real; if (real == NULL) real = (__typeof__(&fn))dlsym(RTLD_NEXT, #fn)

int rename(const char *old_path, const char *new_path) {
    REAL(rename);
    return placed(real(old_path, new_path), new_path);
}

int renameat(int old_dir, const char *old_path, int new_dir, const char *new_path) {
    REAL(renameat);
    return placed(real(old_dir, old_path, new_dir, new_path), new_path);
}

int renameat2(int old_dir, const char *old_path, int new_dir, const char *new_path, unsigned flags) {
    REAL(renameat2);
    return placed(real(old_dir, old_path, new_dir, new_path, flags), new_path);
}

int linkat(int old_dir, const char *old_path, int new_dir, const char *new_path, int flags) {
    REAL(linkat);
    return placed(real(old_dir, old_path, new_dir, new_path, flags), new_path);
}

static ssize_t corrupted(int fd, void *buffer, ssize_t got, off_t offset) {
    if (got <= 0 || !armed || !open_on_store(fd)) return got;
    ((unsigned char *)buffer)[got - 1] ^= 0x01;
    const char *log = getenv("KEYBAY_READBACK_SHIM_LOG");
    if (log != NULL) {
        int f = open(log, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
        if (f >= 0) {
            char line[64];
            int n = snprintf(line, sizeof line, "pread %lld %lld\n", (long long)offset, (long long)got);
            if (write(f, line, (size_t)n) != n) { /* the test then sees no line */ }
            close(f);
        }
    }
    return got;
}

ssize_t pread(int fd, void *buffer, size_t count, off_t offset) {
    REAL(pread);
    return corrupted(fd, buffer, real(fd, buffer, count, offset), offset);
}

ssize_t pread64(int fd, void *buffer, size_t count, off64_t offset) {
    REAL(pread64);
    return corrupted(fd, buffer, real(fd, buffer, count, offset), offset);
}
