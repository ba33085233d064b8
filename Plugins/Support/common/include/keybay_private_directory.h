// SPDX-License-Identifier: Apache-2.0
/*
 * keybay_private_directory.h — private directories, the C side of the rules Sources/Keybay's
 * Storage/PrivateDirectory.swift keeps for the core (PrivateDirectoryParityTests runs both on the
 * same planted cases): below a base directory, each level is opened without following links,
 * made 0700 (whatever the umask) when missing and creating, and must be a directory owned by the
 * effective user with no group or other bits; anything else is refused (INSECURE, with the
 * reason symbolic-link, wrong-type, not-owner or mode), never repaired. Every failure has called
 * set_error with the path. Not installed, not part of the ABI.
 */
#ifndef KEYBAY_PRIVATE_DIRECTORY_H
#define KEYBAY_PRIVATE_DIRECTORY_H

#include <stddef.h>

#include "keybay_plugin.h"

#pragma GCC visibility push(hidden)

/* errno as INSECURE (EACCES, EPERM) or IO, with "what path: reason". */
keybay_status keybay_private_fail_errno(const keybay_host *host, const char *what, const char *path);

/* The open `fd` is ours and private: a directory (or, `directory` 0, a regular file) owned by the
   effective user, without group or other bits (0700, 0600). */
keybay_status keybay_private_check(const keybay_host *host, int fd, const char *path, int directory);

/* Opens base/components[0]/.../components[count-1] (creating the missing levels when `create`,
   and the base itself as `mkdir -p` would, its new levels 0700). The base is the user's (an XDG
   base directory, followed if a link); every component is checked. *fd = -1 (and OK) when a level
   is missing and !create. `path` receives the last level's path. */
keybay_status keybay_private_open(const keybay_host *host, const char *base, const char *const *components, size_t count,
                                  int create, int *fd, char *path, size_t path_size);

#pragma GCC visibility pop

#endif /* KEYBAY_PRIVATE_DIRECTORY_H */
