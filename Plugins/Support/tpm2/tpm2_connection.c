// SPDX-License-Identifier: Apache-2.0
/* The TPM plugins' shared connection to tpm2-tss: see include/keybay_tpm2.h. */
#define _POSIX_C_SOURCE 200809L

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
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
#define DEFAULT_DEVICE KEYBAY_TPM2_DEFAULT_DEVICE
#define FALLBACK_DEVICE KEYBAY_TPM2_FALLBACK_DEVICE
#define TIMEOUT_MAX_MS KEYBAY_TPM2_TIMEOUT_MAX_MS
#define TCTI_MAX_BYTES KEYBAY_TPM2_TCTI_MAX_BYTES
typedef keybay_tpm2_bounded bounded;

/* ---------------------------------------------------------------- tpm2-tss, opened on first use */

static const char *const library_names[KEYBAY_TSS_LIBRARIES] = {
    "libtss2-esys.so.0", "libtss2-sys.so.1", "libtss2-tctildr.so.0", "libtss2-mu.so.0", "libtss2-rc.so.0", "libcrypto.so.3"
};

struct keybay_tss keybay_tss;

static pthread_once_t tss_once = PTHREAD_ONCE_INIT;
static int tss_ok;
static char tss_error[512];

static void tss_load(void) {
    /* tss2 logs warnings to standard error on its own; the plugin reports every failure through
       set_error instead. TSS2_LOG, when the user set it, is left alone. */
    setenv("TSS2_LOG", "all+none", 0);
    void *handles[KEYBAY_TSS_LIBRARIES] = { 0 };
    struct keybay_tss lib;
    memset(&lib, 0, sizeof lib);
    for (int i = 0; i < KEYBAY_TSS_LIBRARIES; i++) {
        dlerror();
        handles[i] = dlopen(library_names[i], RTLD_NOW | RTLD_LOCAL);
        if (!handles[i]) {
            const char *why = dlerror();
            snprintf(tss_error, sizeof tss_error, "%s", why ? why : library_names[i]);
            for (int j = 0; j < i; j++) dlclose(handles[j]);
            return;
        }
    }
#define TSS_RESOLVE(l, name)                                                              \
    if ((lib.name = __extension__(__typeof__(name) *)dlsym(handles[l], #name)) == NULL) { \
        snprintf(tss_error, sizeof tss_error, "%s has no %s", library_names[l], #name);   \
        for (int j = 0; j < KEYBAY_TSS_LIBRARIES; j++) dlclose(handles[j]);                          \
        return;                                                                           \
    }
    KEYBAY_TSS_FUNCTIONS(TSS_RESOLVE)
#undef TSS_RESOLVE
    keybay_tss = lib; /* the handles stay open for the life of the process */
    tss_ok = 1;
}

const char *keybay_tpm2_load_tss(void) {
    pthread_once(&tss_once, tss_load);
    return tss_ok ? NULL : tss_error;
}

/* ---------------------------------------------------------------- errors */

int keybay_tpm2_rc_is_tpm(TSS2_RC rc) { return (rc & TSS2_RC_LAYER_MASK) == TSS2_TPM_RC_LAYER; }

/* A TPM response code without the handle, session or parameter number. */
TSS2_RC keybay_tpm2_rc_base(TSS2_RC rc) {
    if (!keybay_tpm2_rc_is_tpm(rc)) return rc;
    return (rc & TPM2_RC_FMT1) ? (rc & (TPM2_RC_FMT1 | 0x3Fu)) : (rc & 0xFFFu);
}

/* The TCTI, or the TPM behind it, cannot be reached (as opposed to the TPM refusing a command). */
static int rc_unreachable(TSS2_RC rc) {
    TSS2_RC layer = rc & TSS2_RC_LAYER_MASK;
    return layer == TSS2_TCTI_RC_LAYER || rc == TSS2_ESYS_RC_IO_ERROR ||
           rc == TSS2_ESYS_RC_TRY_AGAIN || rc == TSS2_ESYS_RC_MALFORMED_RESPONSE;
}

/* ---------------------------------------------------------------- which TPM, and for how long */

/* The TCTIs KEYBAY_TPM2_TCTI may name: tpm2-tss's own, each loaded as libtss2-tcti-<name>.so.0
   from the system's library path. Never a library path, and none that records the traffic
   (pcap) or runs a command (cmd). */
static const char *const tcti_names[] = { "device", "swtpm", "mssim", "tabrmd" };

/* `value` with anything but printable ASCII shown as '?', cut at TCTI_MAX_BYTES. */
static void printable(char *out, size_t size, const char *value) {
    size_t i = 0;
    for (; value[i] && i + 1 < size && i < TCTI_MAX_BYTES; i++) out[i] = value[i] >= 0x20 && value[i] < 0x7f ? value[i] : '?';
    out[i] = 0;
}

/* Without KEYBAY_TPM2_TCTI, the device alone: /dev/tpmrm0, or /dev/tpm0 where there is no
   /dev/tpmrm0. Never a simulator or the network, which only the variable can name. */
static const char *default_device(void) {
    struct stat st;
    return stat(DEFAULT_DEVICE, &st) != 0 && errno == ENOENT && stat(FALLBACK_DEVICE, &st) == 0 ? FALLBACK_DEVICE : DEFAULT_DEVICE;
}

void keybay_tpm2_describe_tcti(char *out, size_t size) {
    const char *conf = getenv("KEYBAY_TPM2_TCTI");
    char shown[TCTI_MAX_BYTES + 1];
    if (conf && *conf) { printable(shown, sizeof shown, conf); snprintf(out, size, "the TPM at KEYBAY_TPM2_TCTI=%s", shown); }
    else snprintf(out, size, "the TPM at %s (the default: the device alone, KEYBAY_TPM2_TCTI unset)", default_device());
}

/* Which TCTI library, with which configuration; a value that is not a TCTI name and its
   configuration is refused (INVALID_OPTION: the CLI's exit 2) before anything is loaded. */
static keybay_status choose_tcti(const keybay_host *host, keybay_tpm2 *t) {
    const char *value = getenv("KEYBAY_TPM2_TCTI");
    keybay_tpm2_describe_tcti(t->where, sizeof t->where);
    if (!value || !*value) {
        t->device = default_device();
        snprintf(t->library, sizeof t->library, "libtss2-tcti-device.so.0");
        snprintf(t->conf, sizeof t->conf, "%s", t->device);
        return KEYBAY_OK;
    }
    const char *colon = strchr(value, ':');
    size_t name_length = colon ? (size_t)(colon - value) : strlen(value);
    const char *name = NULL;
    for (size_t i = 0; i < sizeof tcti_names / sizeof tcti_names[0]; i++)
        if (strlen(tcti_names[i]) == name_length && memcmp(tcti_names[i], value, name_length) == 0) name = tcti_names[i];
    if (!name || strlen(value) >= TCTI_MAX_BYTES) {
        char shown[TCTI_MAX_BYTES + 1];
        printable(shown, sizeof shown, value);
        keybay_host_error_reason(host, "tcti-refused");
        return fail(host, KEYBAY_ERR_INVALID_OPTION, "KEYBAY_TPM2_TCTI=%s is not a TCTI the %s uses: give device, swtpm, mssim or "
                    "tabrmd and its configuration (e.g. device:/dev/tpmrm0, swtpm:host=127.0.0.1,port=2321), never a library path%s",
                    shown, t->user, strlen(value) >= TCTI_MAX_BYTES ? " (and at most 255 bytes)" : "");
    }
    snprintf(t->library, sizeof t->library, "libtss2-tcti-%s.so.0", name);
    snprintf(t->conf, sizeof t->conf, "%s", colon ? colon + 1 : "");
    if (strcmp(name, "device") == 0) t->device = t->conf[0] ? t->conf : DEFAULT_DEVICE;
    return KEYBAY_OK;
}

/* KEYBAY_TPM2_TIMEOUT_MS: milliseconds, 1 to 30000 (a larger number is 30000); unset, 30000. */
static keybay_status choose_timeout(const keybay_host *host, keybay_tpm2 *t) {
    const char *value = getenv("KEYBAY_TPM2_TIMEOUT_MS");
    t->timeout_ms = TIMEOUT_MAX_MS;
    if (!value || !*value) return KEYBAY_OK;
    long ms = 0; /* all digits; saturates past the cap */
    for (const char *p = value; *p && ms >= 0; p++) ms = *p < '0' || *p > '9' ? -1 : ms > TIMEOUT_MAX_MS ? ms : ms * 10 + (*p - '0');
    if (ms < 1) {
        char shown[32];
        printable(shown, sizeof shown, value);
        keybay_host_error_reason(host, "timeout-refused");
        return fail(host, KEYBAY_ERR_INVALID_OPTION, "KEYBAY_TPM2_TIMEOUT_MS=%s: give the %s's bound in milliseconds, 1 to 30000", shown, t->user);
    }
    t->timeout_ms = ms < TIMEOUT_MAX_MS ? ms : TIMEOUT_MAX_MS;
    return KEYBAY_OK;
}

static long remaining_ms(const keybay_tpm2 *t) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (long)(t->deadline.tv_sec - now.tv_sec) * 1000 + (t->deadline.tv_nsec - now.tv_nsec) / 1000000;
}

/* ---------------------------------------------------------------- one process at a time

   Without a resource manager (swtpm's socket, /dev/tpm0) the TPM's few object slots are shared
   by every process using it, and one that finds them full flushes the others' objects. So this
   user's processes take turns: <state_home>/keybay/tpm2-<hash of the TCTI>.lock, held from the
   TPM's opening to its closing, waited for until the operation's deadline. */

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

/* ---------------------------------------------------------------- a TCTI that gives up

   tss2's own TCTIs wait as long as the TPM takes: swtpm's and mssim's block on their sockets
   (while connecting and initializing too), and ESAPI's synchronous calls wait for ever whatever
   timeout is set. So the TCTI tss2 loads runs on a thread of its own, and the TCTI Esys talks
   to (this one) hands each call over (initialization, every command) and waits for it until
   the operation's deadline. A command is one handover: the thread sends it and reads the
   response at once, which the receive calls then take (two handovers a command cost two thread
   switches more, each a wait for a core on a busy machine). A TPM that has not answered by then is abandoned:
   the thread finishes its call whenever the TPM answers, or never, then finalizes the TCTI and
   frees what it holds; nothing of the caller's is touched after the caller has returned. */

enum { OP_NONE, OP_INIT, OP_TRANSMIT, OP_FINALIZE };

struct keybay_tpm2_bounded {
    TSS2_TCTI_CONTEXT_COMMON_V2 common; /* first: Esys calls through it */
    pthread_mutex_t mutex;
    pthread_cond_t changed;
    int refs;                 /* the caller's and the thread's; the last one frees */
    int op;                   /* the call the thread is to make; OP_NONE once made */
    int abandoned;            /* set by the caller alone, when the deadline passed first */
    TSS2_RC rc;
    TSS2_TCTI_CONTEXT *inner; /* tss2's TCTI */
    struct timespec deadline;
    char library[40], conf[TCTI_MAX_BYTES];
    int have_response;        /* a command was sent: its response (or why none came) is here */
    TSS2_RC received;         /* the reading of that response */
    size_t size;              /* bytes in buffer: the command to send, or the response */
    uint8_t buffer[TPM2_MAX_COMMAND_SIZE > TPM2_MAX_RESPONSE_SIZE ? TPM2_MAX_COMMAND_SIZE : TPM2_MAX_RESPONSE_SIZE];
};

static void bounded_release(bounded *b) {
    pthread_mutex_lock(&b->mutex);
    int last = --b->refs == 0;
    pthread_mutex_unlock(&b->mutex);
    if (!last) return;
    pthread_cond_destroy(&b->changed);
    pthread_mutex_destroy(&b->mutex);
    sodium_free(b); /* wipes the commands and responses (a sealed key's sensitive part, an unsealed key) */
}

/* On the thread, without the mutex: the caller does not touch the buffer while a call is pending. */
static TSS2_RC bounded_perform(bounded *b, int op) {
    TSS2_RC rc = TSS2_RC_SUCCESS;
    size_t size = 0;
    switch (op) {
    case OP_INIT:
        rc = T(Tss2_TctiLdr_Initialize_Ex)(b->library, b->conf[0] ? b->conf : NULL, &b->inner);
        if (rc != TSS2_RC_SUCCESS) b->inner = NULL;
        break;
    case OP_TRANSMIT: /* and the response's reading, into `received` */
        rc = Tss2_Tcti_Transmit(b->inner, b->size, b->buffer);
        sodium_memzero(b->buffer, b->size);
        b->size = 0;
        if (rc != TSS2_RC_SUCCESS) break;
        b->received = Tss2_Tcti_Receive(b->inner, &size, NULL, TSS2_TCTI_TIMEOUT_BLOCK);
        if (b->received == TSS2_RC_SUCCESS) {
            size = sizeof b->buffer;
            b->received = Tss2_Tcti_Receive(b->inner, &size, b->buffer, TSS2_TCTI_TIMEOUT_BLOCK);
        }
        b->size = b->received == TSS2_RC_SUCCESS ? size : 0;
        break;
    case OP_FINALIZE:
        if (b->inner) T(Tss2_TctiLdr_Finalize)(&b->inner);
        break;
    }
    return rc;
}

static void *bounded_thread(void *argument) {
    bounded *b = argument;
    pthread_mutex_lock(&b->mutex);
    for (;;) {
        while (b->op == OP_NONE && !b->abandoned) pthread_cond_wait(&b->changed, &b->mutex);
        if (b->abandoned) break; /* a call handed over but not begun is not made */
        int op = b->op;
        pthread_mutex_unlock(&b->mutex);
        TSS2_RC rc = bounded_perform(b, op);
        pthread_mutex_lock(&b->mutex);
        b->rc = rc;
        b->op = OP_NONE;
        pthread_cond_broadcast(&b->changed);
        if (op == OP_FINALIZE || b->abandoned) break;
    }
    pthread_mutex_unlock(&b->mutex);
    if (b->inner) T(Tss2_TctiLdr_Finalize)(&b->inner); /* abandoned: the TPM answered at last */
    bounded_release(b);
    return NULL;
}

/* Hands `op` to the thread and waits until it is made or the deadline passes (then the TPM is
   abandoned, and this and every later call says so at once). 1 when it was made in time. */
static int bounded_call(bounded *b, int op, TSS2_RC *rc) {
    if (b->abandoned) return 0;
    pthread_mutex_lock(&b->mutex);
    b->op = op;
    pthread_cond_broadcast(&b->changed);
    while (b->op != OP_NONE)
        if (pthread_cond_timedwait(&b->changed, &b->mutex, &b->deadline) == ETIMEDOUT && b->op != OP_NONE) {
            b->abandoned = 1;
            pthread_cond_broadcast(&b->changed);
            break;
        }
    *rc = b->rc;
    pthread_mutex_unlock(&b->mutex);
    return !b->abandoned;
}

static TSS2_RC bounded_transmit(TSS2_TCTI_CONTEXT *context, size_t size, const uint8_t *command) {
    bounded *b = (bounded *)context;
    TSS2_RC rc;
    if (b->abandoned) return TSS2_TCTI_RC_IO_ERROR;
    if (!command || size > sizeof b->buffer) return TSS2_TCTI_RC_BAD_VALUE;
    memcpy(b->buffer, command, size);
    b->size = size;
    b->have_response = 0;
    if (!bounded_call(b, OP_TRANSMIT, &rc)) return TSS2_TCTI_RC_IO_ERROR;
    b->have_response = rc == TSS2_RC_SUCCESS;
    return rc;
}

/* The response the thread read with the command. The caller's timeout is ignored: the deadline
   bounded the wait for it. */
static TSS2_RC bounded_receive(TSS2_TCTI_CONTEXT *context, size_t *size, uint8_t *response, int32_t timeout) {
    (void)timeout;
    bounded *b = (bounded *)context;
    if (b->abandoned) return TSS2_TCTI_RC_IO_ERROR;
    if (!size) return TSS2_TCTI_RC_BAD_REFERENCE;
    if (!b->have_response) return TSS2_TCTI_RC_BAD_SEQUENCE;
    if (b->received != TSS2_RC_SUCCESS) { b->have_response = 0; return b->received; }
    if (!response) { *size = b->size; return TSS2_RC_SUCCESS; }
    if (*size < b->size) { *size = b->size; return TSS2_TCTI_RC_INSUFFICIENT_BUFFER; }
    memcpy(response, b->buffer, b->size);
    *size = b->size;
    sodium_memzero(b->buffer, b->size);
    b->size = 0;
    b->have_response = 0;
    return TSS2_RC_SUCCESS;
}

static keybay_status bounded_start(const keybay_host *host, keybay_tpm2 *t) {
    bounded *b = sodium_malloc(sizeof *b);
    if (!b) return fail(host, KEYBAY_ERR_INTERNAL, "out of memory");
    memset(b, 0, sizeof *b);
    b->common.v1.magic = 0x6b65796261797432ull; /* "keybayt2" */
    b->common.v1.version = 2;
    b->common.v1.transmit = bounded_transmit;
    b->common.v1.receive = bounded_receive;
    b->refs = 2;
    b->deadline = t->deadline;
    memcpy(b->library, t->library, sizeof b->library);
    memcpy(b->conf, t->conf, sizeof b->conf);
    pthread_condattr_t monotonic;
    pthread_attr_t detached;
    int e = pthread_condattr_init(&monotonic);
    if (!e) { e = pthread_condattr_setclock(&monotonic, CLOCK_MONOTONIC); if (!e) e = pthread_cond_init(&b->changed, &monotonic); pthread_condattr_destroy(&monotonic); }
    if (!e && (e = pthread_mutex_init(&b->mutex, NULL)) != 0) pthread_cond_destroy(&b->changed);
    if (e) { sodium_free(b); return fail(host, KEYBAY_ERR_INTERNAL, "cannot set up the TPM's thread: %s", strerror(e)); }
    /* The thread takes no signal: the host's handlers keep running on the host's threads. */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    pthread_t thread;
    if (!(e = pthread_attr_init(&detached))) {
        pthread_attr_setdetachstate(&detached, PTHREAD_CREATE_DETACHED);
        e = pthread_create(&thread, &detached, bounded_thread, b);
        pthread_attr_destroy(&detached);
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (e) {
        pthread_cond_destroy(&b->changed);
        pthread_mutex_destroy(&b->mutex);
        sodium_free(b);
        return fail(host, KEYBAY_ERR_INTERNAL, "cannot start the TPM's thread: %s", strerror(e));
    }
    t->tcti = b;
    return KEYBAY_OK;
}

static void bounded_close(bounded *b) {
    TSS2_RC rc;
    if (!b->abandoned) bounded_call(b, OP_FINALIZE, &rc);
    bounded_release(b);
}

/* ---------------------------------------------------------------- the TPM connection */

/* Why the TPM cannot be used: it did not answer in time; its device is missing, or not this
   user's to use (/dev/tpmrm0 is usually root:tss 0660); or what tss2 said. Each with its reason
   (docs/tpm2-pin.md, "Errors"; the tpm2 root's are the same). */
keybay_status keybay_tpm2_unreachable(const keybay_host *host, const keybay_tpm2 *t, TSS2_RC rc) {
    if (t->tcti && t->tcti->abandoned) {
        keybay_host_error_reason(host, "tpm-timeout");
        return fail(host, KEYBAY_ERR_NOT_AVAILABLE, "%s did not answer within %ld ms (a TPM or simulator that is stopped or hung; "
                    "KEYBAY_TPM2_TIMEOUT_MS sets this bound, at most 30000)", t->where, t->timeout_ms);
    }
    const char *reason = rc ? T(Tss2_RC_Decode)(rc) : "no TCTI";
    const char *device = t->device;
    const char *conf = getenv("KEYBAY_TPM2_TCTI");
    if (device) {
        struct stat st;
        if (stat(device, &st) != 0) {
            keybay_host_error_detail(host, "no-tpm", -1, device);
            if (!conf || !*conf)
                return fail(host, KEYBAY_ERR_NOT_AVAILABLE, "no TPM: neither " DEFAULT_DEVICE " nor " FALLBACK_DEVICE " exists (no TPM 2.0 "
                            "here, or its driver is not loaded); a simulator or another TPM is used only when KEYBAY_TPM2_TCTI names it (%s)", reason);
            return fail(host, KEYBAY_ERR_NOT_AVAILABLE, "no TPM: %s does not exist (no TPM 2.0 here, or its driver is not loaded; "
                        "set KEYBAY_TPM2_TCTI to reach another one) (%s)", device, reason);
        }
        if (access(device, R_OK | W_OK) != 0) {
            struct group *g = getgrgid(st.st_gid);
            const char *name = g ? g->gr_name : "?";
            keybay_host_error_detail(host, "device-permission", -1, device);
            /* Joining the device's group helps only where that group may read and write it, and
               never for root's group. */
            if (st.st_gid != 0 && (st.st_mode & 060) == 060)
                return fail(host, KEYBAY_ERR_NOT_AVAILABLE, "no permission to use the TPM: %s is mode %04o, group %s, and this user may "
                            "not read and write it; add the user to group %s and log in again",
                            device, (unsigned)(st.st_mode & 07777), name, name);
            return fail(host, KEYBAY_ERR_NOT_AVAILABLE, "no permission to use the TPM: %s is mode %04o, group %s, and this user may not "
                        "read and write it; the administrator can give it to a group such as tss with mode 0660 (a udev rule)",
                        device, (unsigned)(st.st_mode & 07777), name);
        }
    }
    if (rc == TSS2_TCTI_RC_NOT_SUPPORTED) {
        keybay_host_error_reason(host, "tcti-unsupported");
        return fail(host, KEYBAY_ERR_NOT_AVAILABLE, "cannot reach %s: tpm2-tss cannot load %s here (%s)", t->where, t->library, reason);
    }
    keybay_host_error_reason(host, "tpm-unreachable");
    return fail(host, KEYBAY_ERR_NOT_AVAILABLE, "cannot reach %s: %s", t->where, reason);
}

void keybay_tpm2_close(keybay_tpm2 *t) {
    if (t->esys) T(Esys_Finalize)(&t->esys);
    if (t->tcti) bounded_close(t->tcti);
    t->tcti = NULL;
    if (t->lock >= 0) close(t->lock); /* releases the flock */
    t->lock = -1;
}

keybay_status keybay_tpm2_begin(const keybay_host *host, keybay_tpm2 *t, const char *plugin, const char *user) {
    memset(t, 0, sizeof *t);
    t->lock = -1;
    t->plugin = plugin;
    t->user = user;
    keybay_status s = choose_tcti(host, t);
    if (s == KEYBAY_OK) s = choose_timeout(host, t);
    if (s != KEYBAY_OK) return s;
    clock_gettime(CLOCK_MONOTONIC, &t->deadline);
    t->deadline.tv_sec += t->timeout_ms / 1000;
    t->deadline.tv_nsec += (t->timeout_ms % 1000) * 1000000;
    if (t->deadline.tv_nsec >= 1000000000) { t->deadline.tv_sec++; t->deadline.tv_nsec -= 1000000000; }
    const char *unloaded = keybay_tpm2_load_tss();
    if (unloaded)
        return fail(host, KEYBAY_ERR_NOT_AVAILABLE, "%s cannot load tpm2-tss (%s); the %s needs the packages libtss2-esys-3.0.2-0, "
                    "libtss2-sys1, libtss2-tctildr0, libtss2-mu0, libtss2-rc0 and libssl3 (libcrypto)", plugin, unloaded, user);
    return KEYBAY_OK;
}

keybay_status keybay_tpm2_probe(const keybay_host *host, const char *plugin, const char *user) {
    keybay_tpm2 t;
    keybay_status s = keybay_tpm2_begin(host, &t, plugin, user);
    if (s == KEYBAY_OK && t.device && access(t.device, R_OK | W_OK) != 0) s = keybay_tpm2_unreachable(host, &t, 0);
    keybay_tpm2_close(&t);
    return s == KEYBAY_ERR_INVALID_OPTION ? KEYBAY_ERR_NOT_AVAILABLE : s;
}

keybay_status keybay_tpm2_connect(const keybay_host *host, keybay_tpm2 *t) {
    keybay_status s = bounded_start(host, t);
    TSS2_RC rc = TSS2_RC_SUCCESS;
    if (s == KEYBAY_OK && (!bounded_call(t->tcti, OP_INIT, &rc) || rc != TSS2_RC_SUCCESS)) s = keybay_tpm2_unreachable(host, t, rc);
    if (s == KEYBAY_OK && (rc = T(Esys_Initialize)(&t->esys, (TSS2_TCTI_CONTEXT *)t->tcti, NULL)) != TSS2_RC_SUCCESS) {
        t->esys = NULL;
        s = keybay_tpm2_unreachable(host, t, rc);
    }
    if (s != KEYBAY_OK) keybay_tpm2_close(t);
    return s;
}

/* A failed command: unreachable, or the TPM's own refusal with `status`. */
keybay_status keybay_tpm2_fail(const keybay_host *host, const keybay_tpm2 *t, TSS2_RC rc, keybay_status status, const char *what) {
    if (rc_unreachable(rc)) return keybay_tpm2_unreachable(host, t, rc);
    if (keybay_tpm2_rc_base(rc) == TPM2_RC_LOCKOUT)
        return fail(host, KEYBAY_ERR_LOCKED, "%s: %s is in dictionary-attack lockout (%s)", what, t->where, T(Tss2_RC_Decode)(rc));
    return fail(host, status, "%s on %s: %s", what, t->where, T(Tss2_RC_Decode)(rc));
}

/* Flushes transient objects left loaded by killed processes (only without a resource manager,
   which flushes them itself), so that the command can be tried once more. */
int keybay_tpm2_flush_leftovers(keybay_tpm2 *t, TSS2_RC rc) {
    TSS2_RC base = keybay_tpm2_rc_base(rc);
    if (base != TPM2_RC_OBJECT_MEMORY && base != TPM2_RC_SESSION_MEMORY) return 0;
    TPMS_CAPABILITY_DATA *data = NULL;
    TPMI_YES_NO more = 0;
    int flushed = 0;
    TPM2_HC first = base == TPM2_RC_OBJECT_MEMORY ? TPM2_TRANSIENT_FIRST : TPM2_LOADED_SESSION_FIRST;
    if (T(Esys_GetCapability)(t->esys, ESYS_TR_NONE, ESYS_TR_NONE, ESYS_TR_NONE, TPM2_CAP_HANDLES, first, 64, &more, &data) != TSS2_RC_SUCCESS)
        return 0;
    for (UINT32 i = 0; i < data->data.handles.count; i++) {
        ESYS_TR object;
        if (T(Esys_TR_FromTPMPublic)(t->esys, data->data.handles.handle[i], ESYS_TR_NONE, ESYS_TR_NONE, ESYS_TR_NONE, &object) == TSS2_RC_SUCCESS &&
            T(Esys_FlushContext)(t->esys, object) == TSS2_RC_SUCCESS)
            flushed++;
    }
    T(Esys_Free)(data);
    return flushed > 0;
}

void keybay_tpm2_flush(keybay_tpm2 *t, ESYS_TR *handle) {
    if (*handle != ESYS_TR_NONE) T(Esys_FlushContext)(t->esys, *handle);
    *handle = ESYS_TR_NONE;
}

/* The primary storage key's fixed template (ECC P-256, AES-128-CFB; the TCG storage-key template
   with noDA) under the owner hierarchy. */
void keybay_tpm2_primary_template(TPM2B_PUBLIC *template) {
    *template = (TPM2B_PUBLIC){ .publicArea = {
        .type = TPM2_ALG_ECC,
        .nameAlg = TPM2_ALG_SHA256,
        .objectAttributes = TPMA_OBJECT_FIXEDTPM | TPMA_OBJECT_FIXEDPARENT | TPMA_OBJECT_SENSITIVEDATAORIGIN |
                            TPMA_OBJECT_USERWITHAUTH | TPMA_OBJECT_NODA | TPMA_OBJECT_RESTRICTED | TPMA_OBJECT_DECRYPT,
        .parameters.eccDetail = {
            .symmetric = { .algorithm = TPM2_ALG_AES, .keyBits.aes = 128, .mode.aes = TPM2_ALG_CFB },
            .scheme = { .scheme = TPM2_ALG_NULL },
            .curveID = TPM2_ECC_NIST_P256,
            .kdf = { .scheme = TPM2_ALG_NULL },
        },
    } };
}

keybay_status keybay_tpm2_primary_failed(const keybay_host *host, const keybay_tpm2 *t, TSS2_RC rc) {
    if (keybay_tpm2_rc_is_tpm(rc) && keybay_tpm2_rc_base(rc) == TPM2_RC_BAD_AUTH)
        return fail(host, KEYBAY_ERR_NOT_AVAILABLE, "the owner hierarchy of %s has a password; the %s needs it empty (%s)",
                    t->where, t->user, T(Tss2_RC_Decode)(rc));
    return keybay_tpm2_fail(host, t, rc, KEYBAY_ERR_INTERNAL, "cannot create the primary storage key");
}

keybay_status keybay_tpm2_create_primary(const keybay_host *host, keybay_tpm2 *t, ESYS_TR *primary) {
    TPM2B_SENSITIVE_CREATE sensitive = { 0 };
    TPM2B_PUBLIC template;
    keybay_tpm2_primary_template(&template);
    TPM2B_DATA outside = { 0 };
    TPML_PCR_SELECTION none = { 0 };
    TSS2_RC rc;
    for (int attempt = 0; attempt < 2; attempt++) {
        rc = T(Esys_CreatePrimary)(t->esys, ESYS_TR_RH_OWNER, ESYS_TR_PASSWORD, ESYS_TR_NONE, ESYS_TR_NONE, &sensitive, &template,
                                   &outside, &none, primary, NULL, NULL, NULL, NULL);
        if (rc == TSS2_RC_SUCCESS) return KEYBAY_OK;
        if (attempt || !keybay_tpm2_flush_leftovers(t, rc)) break;
    }
    *primary = ESYS_TR_NONE;
    return keybay_tpm2_primary_failed(host, t, rc);
}

/* PCR selection (SHA-256 bank) from a bit mask of PCRs 0–23. */
TPML_PCR_SELECTION keybay_tpm2_pcr_selection(uint32_t mask) {
    TPML_PCR_SELECTION s = { .count = 1 };
    s.pcrSelections[0].hash = TPM2_ALG_SHA256;
    s.pcrSelections[0].sizeofSelect = 3;
    for (int i = 0; i < 3; i++) s.pcrSelections[0].pcrSelect[i] = (uint8_t)(mask >> (8 * i));
    return s;
}

keybay_status keybay_tpm2_load_sealed(const keybay_host *host, keybay_tpm2 *t, const TPM2B_PRIVATE *private, const TPM2B_PUBLIC *public,
                                      ESYS_TR *primary, ESYS_TR *object, TSS2_RC *rc) {
    *object = ESYS_TR_NONE;
    /* A full object memory flushes every transient object, the new primary too: make it again. */
    for (int attempt = 0; attempt < 2; attempt++) {
        *rc = TSS2_RC_SUCCESS;
        keybay_status s = keybay_tpm2_create_primary(host, t, primary);
        if (s != KEYBAY_OK) return s;
        *rc = T(Esys_Load)(t->esys, *primary, ESYS_TR_PASSWORD, ESYS_TR_NONE, ESYS_TR_NONE, private, public, object);
        if (*rc == TSS2_RC_SUCCESS) return KEYBAY_OK;
        *object = ESYS_TR_NONE;
        keybay_tpm2_flush(t, primary);
        if (attempt || !keybay_tpm2_flush_leftovers(t, *rc)) break;
    }
    return KEYBAY_ERR_INTERNAL;
}

keybay_status keybay_tpm2_policy_session(const keybay_host *host, keybay_tpm2 *t, TPM2_SE type, ESYS_TR salt_key, uint32_t pcr_mask,
                                         int auth_value, ESYS_TR *session) {
    TPMT_SYM_DEF symmetric = { .algorithm = TPM2_ALG_NULL };
    if (salt_key != ESYS_TR_NONE) symmetric = (TPMT_SYM_DEF){ .algorithm = TPM2_ALG_AES, .keyBits.aes = 128, .mode.aes = TPM2_ALG_CFB };
    TSS2_RC rc;
    for (int attempt = 0; attempt < 2; attempt++) {
        rc = T(Esys_StartAuthSession)(t->esys, salt_key, ESYS_TR_NONE, ESYS_TR_NONE, ESYS_TR_NONE, ESYS_TR_NONE, NULL, type,
                                      &symmetric, TPM2_ALG_SHA256, session);
        if (rc == TSS2_RC_SUCCESS) break;
        if (attempt || !keybay_tpm2_flush_leftovers(t, rc)) {
            *session = ESYS_TR_NONE;
            return keybay_tpm2_fail(host, t, rc, KEYBAY_ERR_INTERNAL, "cannot start a policy session");
        }
    }
    if (pcr_mask) {
        TPM2B_DIGEST current = { 0 };
        TPML_PCR_SELECTION pcrs = keybay_tpm2_pcr_selection(pcr_mask);
        rc = T(Esys_PolicyPCR)(t->esys, *session, ESYS_TR_NONE, ESYS_TR_NONE, ESYS_TR_NONE, &current, &pcrs);
        if (rc != TSS2_RC_SUCCESS) {
            keybay_tpm2_flush(t, session);
            return keybay_tpm2_fail(host, t, rc, KEYBAY_ERR_INTERNAL, "cannot read the PCRs into the policy");
        }
    }
    if (auth_value && (rc = T(Esys_PolicyAuthValue)(t->esys, *session, ESYS_TR_NONE, ESYS_TR_NONE, ESYS_TR_NONE)) != TSS2_RC_SUCCESS) {
        keybay_tpm2_flush(t, session);
        return keybay_tpm2_fail(host, t, rc, KEYBAY_ERR_INTERNAL, "cannot add the authorization value to the policy");
    }
    return KEYBAY_OK;
}

keybay_status keybay_tpm2_parse_pcrs(const keybay_host *host, const char *plugin, const keybay_option *options, size_t count,
                                     uint32_t *mask) {
    *mask = 0;
    for (size_t i = 0; i < count; i++) {
        if (strcmp(options[i].name, "pcrs") != 0) {
            keybay_host_error_reason(host, "unknown-option");
            return fail(host, KEYBAY_ERR_INVALID_OPTION, "%s has no option '%s' (it takes pcrs=N[,N...])", plugin, options[i].name);
        }
        const char *p = options[i].value;
        do {
            char *end;
            errno = 0;
            long pcr = strtol(p, &end, 10);
            if (end == p || errno || pcr < 0 || pcr > 23 || (*end && *end != ',')) {
                keybay_host_error_reason(host, "invalid-pcrs");
                return fail(host, KEYBAY_ERR_INVALID_OPTION, "%s pcrs=%s: give PCR numbers 0-23 separated by commas", plugin, options[i].value);
            }
            *mask |= 1u << pcr;
            p = *end ? end + 1 : end;
        } while (*p);
    }
    return KEYBAY_OK;
}
