// SPDX-License-Identifier: Apache-2.0
/* See include/keybay_file_attributes.h. */
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <sys/xattr.h>

#include "keybay_file_attributes.h"

int keybay_set_attribute(int fd, const char *name, const void *value, size_t length) {
    return fsetxattr(fd, name, value, length, 0);
}

ssize_t keybay_get_attribute(int fd, const char *name, void *value, size_t capacity) {
    return fgetxattr(fd, name, value, capacity);
}

int keybay_remove_attribute(int fd, const char *name) {
    return fremovexattr(fd, name);
}

/* The kernel reads and writes an int for these, whatever the macros' declared long says. */
int keybay_get_nodump(int fd, int *nodump) {
    int flags = 0;
    if (ioctl(fd, FS_IOC_GETFLAGS, &flags) != 0) return -1;
    *nodump = (flags & FS_NODUMP_FL) != 0;
    return 0;
}

int keybay_set_nodump(int fd, int nodump) {
    int flags = 0;
    if (ioctl(fd, FS_IOC_GETFLAGS, &flags) != 0) return -1;
    int wanted = nodump ? (flags | FS_NODUMP_FL) : (flags & ~FS_NODUMP_FL);
    if (wanted == flags) return 0;
    return ioctl(fd, FS_IOC_SETFLAGS, &wanted);
}
