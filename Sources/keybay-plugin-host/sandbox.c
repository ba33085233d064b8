// SPDX-License-Identifier: Apache-2.0
/*
 * The helper's sandbox (docs/plugins.md, "Isolation: the sandbox"): resource limits, Landlock
 * and a seccomp allow-list, entered before the plugin is loaded for use.
 *
 * Landlock is reached through raw system calls with this file's own copies of the kernel's
 * structures and constants: the build machine's headers may predate the features used (the
 * values are the kernel's ABI and do not change). Each feature is used when the running kernel's
 * Landlock ABI has it; ABI 3 (truncation) is the least this accepts.
 */
#define _GNU_SOURCE
#include "sandbox.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/sched.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

/* ---- Landlock: the kernel's ABI ---- */

struct ll_ruleset_attr {
    uint64_t handled_access_fs;
    uint64_t handled_access_net; /* ABI 4 */
    uint64_t scoped;             /* ABI 6 */
};

struct ll_path_beneath_attr {
    uint64_t allowed_access;
    int32_t parent_fd;
} __attribute__((packed));

#define LL_CREATE_RULESET_VERSION 1u
#define LL_RULE_PATH_BENEATH 1

#define LL_FS_EXECUTE (1ull << 0)
#define LL_FS_WRITE_FILE (1ull << 1)
#define LL_FS_READ_FILE (1ull << 2)
#define LL_FS_READ_DIR (1ull << 3)
#define LL_FS_ALL_ABI_1 ((1ull << 13) - 1) /* remove, make (char, dir, reg, sock, fifo, block, sym) */
#define LL_FS_REFER (1ull << 13)           /* ABI 2 */
#define LL_FS_TRUNCATE (1ull << 14)        /* ABI 3 */
#define LL_FS_IOCTL_DEV (1ull << 15)       /* ABI 5 */
#define LL_NET_BIND_TCP (1ull << 0)        /* ABI 4 */
#define LL_NET_CONNECT_TCP (1ull << 1)
#define LL_SCOPE_ABSTRACT_UNIX (1ull << 0) /* ABI 6 */
#define LL_SCOPE_SIGNAL (1ull << 1)

#ifndef SYS_landlock_create_ruleset
#define SYS_landlock_create_ruleset 444
#define SYS_landlock_add_rule 445
#define SYS_landlock_restrict_self 446
#endif

#define LANDLOCK_MINIMUM_ABI 3

static const char *const system_libraries[] = { "/usr/lib", "/lib", "/lib64", "/usr/lib64", "/usr/local/lib", NULL };
/* Read by the dynamic loader and the C library (the CPU count), and randomness for libraries that open it. */
static const char *const system_files[] = { "/etc/ld.so.cache", "/dev/urandom", "/sys/devices/system/cpu", NULL };

/* ---- the declaration ---- */

static int starts_with(const char *s, const char *prefix) { return strncmp(s, prefix, strlen(prefix)) == 0; }

/* An absolute path without ".", ".." or empty components, below one of `roots`. */
static int plain_path_below(const char *path, const char *const *roots) {
    if (path[0] != '/' || strstr(path, "//") != NULL || strstr(path, "/./") != NULL || strstr(path, "/../") != NULL) return 0;
    size_t n = strlen(path);
    if ((n >= 2 && strcmp(path + n - 2, "/.") == 0) || (n >= 3 && strcmp(path + n - 3, "/..") == 0)) return 0;
    for (size_t i = 0; roots[i] != NULL; i++) {
        size_t r = strlen(roots[i]);
        if (strncmp(path, roots[i], r) == 0 && (path[r] == 0 || path[r] == '/')) return 1;
    }
    return 0;
}

/* One kind of declaration entry: where its paths may lie, which of those roots may not be
   named whole, and whether a trailing '*' is allowed. In the order of sandbox_add_declaration's
   lists in the grant (device, read). unix: entries are the host's to serve and to check. */
typedef struct entry_kind {
    const char *prefix;
    const char *const *roots;
    const char *const *not_whole;
    int star;
    const char *why;
} entry_kind;

static const char *const dev_roots[] = { "/dev", NULL };
static const char *const readable_roots[] = { "/dev", "/sys", "/run", "/etc", "/usr/share", NULL };
static const char *const not_whole_dev[] = { "/dev", "/dev/*", NULL };
static const char *const not_whole_readable[] = { "/dev", "/run", "/etc", NULL };

static const entry_kind entry_kinds[] = {
    { "device:", dev_roots, not_whole_dev, 1, "a device is a path below /dev (a '*' may only end it)" },
    { "read:", readable_roots, not_whole_readable, 0, "a read: path is below /dev, /sys, /run, /etc or /usr/share" },
};

static int listed(const char *path, const char *const *list) {
    for (size_t i = 0; list[i] != NULL; i++)
        if (strcmp(path, list[i]) == 0) return 1;
    return 0;
}

int sandbox_add_declaration(sandbox_grant *grant, const char *entry, const char **why) {
    const char **lists[] = { grant->device, grant->read };
    size_t *counts[] = { &grant->device_count, &grant->read_count };
    for (size_t k = 0; k < sizeof entry_kinds / sizeof entry_kinds[0]; k++) {
        const entry_kind *kind = &entry_kinds[k];
        if (!starts_with(entry, kind->prefix)) continue;
        const char *path = entry + strlen(kind->prefix);
        const char *star = strchr(path, '*');
        int star_ok = star == NULL || (kind->star && star[1] == 0);
        if (!star_ok || !plain_path_below(path, kind->roots) || listed(path, kind->not_whole)) {
            *why = kind->why;
            return -1;
        }
        if (*counts[k] == SANDBOX_MAX_ENTRIES) { *why = "too many entries"; return -1; }
        lists[k][(*counts[k])++] = path;
        return 0;
    }
    *why = "unknown kind of entry (device:, read:, unix: and env: are known)";
    return -1;
}

/* ---- resource limits ---- */

#define MEMORY_LIMIT (4ull << 30)
#define CPU_SECONDS 1800
#define OPEN_FILES 256

static int lower_limit(int resource, rlim_t value) {
    struct rlimit now;
    if (getrlimit(resource, &now) != 0) return -1;
    if (now.rlim_max != RLIM_INFINITY && now.rlim_max < value) value = now.rlim_max;
    struct rlimit next = { value, value };
    return setrlimit(resource, &next);
}

int sandbox_limit_resources(const char **why) {
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) { *why = "cannot set no_new_privs"; return -1; }
    if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0) { *why = "cannot make the helper undumpable"; return -1; }
    if (lower_limit(RLIMIT_CORE, 0) != 0 || lower_limit(RLIMIT_AS, MEMORY_LIMIT) != 0 ||
        lower_limit(RLIMIT_CPU, CPU_SECONDS) != 0 || lower_limit(RLIMIT_NOFILE, OPEN_FILES) != 0) {
        *why = "cannot set the helper's resource limits";
        return -1;
    }
    return 0;
}

/* ---- Landlock ---- */

static int landlock_abi(void) {
    long abi = syscall(SYS_landlock_create_ruleset, NULL, 0, LL_CREATE_RULESET_VERSION);
    return abi < 0 ? 0 : (int)abi;
}

/* Grants `access` on `path` (beneath it, for a directory). A path that does not exist is no
   grant (a library directory this system lacks, a device not plugged in). */
static int allow(int ruleset, const char *path, uint64_t access, uint64_t handled) {
    int fd = open(path, O_PATH | O_CLOEXEC);
    if (fd < 0) return errno == ENOENT || errno == ENOTDIR ? 0 : -1;
    struct stat st;
    if (fstat(fd, &st) != 0) { close(fd); return -1; }
    if (!S_ISDIR(st.st_mode)) access &= LL_FS_EXECUTE | LL_FS_WRITE_FILE | LL_FS_READ_FILE | LL_FS_TRUNCATE | LL_FS_IOCTL_DEV;
    struct ll_path_beneath_attr rule = { .allowed_access = access & handled, .parent_fd = fd };
    long r = syscall(SYS_landlock_add_rule, ruleset, LL_RULE_PATH_BENEATH, &rule, 0);
    close(fd);
    return r == 0 ? 0 : -1;
}

int sandbox_is_system_library(const char *path) {
    return plain_path_below(path, system_libraries);
}

/* A library the plugin needs: granted only when it is an ELF file (the check keeps a path from
   granting anything else). */
int sandbox_is_elf_file(const char *path) {
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY | O_NONBLOCK);
    if (fd < 0) return 0;
    unsigned char magic[4] = { 0 };
    struct stat st;
    int ok = fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && read(fd, magic, 4) == 4 && memcmp(magic, "\177ELF", 4) == 0;
    close(fd);
    return ok;
}

/* Every entry of the device's directory whose name starts with the part before '*'. */
static int allow_devices(int ruleset, const char *pattern, uint64_t access, uint64_t handled) {
    const char *star = strchr(pattern, '*');
    if (star == NULL) return allow(ruleset, pattern, access, handled);
    const char *slash = strrchr(pattern, '/');
    char directory[SANDBOX_MAX_ENTRY + 1];
    size_t dn = (size_t)(slash - pattern);
    memcpy(directory, pattern, dn);
    directory[dn] = 0;
    const char *prefix = slash + 1;
    size_t pn = (size_t)(star - prefix);
    DIR *d = opendir(directory);
    if (d == NULL) return errno == ENOENT ? 0 : -1;
    int result = 0;
    struct dirent *e;
    while (result == 0 && (e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.' || strncmp(e->d_name, prefix, pn) != 0) continue;
        char path[512];
        snprintf(path, sizeof path, "%s/%s", directory, e->d_name);
        result = allow(ruleset, path, access, handled);
    }
    closedir(d);
    return result;
}

static int enter_landlock(const sandbox_grant *grant, const char **why) {
    int abi = landlock_abi();
    if (abi < LANDLOCK_MINIMUM_ABI) { *why = "this kernel has no Landlock ABI 3 (Linux 6.2 or later)"; return -1; }
    uint64_t handled = LL_FS_ALL_ABI_1 | LL_FS_REFER | LL_FS_TRUNCATE | (abi >= 5 ? LL_FS_IOCTL_DEV : 0);
    struct ll_ruleset_attr attr = { .handled_access_fs = handled };
    size_t attr_size = offsetof(struct ll_ruleset_attr, handled_access_net);
    if (abi >= 4) { attr.handled_access_net = LL_NET_BIND_TCP | LL_NET_CONNECT_TCP; attr_size = offsetof(struct ll_ruleset_attr, scoped); }
    if (abi >= 6) { attr.scoped = LL_SCOPE_ABSTRACT_UNIX | LL_SCOPE_SIGNAL; attr_size = sizeof attr; }
    int ruleset = (int)syscall(SYS_landlock_create_ruleset, &attr, attr_size, 0);
    if (ruleset < 0) { *why = "cannot create a Landlock ruleset"; return -1; }
    const uint64_t read = LL_FS_READ_FILE | LL_FS_READ_DIR | LL_FS_EXECUTE;
    const uint64_t device = LL_FS_READ_FILE | LL_FS_WRITE_FILE | LL_FS_IOCTL_DEV;
    int failed = 0;
    for (size_t i = 0; system_libraries[i] != NULL; i++) failed |= allow(ruleset, system_libraries[i], read, handled);
    for (size_t i = 0; system_files[i] != NULL; i++) failed |= allow(ruleset, system_files[i], read, handled);
    failed |= allow(ruleset, "/dev/null", LL_FS_READ_FILE | LL_FS_WRITE_FILE, handled);
    failed |= allow(ruleset, grant->plugin_path, LL_FS_READ_FILE | LL_FS_EXECUTE, handled);
    for (size_t i = 0; i < grant->library_count; i++) {
        if (sandbox_is_elf_file(grant->library[i])) failed |= allow(ruleset, grant->library[i], LL_FS_READ_FILE | LL_FS_EXECUTE, handled);
    }
    if (grant->library_path != NULL) {
        char *copy = strdup(grant->library_path), *saved = NULL;
        for (char *d = copy ? strtok_r(copy, ":", &saved) : NULL; d != NULL; d = strtok_r(NULL, ":", &saved)) {
            if (d[0] == '/') failed |= allow(ruleset, d, read, handled);
        }
        free(copy);
    }
    for (size_t i = 0; i < grant->read_count; i++) failed |= allow(ruleset, grant->read[i], LL_FS_READ_FILE | LL_FS_READ_DIR, handled);
    for (size_t i = 0; i < grant->device_count; i++) failed |= allow_devices(ruleset, grant->device[i], device, handled);
    if (failed) { close(ruleset); *why = "cannot grant the plugin's paths to its sandbox"; return -1; }
    long r = syscall(SYS_landlock_restrict_self, ruleset, 0);
    close(ruleset);
    if (r != 0) { *why = "cannot enter the Landlock sandbox"; return -1; }
    return 0;
}

/* ---- seccomp ---- */

#if defined(__x86_64__)
#define SECCOMP_ARCH AUDIT_ARCH_X86_64
#define X32_SYSCALL_BIT 0x40000000u
#elif defined(__aarch64__)
#define SECCOMP_ARCH AUDIT_ARCH_AARCH64
#else
#error "keybay-plugin-host's seccomp filter knows x86_64 and aarch64"
#endif

/* System calls a plugin may make without condition: memory, files through the descriptors
   Landlock let it open, time, its own signals, waiting, randomness. Anything absent (ptrace,
   process_vm_*, execve, fork and vfork, kill, setsid and setpgid, chmod and chown, mount, bpf,
   io_uring, ...) fails with EPERM. clone is allowed below for threads only. */
static const int allowed_calls[] = {
    SYS_read, SYS_write, SYS_readv, SYS_writev, SYS_pread64, SYS_pwrite64, SYS_close, SYS_close_range,
    SYS_fstat, SYS_newfstatat, SYS_statx, SYS_lseek, SYS_fstatfs, SYS_statfs, SYS_getdents64,
    SYS_openat, SYS_faccessat, SYS_faccessat2, SYS_readlinkat, SYS_getcwd, SYS_fcntl, SYS_dup, SYS_dup3,
    SYS_pipe2, SYS_ppoll, SYS_pselect6, SYS_epoll_create1, SYS_epoll_ctl, SYS_epoll_pwait, SYS_eventfd2,
    SYS_ioctl, SYS_fsync, SYS_fdatasync, SYS_flock,
    SYS_mmap, SYS_munmap, SYS_mprotect, SYS_mremap, SYS_madvise, SYS_brk, SYS_mlock, SYS_munlock,
    SYS_mlock2, SYS_membarrier, SYS_memfd_create,
    SYS_rt_sigaction, SYS_rt_sigprocmask, SYS_rt_sigreturn, SYS_sigaltstack, SYS_rt_sigtimedwait,
    SYS_rt_sigsuspend, SYS_rt_sigpending, SYS_epoll_pwait2, SYS_getcpu,
    SYS_futex, SYS_set_robust_list, SYS_get_robust_list, SYS_set_tid_address, SYS_rseq,
    SYS_exit, SYS_exit_group, SYS_wait4, SYS_restart_syscall,
    SYS_getpid, SYS_gettid, SYS_getppid, SYS_getuid, SYS_geteuid, SYS_getgid, SYS_getegid, SYS_getgroups,
    SYS_getresuid, SYS_getresgid, SYS_uname, SYS_sysinfo, SYS_getrandom, SYS_getrusage, SYS_getpriority,
    SYS_clock_gettime, SYS_clock_getres, SYS_clock_nanosleep, SYS_nanosleep, SYS_gettimeofday,
    SYS_sched_yield, SYS_sched_getaffinity, SYS_sched_getparam, SYS_sched_getscheduler,
    /* the socket to the host (fd 3) and the sockets the host connected for it (socket and
       socketpair are never allowed) */
    SYS_connect, SYS_sendto, SYS_sendmsg, SYS_recvfrom, SYS_recvmsg, SYS_shutdown, SYS_getsockopt,
    SYS_setsockopt, SYS_getsockname, SYS_getpeername,
#if defined(__x86_64__)
    SYS_open, SYS_stat, SYS_lstat, SYS_access, SYS_readlink, SYS_dup2, SYS_pipe, SYS_poll, SYS_select,
    SYS_epoll_create, SYS_epoll_wait, SYS_eventfd, SYS_time, SYS_arch_prctl, SYS_getdents, SYS_pause,
#endif
};

#define MAX_FILTER 512
typedef struct filter { struct sock_filter insn[MAX_FILTER]; unsigned short length; } filter;

static void emit(filter *f, struct sock_filter insn) { if (f->length < MAX_FILTER) f->insn[f->length++] = insn; }
#define STMT(code, k) ((struct sock_filter)BPF_STMT(code, k))
#define JUMP(code, k, jt, jf) ((struct sock_filter)BPF_JUMP(code, k, jt, jf))
#define LOAD_NR STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr))
#define LOAD_ARG_LOW(i) STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[i]))
#define LOAD_ARG_HIGH(i) STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[i]) + 4)
#define ALLOW STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW)
#define REFUSE STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (EPERM & SECCOMP_RET_DATA))

/* nr == call && (low 32 bits of argument `arg`) == value: allowed. Leaves the accumulator reloaded with nr. */
static void allow_if_argument(filter *f, int call, int arg, uint32_t value) {
    emit(f, JUMP(BPF_JMP | BPF_JEQ | BPF_K, (uint32_t)call, 0, 3));
    emit(f, LOAD_ARG_LOW(arg));
    emit(f, JUMP(BPF_JMP | BPF_JEQ | BPF_K, value, 0, 1));
    emit(f, ALLOW);
    emit(f, LOAD_NR);
}

static int enter_seccomp(const char **why) {
    filter f = { .length = 0 };
    emit(&f, STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)));
    emit(&f, JUMP(BPF_JMP | BPF_JEQ | BPF_K, SECCOMP_ARCH, 1, 0));
    emit(&f, STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS));
    emit(&f, LOAD_NR);
#if defined(__x86_64__)
    /* The x32 numbers reach the same kernel code under other numbers: refused whole. */
    emit(&f, JUMP(BPF_JMP | BPF_JGE | BPF_K, X32_SYSCALL_BIT, 0, 1));
    emit(&f, REFUSE);
#endif
    for (size_t i = 0; i < sizeof allowed_calls / sizeof allowed_calls[0]; i++) {
        emit(&f, JUMP(BPF_JMP | BPF_JEQ | BPF_K, (uint32_t)allowed_calls[i], 0, 1));
        emit(&f, ALLOW);
    }
    /* Threads, never processes: clone only with CLONE_THREAD, so nothing the plugin starts can
       outlive the helper (the flags are clone's first argument on x86_64 and aarch64). clone3
       passes its flags in memory, which seccomp cannot read: it answers ENOSYS, and the C
       library falls back to clone. */
    emit(&f, JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_clone, 0, 4));
    emit(&f, LOAD_ARG_LOW(0));
    emit(&f, JUMP(BPF_JMP | BPF_JSET | BPF_K, CLONE_THREAD, 0, 1));
    emit(&f, ALLOW);
    emit(&f, LOAD_NR);
    emit(&f, JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_clone3, 0, 1));
    emit(&f, STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (ENOSYS & SECCOMP_RET_DATA)));
    /* Signals to this process's own threads only (raise, abort, the Swift runtime). */
    allow_if_argument(&f, SYS_tgkill, 0, (uint32_t)getpid());
    /* prctl: the thread's name, read or set. */
    allow_if_argument(&f, SYS_prctl, 0, PR_SET_NAME);
    allow_if_argument(&f, SYS_prctl, 0, PR_GET_NAME);
    /* prlimit64 reading a limit (new_limit NULL), never raising one. */
    emit(&f, JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_prlimit64, 0, 6));
    emit(&f, LOAD_ARG_LOW(2));
    emit(&f, JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0, 0, 3));
    emit(&f, LOAD_ARG_HIGH(2));
    emit(&f, JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0, 0, 1));
    emit(&f, ALLOW);
    emit(&f, LOAD_NR);
    emit(&f, REFUSE);
    if (f.length == MAX_FILTER) { *why = "the seccomp filter is too long"; return -1; }
    struct sock_fprog program = { .len = f.length, .filter = f.insn };
    if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &program, 0, 0) != 0) { *why = "cannot enter the seccomp filter"; return -1; }
    return 0;
}

int sandbox_enter(const sandbox_grant *grant, const char **why) {
    if (enter_landlock(grant, why) != 0) return -1;
    /* No socket of its own for any plugin: the host connects declared unix: sockets for it. */
    return enter_seccomp(why);
}
