// SPDX-License-Identifier: Apache-2.0
/* Starting keybay-plugin-host for the proxy (proxy_internal.h): one spawner thread a process. */
#define _GNU_SOURCE
#include "proxy_internal.h"

#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

extern char **environ;

/* PR_SET_PDEATHSIG fires when the thread that started the helper ends, not the process: helpers
   are started from one thread that lives as long as the process (one per process: a forked
   child starts its own). */

static pthread_mutex_t spawn_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t spawn_changed = PTHREAD_COND_INITIALIZER;
static spawn_request *spawn_pending;
static pid_t spawner_of; /* the process whose spawner thread runs */

/* In a forked child only the forking thread exists: the spawner thread, and any caller waiting
   for it, stayed in the parent. Their lock and condition variable are copied as they were (held,
   with waiters the child does not have: a broadcast would wait for them for ever), so the child
   starts from fresh ones and, on its first start, a spawner of its own. */
static void forget_parent_spawner(void) {
    spawn_lock = (pthread_mutex_t)PTHREAD_MUTEX_INITIALIZER;
    spawn_changed = (pthread_cond_t)PTHREAD_COND_INITIALIZER;
    spawn_pending = NULL;
    spawner_of = 0;
}

static pthread_once_t fork_handler_once = PTHREAD_ONCE_INIT;
static void install_fork_handler(void) { (void)pthread_atfork(NULL, NULL, forget_parent_spawner); }

static void run_spawn(spawn_request *r) {
    posix_spawn_file_actions_t actions;
    posix_spawnattr_t attributes;
    sigset_t none, all;
    sigemptyset(&none);
    sigfillset(&all);
    sigdelset(&all, SIGKILL);
    sigdelset(&all, SIGSTOP);
    int e = posix_spawn_file_actions_init(&actions);
    if (e == 0) {
        e = posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDWR, 0);
        if (e == 0) e = posix_spawn_file_actions_adddup2(&actions, 0, 1);
        if (e == 0) e = posix_spawn_file_actions_adddup2(&actions, 0, 2);
        /* child_fd is above 3 (see start_helper), so this dup2 clears its close-on-exec flag */
        if (e == 0) e = posix_spawn_file_actions_adddup2(&actions, r->child_fd, 3);
        if (e == 0) e = posix_spawnattr_init(&attributes);
        if (e == 0) {
            /* A process group of its own (pgid = its pid), which end_helper kills whole. */
            e = posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETPGROUP);
            if (e == 0) e = posix_spawnattr_setpgroup(&attributes, 0);
            if (e == 0) e = posix_spawnattr_setsigmask(&attributes, &none);
            if (e == 0) e = posix_spawnattr_setsigdefault(&attributes, &all);
            if (e == 0) e = posix_spawn(&r->pid, r->argv[0], &actions, &attributes, r->argv, r->envp);
            posix_spawnattr_destroy(&attributes);
        }
        posix_spawn_file_actions_destroy(&actions);
    }
    r->error = e;
}

static void *spawner(void *unused) {
    (void)unused;
    pthread_mutex_lock(&spawn_lock);
    for (;;) {
        while (spawn_pending == NULL) pthread_cond_wait(&spawn_changed, &spawn_lock);
        spawn_request *r = spawn_pending;
        run_spawn(r);
        /* The spawner alone takes a request off: a caller that cleared it after its own was done
           could clear the next caller's, which then waited for ever. */
        r->done = 1;
        spawn_pending = NULL;
        pthread_cond_broadcast(&spawn_changed);
    }
    return NULL;
}

int isolation_spawn_helper(spawn_request *r) {
    (void)pthread_once(&fork_handler_once, install_fork_handler);
    pthread_mutex_lock(&spawn_lock);
    if (spawner_of != getpid()) {
        pthread_attr_t attributes;
        pthread_t thread;
        pthread_attr_init(&attributes);
        pthread_attr_setdetachstate(&attributes, PTHREAD_CREATE_DETACHED);
        /* The spawner blocks no signal the host expects to handle elsewhere. */
        sigset_t all, old;
        sigfillset(&all);
        pthread_sigmask(SIG_SETMASK, &all, &old);
        int e = pthread_create(&thread, &attributes, spawner, NULL);
        pthread_sigmask(SIG_SETMASK, &old, NULL);
        pthread_attr_destroy(&attributes);
        if (e != 0) { pthread_mutex_unlock(&spawn_lock); return e; }
        spawner_of = getpid();
        spawn_pending = NULL;
    }
    while (spawn_pending != NULL) pthread_cond_wait(&spawn_changed, &spawn_lock);
    spawn_pending = r;
    pthread_cond_broadcast(&spawn_changed);
    while (!r->done) pthread_cond_wait(&spawn_changed, &spawn_lock);
    pthread_mutex_unlock(&spawn_lock);
    return r->error;
}

/* The host's environment without the dynamic loader's injection variables: the helper is not
   the host's to instrument (a preloaded fault-injection shim would count the helper's calls). */
char **isolation_helper_environment(void) {
    size_t n = 0;
    while (environ != NULL && environ[n] != NULL) n++;
    char **env = calloc(n + 1, sizeof *env);
    if (env == NULL) return NULL;
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        if (strncmp(environ[i], "LD_PRELOAD=", 11) == 0 || strncmp(environ[i], "LD_AUDIT=", 9) == 0) continue;
        env[k++] = environ[i];
    }
    return env;
}
