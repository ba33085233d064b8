// SPDX-License-Identifier: Apache-2.0
/* Private directories: see include/keybay_private_directory.h. */
#define _POSIX_C_SOURCE 200809L /* openat and friends under -std=c11 */

#include "keybay_private_directory.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "keybay_plugin_host.h"

keybay_status keybay_private_fail_errno(const keybay_host *host, const char *what, const char *path) {
    int code = errno;
    keybay_status s = (code == EACCES || code == EPERM) ? KEYBAY_ERR_INSECURE : KEYBAY_ERR_IO;
    keybay_host_error(host, "%s %s: %s", what, path, strerror(code));
    return s;
}

/* The reason and path of a refusal, before its line (the host keeps both with the error). */
static keybay_status insecure(const keybay_host *host, const char *reason, const char *path) {
    keybay_host_error_detail(host, reason, -1, path);
    return KEYBAY_ERR_INSECURE;
}

keybay_status keybay_private_check(const keybay_host *host, int fd, const char *path, int directory) {
    struct stat st;
    if (fstat(fd, &st) != 0) return keybay_private_fail_errno(host, "cannot inspect", path);
    keybay_status s = KEYBAY_OK;
    if (directory ? !S_ISDIR(st.st_mode) : !S_ISREG(st.st_mode)) {
        s = insecure(host, "wrong-type", path);
        keybay_host_error(host, "%s is not a %s; refusing to use it", path, directory ? "directory" : "regular file");
    } else if (st.st_uid != geteuid()) {
        s = insecure(host, "not-owner", path);
        keybay_host_error(host, "%s is owned by another user; refusing to use it", path);
    } else if (st.st_mode & 077) {
        s = insecure(host, "mode", path);
        keybay_host_error(host, "%s is open to group or others; refusing to use it (expected %s)", path, directory ? "0700" : "0600");
    }
    return s;
}

/* mkdir -p for the base directory itself (new levels get 0700). */
static keybay_status make_base(const keybay_host *host, const char *base) {
    struct stat st;
    if (stat(base, &st) == 0) return KEYBAY_OK;
    char prefix[4096];
    size_t n = strlen(base);
    if (n >= sizeof prefix) {
        keybay_host_error(host, "path too long: %s", base);
        return KEYBAY_ERR_IO;
    }
    for (size_t i = 1; i <= n; i++) {
        if (i == n || base[i] == '/') {
            memcpy(prefix, base, i);
            prefix[i] = 0;
            if (mkdir(prefix, 0700) == 0) {
                /* The umask may have taken bits away: a new level is exactly 0700. */
                if (chmod(prefix, 0700) != 0) return keybay_private_fail_errno(host, "cannot set the mode of", prefix);
            } else if (errno != EEXIST) {
                return keybay_private_fail_errno(host, "cannot create directory", prefix);
            }
        }
    }
    return KEYBAY_OK;
}

/* Opens (creating it when `create`) `name` below `parent`, not through a link; -1 with errno. */
static int open_level(const keybay_host *host, int parent, const char *name, int create, const char *path, keybay_status *s) {
    int fd = openat(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd >= 0 || errno != ENOENT || !create) return fd;
    if (mkdirat(parent, name, 0700) == 0) {
        /* Exactly 0700 whatever the umask (the parent is ours: nothing can swap the entry). */
        if (fchmodat(parent, name, 0700, 0) != 0) { *s = keybay_private_fail_errno(host, "cannot set the mode of", path); return -1; }
    } else if (errno != EEXIST) {
        *s = keybay_private_fail_errno(host, "cannot create directory", path);
        return -1;
    }
    return openat(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
}

keybay_status keybay_private_open(const keybay_host *host, const char *base, const char *const *components, size_t count,
                                  int create, int *fd, char *path, size_t path_size) {
    *fd = -1;
    if (create) {
        keybay_status s = make_base(host, base);
        if (s != KEYBAY_OK) return s;
    }
    int current = open(base, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (current < 0) {
        if (errno == ENOENT && !create) return KEYBAY_OK;
        return keybay_private_fail_errno(host, "cannot open directory", base);
    }
    snprintf(path, path_size, "%s", base);
    for (size_t i = 0; i < count; i++) {
        size_t used = strlen(path);
        snprintf(path + used, path_size - used, "/%s", components[i]);
        keybay_status s = KEYBAY_OK;
        int next = open_level(host, current, components[i], create, path, &s);
        int open_errno = errno;
        close(current);
        if (s != KEYBAY_OK) return s;
        if (next < 0) {
            if (open_errno == ENOENT && !create) return KEYBAY_OK;
            if (open_errno == ELOOP || open_errno == ENOTDIR) {
                s = insecure(host, "symbolic-link", path);
                keybay_host_error(host, "%s is a symbolic link or not a directory; refusing to use it", path);
                return s;
            }
            errno = open_errno;
            return keybay_private_fail_errno(host, "cannot open directory", path);
        }
        s = keybay_private_check(host, next, path, 1);
        if (s != KEYBAY_OK) { close(next); return s; }
        current = next;
    }
    *fd = current;
    return KEYBAY_OK;
}
