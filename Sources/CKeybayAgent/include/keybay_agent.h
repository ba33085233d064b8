// SPDX-License-Identifier: Apache-2.0
/*
 * keybay_agent.h — what the keybay agent and its clients need of Linux that Swift's Glibc module
 * does not offer (they are behind _GNU_SOURCE or in <sys/prctl.h>, which it leaves out): the
 * peer's credentials of a Unix socket, accept4, the process's dumpable flag, the termination
 * signals as a flag, and a detached start of the agent. libc only. Each returns 0 (or a
 * descriptor), or -1 with errno set.
 */
#ifndef KEYBAY_AGENT_H
#define KEYBAY_AGENT_H

#include <sys/types.h>

/* The uid and pid of the process at the other end of the connected Unix socket `fd`
 * (SO_PEERCRED: for a client, the agent that called listen; for the agent, the client that
 * called connect). */
int keybay_peer_credentials(int fd, uid_t *uid, pid_t *pid);

/* accept4 with SOCK_CLOEXEC: the connection's descriptor. */
int keybay_accept(int listener);

/* prctl(PR_SET_DUMPABLE, 0), checked with PR_GET_DUMPABLE: no core dump, and no ptrace attach
 * or /proc/PID/mem read by other processes of the same user. */
int keybay_make_undumpable(void);

/* Whether the process is dumpable now (1) or not (0); -1 with errno. */
int keybay_dumpable(void);

/* SIGTERM, SIGINT and SIGHUP set a flag instead of ending the process (no SA_RESTART, so a
 * blocking poll returns EINTR); keybay_termination_signal() gives the signal seen, 0 if none. */
int keybay_catch_termination(void);
int keybay_termination_signal(void);

/* Closes every descriptor from `first` up (close_range). */
int keybay_close_from(int first);

/* Starts `path` with `argv` and `envp` detached, as gpg-agent is: a session of its own
 * (setsid), standard input, output and error on /dev/null, every other descriptor closed, the
 * signal mask and dispositions reset. `*pid` is the child's. Returns 0 or an errno value. */
int keybay_spawn_detached(const char *path, char *const argv[], char *const envp[], pid_t *pid);

#endif
