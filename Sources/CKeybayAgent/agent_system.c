// SPDX-License-Identifier: Apache-2.0
#define _GNU_SOURCE
#include "keybay_agent.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <unistd.h>

int keybay_peer_credentials(int fd, uid_t *uid, pid_t *pid) {
    struct ucred credentials;
    socklen_t length = sizeof credentials;
    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &credentials, &length) != 0) return -1;
    if (length != sizeof credentials) { errno = EPROTO; return -1; }
    *uid = credentials.uid;
    *pid = credentials.pid;
    return 0;
}

int keybay_accept(int listener) {
    return accept4(listener, NULL, NULL, SOCK_CLOEXEC);
}

int keybay_make_undumpable(void) {
    if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0) return -1;
    if (keybay_dumpable() != 0) { errno = EPERM; return -1; }
    return 0;
}

int keybay_dumpable(void) {
    return prctl(PR_GET_DUMPABLE, 0, 0, 0, 0);
}

static volatile sig_atomic_t termination_signal = 0;

static void note_termination(int signal_number) { termination_signal = signal_number; }

int keybay_catch_termination(void) {
    struct sigaction action;
    memset(&action, 0, sizeof action);
    action.sa_handler = note_termination;
    sigemptyset(&action.sa_mask);
    const int signals[] = {SIGTERM, SIGINT, SIGHUP};
    for (unsigned i = 0; i < sizeof signals / sizeof signals[0]; i++) {
        if (sigaction(signals[i], &action, NULL) != 0) return -1;
    }
    return 0;
}

int keybay_termination_signal(void) { return termination_signal; }

int keybay_close_from(int first) {
    return close_range((unsigned)first, ~0U, 0);
}

int keybay_spawn_detached(const char *path, char *const argv[], char *const envp[], pid_t *pid) {
    posix_spawn_file_actions_t actions;
    posix_spawnattr_t attributes;
    int rc = posix_spawn_file_actions_init(&actions);
    if (rc != 0) return rc;
    rc = posix_spawnattr_init(&attributes);
    if (rc != 0) { posix_spawn_file_actions_destroy(&actions); return rc; }
    sigset_t none, all;
    sigemptyset(&none);
    sigfillset(&all);
    if ((rc = posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)) == 0
        && (rc = posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)) == 0
        && (rc = posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)) == 0
        && (rc = posix_spawn_file_actions_addclosefrom_np(&actions, 3)) == 0
        && (rc = posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETSID | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF)) == 0
        && (rc = posix_spawnattr_setsigmask(&attributes, &none)) == 0
        && (rc = posix_spawnattr_setsigdefault(&attributes, &all)) == 0) {
        rc = posix_spawn(pid, path, &actions, &attributes, argv, envp);
    }
    posix_spawnattr_destroy(&attributes);
    posix_spawn_file_actions_destroy(&actions);
    return rc;
}
