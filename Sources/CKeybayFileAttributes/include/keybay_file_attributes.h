// SPDX-License-Identifier: Apache-2.0
/*
 * keybay_file_attributes.h — the file attributes the core sets on its directories (the backup
 * markers, Sources/Keybay/Storage/BackupExclusion.swift): user extended attributes and the
 * nodump flag, neither of which Swift's Glibc module offers (<sys/xattr.h> is not in it, and
 * FS_IOC_GETFLAGS is a macro Swift cannot import). Each returns 0, or -1 with errno set.
 */
#ifndef KEYBAY_FILE_ATTRIBUTES_H
#define KEYBAY_FILE_ATTRIBUTES_H

#include <stddef.h>
#include <sys/types.h>

int keybay_set_attribute(int fd, const char *name, const void *value, size_t length);
/* The attribute's length (at most `capacity` bytes copied into `value`), or -1 with errno. */
ssize_t keybay_get_attribute(int fd, const char *name, void *value, size_t capacity);
int keybay_remove_attribute(int fd, const char *name);

/* Whether FS_NODUMP_FL is set (*nodump 0 or 1), through FS_IOC_GETFLAGS. */
int keybay_get_nodump(int fd, int *nodump);
/* Sets or clears FS_NODUMP_FL, keeping the other flags (FS_IOC_GETFLAGS, then FS_IOC_SETFLAGS). */
int keybay_set_nodump(int fd, int nodump);

#endif
