/*
 * tpm2 — the TPM 2.0 platform root, as a Keybay root plugin (libkeybay-tpm2.so).
 *
 * A 32-byte root key is sealed (a keyed-hash object, TPM2_Create) under a primary storage key
 * that the TPM re-creates from a fixed template under the owner hierarchy on every use, so
 * nothing persistent is kept in the TPM but the rollback floor: an NV counter the plugin
 * defines. The sealed object lives in <state_home>/keybay/<app>/tpm2-root.sealed; only this
 * machine's TPM loads it. The byte layouts (root file, provider state, templates) are specified
 * in docs/format.md §12; what it defends in docs/security.md.
 *
 * tpm2-tss's ESAPI is opened with dlopen on first use (libtss2-esys.so.0, libtss2-tctildr.so.0,
 * libtss2-mu.so.0, libtss2-rc.so.0): the headers give types only, so a process that never uses
 * this root never maps tss2 or the libcrypto it pulls in. The TPM is the device alone
 * (/dev/tpmrm0, or /dev/tpm0 where there is none) unless KEYBAY_TPM2_TCTI names a TCTI of tss2's
 * and its configuration ("swtpm:host=127.0.0.1,port=2321"): never tss2's default order, which
 * ends with simulators on 127.0.0.1, and never a library path.
 *
 * Every operation is bounded: the wait for this user's other processes, reaching the TPM and
 * every command share one deadline (KEYBAY_TPM2_TIMEOUT_MS, at most 30 s), after which the
 * root answers NOT_AVAILABLE naming the TPM. This user's processes take turns on a TPM (a lock
 * file per TCTI), and without a resource manager (swtpm's socket, /dev/tpm0) a killed process
 * leaves its transient objects loaded; a command that finds the TPM's object or session memory
 * full flushes the leftovers and is tried once more.
 */
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
#include <tss2/tss2_esys.h>
#include <tss2/tss2_mu.h>
#include <tss2/tss2_rc.h>
#include <tss2/tss2_tctildr.h>

#include "keybay_plugin.h"
#include "keybay_plugin_host.h"
#include "keybay_root_files.h"

#define fail keybay_rf_fail
#define buffer_alloc keybay_rf_buffer_alloc

#define ROOT_KEY_BYTES 32
#define FILE_NAME "tpm2-root.sealed"
#define FILE_MAGIC "KBT2"
#define FILE_VERSION 1
#define MAX_FILE_BYTES 2048
#define STATE_BYTES 44 /* nvIndex:u32 | base:u64 | binding(32) */
#define NV_FIRST 0x01000000u /* the owner's NV range (TCG handle registry) */
#define NV_SPAN 0x00400000u
#define NV_PROBES 32
#define MAX_INCREMENTS 4096 /* one rotation is one increment; more than this is not a floor */
#define DEFAULT_DEVICE "/dev/tpmrm0"
#define FALLBACK_DEVICE "/dev/tpm0"
static const char provider_state_label[] = "keybay:v2:s1:provider-state:tpm2";

/* ---------------------------------------------------------------- tpm2-tss, opened on first use */

#define TSS_FUNCTIONS(X) \
    X(ESYS, Esys_Initialize) \
    X(ESYS, Esys_Finalize) \
    X(ESYS, Esys_Free) \
    X(ESYS, Esys_CreatePrimary) \
    X(ESYS, Esys_Create) \
    X(ESYS, Esys_Load) \
    X(ESYS, Esys_Unseal) \
    X(ESYS, Esys_FlushContext) \
    X(ESYS, Esys_StartAuthSession) \
    X(ESYS, Esys_PolicyPCR) \
    X(ESYS, Esys_PolicyGetDigest) \
    X(ESYS, Esys_NV_DefineSpace) \
    X(ESYS, Esys_NV_UndefineSpace) \
    X(ESYS, Esys_NV_Increment) \
    X(ESYS, Esys_NV_Read) \
    X(ESYS, Esys_TR_FromTPMPublic) \
    X(ESYS, Esys_TR_GetName) \
    X(ESYS, Esys_TR_Close) \
    X(ESYS, Esys_GetCapability) \
    X(TCTILDR, Tss2_TctiLdr_Initialize_Ex) \
    X(TCTILDR, Tss2_TctiLdr_Finalize) \
    X(MU, Tss2_MU_TPM2B_PUBLIC_Marshal) \
    X(MU, Tss2_MU_TPM2B_PUBLIC_Unmarshal) \
    X(MU, Tss2_MU_TPM2B_PRIVATE_Marshal) \
    X(MU, Tss2_MU_TPM2B_PRIVATE_Unmarshal) \
    X(RC, Tss2_RC_Decode)

enum { ESYS, TCTILDR, MU, RC, LIBRARIES };
static const char *const library_names[LIBRARIES] = {
    "libtss2-esys.so.0", "libtss2-tctildr.so.0", "libtss2-mu.so.0", "libtss2-rc.so.0"
};

#define TSS_POINTER(lib, name) __typeof__(name) *name;
static struct tss_lib {
    TSS_FUNCTIONS(TSS_POINTER)
} tss; /* filled only when every symbol resolved */
#undef TSS_POINTER
#define T(name) (tss.name)

static pthread_once_t tss_once = PTHREAD_ONCE_INIT;
static int tss_ok;
static char tss_error[512];

static void tss_load(void) {
    /* tss2 logs warnings to standard error on its own; the plugin reports every failure through
       set_error instead. TSS2_LOG, when the user set it, is left alone. */
    setenv("TSS2_LOG", "all+none", 0);
    void *handles[LIBRARIES] = { 0 };
    struct tss_lib lib;
    memset(&lib, 0, sizeof lib);
    for (int i = 0; i < LIBRARIES; i++) {
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
        for (int j = 0; j < LIBRARIES; j++) dlclose(handles[j]);                          \
        return;                                                                           \
    }
    TSS_FUNCTIONS(TSS_RESOLVE)
#undef TSS_RESOLVE
    tss = lib; /* the handles stay open for the life of the process */
    tss_ok = 1;
}

/* ---------------------------------------------------------------- errors */

static int rc_layer_is_tpm(TSS2_RC rc) { return (rc & TSS2_RC_LAYER_MASK) == TSS2_TPM_RC_LAYER; }

/* A TPM response code without the handle, session or parameter number. */
static TSS2_RC rc_base(TSS2_RC rc) {
    if (!rc_layer_is_tpm(rc)) return rc;
    return (rc & TPM2_RC_FMT1) ? (rc & (TPM2_RC_FMT1 | 0x3Fu)) : (rc & 0xFFFu);
}

/* The TCTI, or the TPM behind it, cannot be reached (as opposed to the TPM refusing a command). */
static int rc_unreachable(TSS2_RC rc) {
    TSS2_RC layer = rc & TSS2_RC_LAYER_MASK;
    return layer == TSS2_TCTI_RC_LAYER || rc == TSS2_ESYS_RC_IO_ERROR ||
           rc == TSS2_ESYS_RC_TRY_AGAIN || rc == TSS2_ESYS_RC_MALFORMED_RESPONSE;
}

/* ---------------------------------------------------------------- which TPM, and for how long */

#define TIMEOUT_MAX_MS 30000L /* the bound of every root operation (docs/security.md) */
#define TCTI_MAX_BYTES 256

/* The TCTIs KEYBAY_TPM2_TCTI may name: tpm2-tss's own, each loaded as libtss2-tcti-<name>.so.0
   from the system's library path. Never a library path, and none that records the traffic
   (pcap) or runs a command (cmd). */
static const char *const tcti_names[] = { "device", "swtpm", "mssim", "tabrmd" };

typedef struct bounded bounded;

typedef struct tpm {
    bounded *tcti;            /* what Esys talks to: ours, in front of tss2's (below) */
    ESYS_CONTEXT *esys;
    int lock;                 /* the lock file, held (flock) from open to close; -1 when none */
    long timeout_ms;
    struct timespec deadline; /* CLOCK_MONOTONIC: the operation gives up then */
    const char *device;       /* the device file a device TCTI opens (for messages), or NULL */
    char library[40];         /* libtss2-tcti-<name>.so.0 */
    char conf[TCTI_MAX_BYTES]; /* the TCTI's configuration; "" for its own default */
    char where[TCTI_MAX_BYTES + 64]; /* "the TPM at KEYBAY_TPM2_TCTI=swtpm:..." or "the TPM at /dev/tpmrm0 (...)" */
} tpm;

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

static void describe_tcti(char *out, size_t size) {
    const char *conf = getenv("KEYBAY_TPM2_TCTI");
    char shown[TCTI_MAX_BYTES + 1];
    if (conf && *conf) { printable(shown, sizeof shown, conf); snprintf(out, size, "the TPM at KEYBAY_TPM2_TCTI=%s", shown); }
    else snprintf(out, size, "the TPM at %s (the default: the device alone, KEYBAY_TPM2_TCTI unset)", default_device());
}

/* Which TCTI library, with which configuration; a value that is not a TCTI name and its
   configuration is refused (INVALID_OPTION: the CLI's exit 2) before anything is loaded. */
static keybay_status choose_tcti(const keybay_host *host, tpm *t) {
    const char *value = getenv("KEYBAY_TPM2_TCTI");
    describe_tcti(t->where, sizeof t->where);
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
        return fail(host, KEYBAY_ERR_INVALID_OPTION, "KEYBAY_TPM2_TCTI=%s is not a TCTI the tpm2 root uses: give device, swtpm, mssim or "
                    "tabrmd and its configuration (e.g. device:/dev/tpmrm0, swtpm:host=127.0.0.1,port=2321), never a library path%s",
                    shown, strlen(value) >= TCTI_MAX_BYTES ? " (and at most 255 bytes)" : "");
    }
    snprintf(t->library, sizeof t->library, "libtss2-tcti-%s.so.0", name);
    snprintf(t->conf, sizeof t->conf, "%s", colon ? colon + 1 : "");
    if (strcmp(name, "device") == 0) t->device = t->conf[0] ? t->conf : DEFAULT_DEVICE;
    return KEYBAY_OK;
}

/* KEYBAY_TPM2_TIMEOUT_MS: milliseconds, 1 to 30000 (a larger number is 30000); unset, 30000. */
static keybay_status choose_timeout(const keybay_host *host, tpm *t) {
    const char *value = getenv("KEYBAY_TPM2_TIMEOUT_MS");
    t->timeout_ms = TIMEOUT_MAX_MS;
    if (!value || !*value) return KEYBAY_OK;
    long ms = 0; /* all digits; saturates past the cap */
    for (const char *p = value; *p && ms >= 0; p++) ms = *p < '0' || *p > '9' ? -1 : ms > TIMEOUT_MAX_MS ? ms : ms * 10 + (*p - '0');
    if (ms < 1) {
        char shown[32];
        printable(shown, sizeof shown, value);
        return fail(host, KEYBAY_ERR_INVALID_OPTION, "KEYBAY_TPM2_TIMEOUT_MS=%s: give the tpm2 root's bound in milliseconds, 1 to 30000", shown);
    }
    t->timeout_ms = ms < TIMEOUT_MAX_MS ? ms : TIMEOUT_MAX_MS;
    return KEYBAY_OK;
}

static long remaining_ms(const tpm *t) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (long)(t->deadline.tv_sec - now.tv_sec) * 1000 + (t->deadline.tv_nsec - now.tv_nsec) / 1000000;
}

/* ---------------------------------------------------------------- one process at a time

   Without a resource manager (swtpm's socket, /dev/tpm0) the TPM's few object slots are shared
   by every process using it, and one that finds them full flushes the others' objects. So this
   user's processes take turns: <state_home>/keybay/tpm2-<hash of the TCTI>.lock, held from the
   TPM's opening to its closing, waited for until the operation's deadline. */

static keybay_status lock_tpm(const keybay_host *host, const keybay_root_context *c, int create, tpm *t) {
    char dir_path[4096], path[KEYBAY_ROOT_PATH_BYTES], name[64];
    int dir;
    keybay_status s = keybay_rf_open_dir(host, c, create, &dir, dir_path, sizeof dir_path);
    /* No root directory (and none to create): there is no root of this store's to use in the
       TPM, and the operation fails on its missing file. */
    if (s != KEYBAY_OK || dir < 0) return s;
    uint8_t digest[crypto_hash_sha256_BYTES];
    crypto_hash_sha256_state h;
    crypto_hash_sha256_init(&h);
    crypto_hash_sha256_update(&h, (const uint8_t *)t->library, strlen(t->library) + 1);
    crypto_hash_sha256_update(&h, (const uint8_t *)t->conf, strlen(t->conf));
    crypto_hash_sha256_final(&h, digest);
    int at = snprintf(name, sizeof name, "../tpm2-");
    for (int i = 0; i < 8; i++) at += snprintf(name + at, sizeof name - (size_t)at, "%02x", digest[i]);
    snprintf(name + at, sizeof name - (size_t)at, ".lock");
    snprintf(path, sizeof path, "%.4000s/keybay/%s", c->state_home, name + 3);
    /* Read-only is enough for flock, and opens a lock file that exists on a read-only mount. */
    int fd = openat(dir, name, O_RDONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
    close(dir);
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
   to (this one) hands each call over (initialization, every transmit and receive) and waits
   for it until the operation's deadline. A TPM that has not answered by then is abandoned:
   the thread finishes its call whenever the TPM answers, or never, then finalizes the TCTI and
   frees what it holds; nothing of the caller's is touched after the caller has returned. */

enum { OP_NONE, OP_INIT, OP_TRANSMIT, OP_RECEIVE, OP_FINALIZE };

struct bounded {
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
    int have_response;
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
    case OP_TRANSMIT:
        rc = Tss2_Tcti_Transmit(b->inner, b->size, b->buffer);
        sodium_memzero(b->buffer, b->size);
        b->size = 0;
        break;
    case OP_RECEIVE:
        rc = Tss2_Tcti_Receive(b->inner, &size, NULL, TSS2_TCTI_TIMEOUT_BLOCK);
        if (rc == TSS2_RC_SUCCESS) {
            size = sizeof b->buffer;
            rc = Tss2_Tcti_Receive(b->inner, &size, b->buffer, TSS2_TCTI_TIMEOUT_BLOCK);
        }
        b->size = rc == TSS2_RC_SUCCESS ? size : 0;
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
    return bounded_call(b, OP_TRANSMIT, &rc) ? rc : TSS2_TCTI_RC_IO_ERROR;
}

/* The caller's timeout is ignored: the deadline bounds every wait. */
static TSS2_RC bounded_receive(TSS2_TCTI_CONTEXT *context, size_t *size, uint8_t *response, int32_t timeout) {
    (void)timeout;
    bounded *b = (bounded *)context;
    TSS2_RC rc;
    if (b->abandoned) return TSS2_TCTI_RC_IO_ERROR;
    if (!size) return TSS2_TCTI_RC_BAD_REFERENCE;
    if (!b->have_response) {
        if (!bounded_call(b, OP_RECEIVE, &rc)) return TSS2_TCTI_RC_IO_ERROR;
        if (rc != TSS2_RC_SUCCESS) return rc;
        b->have_response = 1;
    }
    if (!response) { *size = b->size; return TSS2_RC_SUCCESS; }
    if (*size < b->size) { *size = b->size; return TSS2_TCTI_RC_INSUFFICIENT_BUFFER; }
    memcpy(response, b->buffer, b->size);
    *size = b->size;
    sodium_memzero(b->buffer, b->size);
    b->size = 0;
    b->have_response = 0;
    return TSS2_RC_SUCCESS;
}

static keybay_status bounded_start(const keybay_host *host, tpm *t) {
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
   user's to use (/dev/tpmrm0 is usually root:tss 0660); or what tss2 said. */
static keybay_status unreachable(const keybay_host *host, const tpm *t, TSS2_RC rc) {
    if (t->tcti && t->tcti->abandoned)
        return fail(host, KEYBAY_ERR_NOT_AVAILABLE, "%s did not answer within %ld ms (a TPM or simulator that is stopped or hung; "
                    "KEYBAY_TPM2_TIMEOUT_MS sets this bound, at most 30000)", t->where, t->timeout_ms);
    const char *reason = rc ? T(Tss2_RC_Decode)(rc) : "no TCTI";
    const char *device = t->device;
    const char *conf = getenv("KEYBAY_TPM2_TCTI");
    if (device) {
        struct stat st;
        if (stat(device, &st) != 0) {
            if (!conf || !*conf)
                return fail(host, KEYBAY_ERR_NOT_AVAILABLE, "no TPM: neither " DEFAULT_DEVICE " nor " FALLBACK_DEVICE " exists (no TPM 2.0 "
                            "here, or its driver is not loaded); a simulator or another TPM is used only when KEYBAY_TPM2_TCTI names it (%s)", reason);
            return fail(host, KEYBAY_ERR_NOT_AVAILABLE, "no TPM: %s does not exist (no TPM 2.0 here, or its driver is not loaded; "
                        "set KEYBAY_TPM2_TCTI to reach another one) (%s)", device, reason);
        }
        if (access(device, R_OK | W_OK) != 0) {
            struct group *g = getgrgid(st.st_gid);
            const char *name = g ? g->gr_name : "?";
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
    if (rc == TSS2_TCTI_RC_NOT_SUPPORTED)
        return fail(host, KEYBAY_ERR_NOT_AVAILABLE, "cannot reach %s: tpm2-tss cannot load %s here (%s)", t->where, t->library, reason);
    return fail(host, KEYBAY_ERR_NOT_AVAILABLE, "cannot reach %s: %s", t->where, reason);
}

static void tpm_close(tpm *t) {
    if (t->esys) T(Esys_Finalize)(&t->esys);
    if (t->tcti) bounded_close(t->tcti);
    t->tcti = NULL;
    if (t->lock >= 0) close(t->lock); /* releases the flock */
    t->lock = -1;
}

/* Opens the TPM for one operation (create: the root's directory may be made for the lock file),
   everything it does bounded by one deadline, KEYBAY_TPM2_TIMEOUT_MS (at most 30 s) from now.
   Cleans up after itself on failure. */
static keybay_status tpm_open(const keybay_host *host, const keybay_root_context *c, int create, tpm *t) {
    memset(t, 0, sizeof *t);
    t->lock = -1;
    keybay_status s = choose_tcti(host, t);
    if (s == KEYBAY_OK) s = choose_timeout(host, t);
    if (s != KEYBAY_OK) return s;
    clock_gettime(CLOCK_MONOTONIC, &t->deadline);
    t->deadline.tv_sec += t->timeout_ms / 1000;
    t->deadline.tv_nsec += (t->timeout_ms % 1000) * 1000000;
    if (t->deadline.tv_nsec >= 1000000000) { t->deadline.tv_sec++; t->deadline.tv_nsec -= 1000000000; }
    pthread_once(&tss_once, tss_load);
    if (!tss_ok)
        return fail(host, KEYBAY_ERR_NOT_AVAILABLE, "tpm2 cannot load tpm2-tss (%s); the TPM root needs libtss2-esys0, "
                    "libtss2-tctildr0, libtss2-mu0 and libtss2-rc0", tss_error);
    if ((s = lock_tpm(host, c, create, t)) == KEYBAY_OK) s = bounded_start(host, t);
    TSS2_RC rc = TSS2_RC_SUCCESS;
    if (s == KEYBAY_OK && (!bounded_call(t->tcti, OP_INIT, &rc) || rc != TSS2_RC_SUCCESS)) s = unreachable(host, t, rc);
    if (s == KEYBAY_OK && (rc = T(Esys_Initialize)(&t->esys, (TSS2_TCTI_CONTEXT *)t->tcti, NULL)) != TSS2_RC_SUCCESS) {
        t->esys = NULL;
        s = unreachable(host, t, rc);
    }
    if (s != KEYBAY_OK) tpm_close(t);
    return s;
}

/* A failed command: unreachable, or the TPM's own refusal with `status`. */
static keybay_status tpm_fail(const keybay_host *host, const tpm *t, TSS2_RC rc, keybay_status status, const char *what) {
    if (rc_unreachable(rc)) return unreachable(host, t, rc);
    if (rc_base(rc) == TPM2_RC_LOCKOUT)
        return fail(host, KEYBAY_ERR_LOCKED, "%s: %s is in dictionary-attack lockout (%s)", what, t->where, T(Tss2_RC_Decode)(rc));
    return fail(host, status, "%s on %s: %s", what, t->where, T(Tss2_RC_Decode)(rc));
}

/* Flushes transient objects left loaded by killed processes (only without a resource manager,
   which flushes them itself), so that the command can be tried once more. */
static int flush_leftovers(tpm *t, TSS2_RC rc) {
    TSS2_RC base = rc_base(rc);
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

static void flush(tpm *t, ESYS_TR *handle) {
    if (*handle != ESYS_TR_NONE) T(Esys_FlushContext)(t->esys, *handle);
    *handle = ESYS_TR_NONE;
}

/* The primary storage key, re-created from its fixed template (ECC P-256, AES-128-CFB; the
   TCG storage-key template with noDA) under the owner hierarchy. */
static keybay_status create_primary(const keybay_host *host, tpm *t, ESYS_TR *primary) {
    TPM2B_SENSITIVE_CREATE sensitive = { 0 };
    TPM2B_PUBLIC template = { .publicArea = {
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
    TPM2B_DATA outside = { 0 };
    TPML_PCR_SELECTION none = { 0 };
    TSS2_RC rc;
    for (int attempt = 0; attempt < 2; attempt++) {
        rc = T(Esys_CreatePrimary)(t->esys, ESYS_TR_RH_OWNER, ESYS_TR_PASSWORD, ESYS_TR_NONE, ESYS_TR_NONE, &sensitive, &template,
                                   &outside, &none, primary, NULL, NULL, NULL, NULL);
        if (rc == TSS2_RC_SUCCESS) return KEYBAY_OK;
        if (attempt || !flush_leftovers(t, rc)) break;
    }
    *primary = ESYS_TR_NONE;
    if (rc_layer_is_tpm(rc) && rc_base(rc) == TPM2_RC_BAD_AUTH)
        return fail(host, KEYBAY_ERR_NOT_AVAILABLE, "the owner hierarchy of %s has a password; the tpm2 root needs it empty (%s)",
                    t->where, T(Tss2_RC_Decode)(rc));
    return tpm_fail(host, t, rc, KEYBAY_ERR_INTERNAL, "cannot create the primary storage key");
}

/* PCR selection (SHA-256 bank) from a bit mask of PCRs 0–23. */
static TPML_PCR_SELECTION pcr_selection(uint32_t mask) {
    TPML_PCR_SELECTION s = { .count = 1 };
    s.pcrSelections[0].hash = TPM2_ALG_SHA256;
    s.pcrSelections[0].sizeofSelect = 3;
    for (int i = 0; i < 3; i++) s.pcrSelections[0].pcrSelect[i] = (uint8_t)(mask >> (8 * i));
    return s;
}

/* A policy (or trial) session with PolicyPCR over `mask` at the PCRs' current values. */
static keybay_status pcr_session(const keybay_host *host, tpm *t, TPM2_SE type, uint32_t mask, ESYS_TR *session) {
    TPMT_SYM_DEF symmetric = { .algorithm = TPM2_ALG_NULL };
    TSS2_RC rc;
    for (int attempt = 0; attempt < 2; attempt++) {
        rc = T(Esys_StartAuthSession)(t->esys, ESYS_TR_NONE, ESYS_TR_NONE, ESYS_TR_NONE, ESYS_TR_NONE, ESYS_TR_NONE, NULL, type,
                                      &symmetric, TPM2_ALG_SHA256, session);
        if (rc == TSS2_RC_SUCCESS) break;
        if (attempt || !flush_leftovers(t, rc)) { *session = ESYS_TR_NONE; return tpm_fail(host, t, rc, KEYBAY_ERR_INTERNAL, "cannot start a policy session"); }
    }
    TPM2B_DIGEST current = { 0 };
    TPML_PCR_SELECTION pcrs = pcr_selection(mask);
    rc = T(Esys_PolicyPCR)(t->esys, *session, ESYS_TR_NONE, ESYS_TR_NONE, ESYS_TR_NONE, &current, &pcrs);
    if (rc != TSS2_RC_SUCCESS) { flush(t, session); return tpm_fail(host, t, rc, KEYBAY_ERR_INTERNAL, "cannot read the PCRs into the policy"); }
    return KEYBAY_OK;
}

/* ---------------------------------------------------------------- the root file */

/*
 * "KBT2" | version:u16 (= 1) | nvIndex:u32 | base:u64 | pcrs:u32 | nvName:LP16 | public:LP16 | private:LP16
 * public and private are TPM2B_PUBLIC / TPM2B_PRIVATE as the TPM marshals them (their own size
 * first); nvName is the NV counter's TPM name once written (nameAlg | SHA-256 of its public area).
 */
typedef struct root_file {
    uint8_t bytes[MAX_FILE_BYTES];
    size_t length;
    uint32_t nv_index;
    uint64_t base;
    uint32_t pcrs;
    TPM2B_NAME nv_name;
    TPM2B_PUBLIC public;
    TPM2B_PRIVATE private;
} root_file;

static void put_be(uint8_t *p, uint64_t v, int n) { for (int i = 0; i < n; i++) p[i] = (uint8_t)(v >> (8 * (n - 1 - i))); }
static uint64_t get_be(const uint8_t *p, int n) { uint64_t v = 0; for (int i = 0; i < n; i++) v = v << 8 | p[i]; return v; }

/* Decodes f->bytes strictly (exact lengths, no trailing bytes). */
static keybay_status decode_file(const keybay_host *host, const char *path, root_file *f) {
    const uint8_t *p = f->bytes;
    size_t n = f->length, at = 22;
    if (n < at || memcmp(p, FILE_MAGIC, 4) != 0 || get_be(p + 4, 2) != FILE_VERSION)
        return fail(host, KEYBAY_ERR_ROOT_MISMATCH, "platform key invalidated: %s is not a version-1 tpm2 root file", path);
    f->nv_index = (uint32_t)get_be(p + 6, 4);
    f->base = get_be(p + 10, 8);
    f->pcrs = (uint32_t)get_be(p + 18, 4);
    const uint8_t *parts[3];
    size_t lengths[3];
    for (int i = 0; i < 3; i++) {
        if (n - at < 2 || (lengths[i] = (size_t)get_be(p + at, 2)) > n - at - 2)
            return fail(host, KEYBAY_ERR_ROOT_MISMATCH, "platform key invalidated: %s is truncated", path);
        parts[i] = p + at + 2;
        at += 2 + lengths[i];
    }
    size_t off_pub = 0, off_priv = 0;
    memset(&f->public, 0, sizeof f->public);
    memset(&f->private, 0, sizeof f->private);
    if (at != n || lengths[0] > sizeof f->nv_name.name || (f->nv_index & ~(NV_SPAN - 1)) != NV_FIRST || (f->pcrs >> 24) != 0 ||
        T(Tss2_MU_TPM2B_PUBLIC_Unmarshal)(parts[1], lengths[1], &off_pub, &f->public) != TSS2_RC_SUCCESS || off_pub != lengths[1] ||
        /* tss2 does not hold the public area to its own size field, and takes an empty one: we do not */
        lengths[1] <= 2 || get_be(parts[1], 2) != lengths[1] - 2 || lengths[2] <= 2 ||
        T(Tss2_MU_TPM2B_PRIVATE_Unmarshal)(parts[2], lengths[2], &off_priv, &f->private) != TSS2_RC_SUCCESS || off_priv != lengths[2])
        return fail(host, KEYBAY_ERR_ROOT_MISMATCH, "platform key invalidated: %s is malformed", path);
    f->nv_name.size = (UINT16)lengths[0];
    memcpy(f->nv_name.name, parts[0], lengths[0]);
    return KEYBAY_OK;
}

static keybay_status encode_file(const keybay_host *host, root_file *f) {
    uint8_t *p = f->bytes;
    memcpy(p, FILE_MAGIC, 4);
    put_be(p + 4, FILE_VERSION, 2);
    put_be(p + 6, f->nv_index, 4);
    put_be(p + 10, f->base, 8);
    put_be(p + 18, f->pcrs, 4);
    size_t at = 22;
    put_be(p + at, f->nv_name.size, 2);
    memcpy(p + at + 2, f->nv_name.name, f->nv_name.size);
    at += 2 + f->nv_name.size;
    size_t offset = 0;
    if (T(Tss2_MU_TPM2B_PUBLIC_Marshal)(&f->public, p + at + 2, MAX_FILE_BYTES - at - 4, &offset) != TSS2_RC_SUCCESS)
        return fail(host, KEYBAY_ERR_INTERNAL, "the sealed object's public area does not fit the root file");
    put_be(p + at, offset, 2);
    at += 2 + offset;
    offset = 0;
    if (T(Tss2_MU_TPM2B_PRIVATE_Marshal)(&f->private, p + at + 2, MAX_FILE_BYTES - at - 2, &offset) != TSS2_RC_SUCCESS)
        return fail(host, KEYBAY_ERR_INTERNAL, "the sealed object's private area does not fit the root file");
    put_be(p + at, offset, 2);
    f->length = at + 2 + offset;
    return KEYBAY_OK;
}

/* nvIndex:u32 | base:u64 | SHA-256(label | 0x00 | storageDomain | root file) */
static void provider_state(const root_file *f, const uint8_t *domain, uint8_t out[STATE_BYTES]) {
    crypto_hash_sha256_state h;
    const uint8_t zero = 0;
    put_be(out, f->nv_index, 4);
    put_be(out + 4, f->base, 8);
    crypto_hash_sha256_init(&h);
    crypto_hash_sha256_update(&h, (const uint8_t *)provider_state_label, sizeof provider_state_label - 1);
    crypto_hash_sha256_update(&h, &zero, 1);
    crypto_hash_sha256_update(&h, domain, 32);
    crypto_hash_sha256_update(&h, f->bytes, f->length);
    crypto_hash_sha256_final(&h, out + 12);
}

/* Reads and decodes the root file; with `state`, checks that it names this file (in constant
   time) before anything else is done with it. tss2 must be loaded (decoding uses its MU). */
static keybay_status load_file(const keybay_host *host, const keybay_root_context *c, const uint8_t *state, size_t state_length,
                               root_file *f) {
    char path[KEYBAY_ROOT_PATH_BYTES];
    keybay_rf_path(c, FILE_NAME, path, sizeof path);
    keybay_status s = keybay_rf_read(host, c, FILE_NAME, "the tpm2 root file", f->bytes, sizeof f->bytes, &f->length);
    if (s != KEYBAY_OK) return s;
    if (f->length == sizeof f->bytes) return fail(host, KEYBAY_ERR_ROOT_MISMATCH, "platform key invalidated: %s is too long", path);
    s = decode_file(host, path, f);
    if (s != KEYBAY_OK || !state) return s;
    uint8_t expected[STATE_BYTES];
    provider_state(f, c->storage_domain, expected);
    if (state_length != STATE_BYTES || sodium_memcmp(expected, state, STATE_BYTES) != 0)
        return fail(host, KEYBAY_ERR_ROOT_MISMATCH, "platform key invalidated: the tpm2 root file %s does not belong to this store", path);
    return KEYBAY_OK;
}

/* ---------------------------------------------------------------- the sealed root key and the NV counter */

/* Loads the sealed object and unseals the root key into `key` (guarded memory). */
static keybay_status unseal_root(const keybay_host *host, tpm *t, const root_file *f, const char *path, uint8_t *key) {
    ESYS_TR primary = ESYS_TR_NONE, object = ESYS_TR_NONE, session = ESYS_TR_NONE;
    keybay_status s = KEYBAY_OK;
    TSS2_RC rc = TSS2_RC_SUCCESS;
    /* A full object memory flushes every transient object, the new primary too: make it again. */
    for (int attempt = 0; attempt < 2; attempt++) {
        if ((s = create_primary(host, t, &primary)) != KEYBAY_OK) break;
        rc = T(Esys_Load)(t->esys, primary, ESYS_TR_PASSWORD, ESYS_TR_NONE, ESYS_TR_NONE, &f->private, &f->public, &object);
        if (rc == TSS2_RC_SUCCESS || attempt) break;
        flush(t, &primary);
        if (!flush_leftovers(t, rc)) break;
    }
    if (s == KEYBAY_OK && rc != TSS2_RC_SUCCESS) {
        object = ESYS_TR_NONE;
        /* A foreign or damaged object is a format-one error on its parameters (integrity, size,
           key); a warning (memory, retry, lockout) is not the root's fault. */
        s = rc_layer_is_tpm(rc) && (rc & TPM2_RC_FMT1) ? fail(host, KEYBAY_ERR_ROOT_MISMATCH, "platform key invalidated: %s cannot load the sealed root key %s "
                                       "(another machine's TPM, or its storage hierarchy was cleared): %s", t->where, path, T(Tss2_RC_Decode)(rc))
                                : tpm_fail(host, t, rc, KEYBAY_ERR_INTERNAL, "cannot load the sealed root key");
    }
    flush(t, &primary);
    if (s == KEYBAY_OK && f->pcrs) s = pcr_session(host, t, TPM2_SE_POLICY, f->pcrs, &session);
    TPM2B_SENSITIVE_DATA *out = NULL;
    if (s == KEYBAY_OK) {
        rc = T(Esys_Unseal)(t->esys, object, f->pcrs ? session : ESYS_TR_PASSWORD, ESYS_TR_NONE, ESYS_TR_NONE, &out);
        if (rc != TSS2_RC_SUCCESS) {
            out = NULL;
            s = rc_layer_is_tpm(rc) && rc_base(rc) == TPM2_RC_POLICY_FAIL
                ? fail(host, KEYBAY_ERR_ROOT_MISMATCH, "platform key invalidated: the PCRs the root is bound to (mask 0x%06x, SHA-256) no longer "
                       "hold the values it was sealed to (a firmware, boot loader or Secure Boot change)", (unsigned)f->pcrs)
                : tpm_fail(host, t, rc, KEYBAY_ERR_INTERNAL, "cannot unseal the root key");
        } else if (out->size != ROOT_KEY_BYTES) {
            s = fail(host, KEYBAY_ERR_ROOT_MISMATCH, "platform key invalidated: the sealed object in %s holds %u bytes, not a root key", path, out->size);
        } else {
            memcpy(key, out->buffer, ROOT_KEY_BYTES);
        }
    }
    if (out) { sodium_memzero(out, sizeof *out); T(Esys_Free)(out); }
    flush(t, &session);
    flush(t, &object);
    return s;
}

/* The counter's ESYS handle, after checking that the index is still the one the root file
   names (its TPM name covers its attributes: a counter, defined by us, written). */
static keybay_status open_counter(const keybay_host *host, tpm *t, const root_file *f, ESYS_TR *nv) {
    TSS2_RC rc = T(Esys_TR_FromTPMPublic)(t->esys, f->nv_index, ESYS_TR_NONE, ESYS_TR_NONE, ESYS_TR_NONE, nv);
    if (rc != TSS2_RC_SUCCESS) {
        *nv = ESYS_TR_NONE;
        if (!rc_layer_is_tpm(rc) || !(rc & TPM2_RC_FMT1)) return tpm_fail(host, t, rc, KEYBAY_ERR_INTERNAL, "cannot find the rollback counter");
        return fail(host, KEYBAY_ERR_ROOT_MISSING, "platform key invalidated: the rollback counter NV 0x%08x is gone from %s (%s)",
                    (unsigned)f->nv_index, t->where, T(Tss2_RC_Decode)(rc));
    }
    TPM2B_NAME *name = NULL;
    rc = T(Esys_TR_GetName)(t->esys, *nv, &name);
    int same = rc == TSS2_RC_SUCCESS && name->size == f->nv_name.size && memcmp(name->name, f->nv_name.name, name->size) == 0;
    if (name) T(Esys_Free)(name);
    if (!same) {
        T(Esys_TR_Close)(t->esys, nv);
        *nv = ESYS_TR_NONE;
        return fail(host, KEYBAY_ERR_ROOT_MISMATCH, "platform key invalidated: NV 0x%08x on %s is no longer the rollback counter this root "
                    "defined (it was redefined)", (unsigned)f->nv_index, t->where);
    }
    return KEYBAY_OK;
}

static keybay_status read_counter(const keybay_host *host, tpm *t, ESYS_TR nv, uint64_t *value) {
    TPM2B_MAX_NV_BUFFER *data = NULL;
    TSS2_RC rc = T(Esys_NV_Read)(t->esys, nv, nv, ESYS_TR_PASSWORD, ESYS_TR_NONE, ESYS_TR_NONE, 8, 0, &data);
    if (rc != TSS2_RC_SUCCESS) return tpm_fail(host, t, rc, KEYBAY_ERR_INTERNAL, "cannot read the rollback counter");
    int ok = data->size == 8;
    if (ok) *value = get_be(data->buffer, 8);
    T(Esys_Free)(data);
    return ok ? KEYBAY_OK : fail(host, KEYBAY_ERR_INTERNAL, "the rollback counter on %s is not 8 bytes", t->where);
}

/* floor = counter - base; a counter below its base is not ours. */
static keybay_status read_floor(const keybay_host *host, tpm *t, const root_file *f, ESYS_TR nv, uint64_t *floor) {
    uint64_t value;
    keybay_status s = read_counter(host, t, nv, &value);
    if (s == KEYBAY_OK && value < f->base)
        s = fail(host, KEYBAY_ERR_ROOT_MISMATCH, "platform key invalidated: the rollback counter NV 0x%08x is below its base", (unsigned)f->nv_index);
    if (s == KEYBAY_OK) *floor = value - f->base;
    return s;
}

/* ---------------------------------------------------------------- root operations */

static keybay_status root_exists(const keybay_host *host, const keybay_root_context *c, int *exists) {
    return keybay_rf_exists(host, c, FILE_NAME, exists);
}

/* `pcrs=7` or `pcrs=0,2,7`: PCRs 0–23 of the SHA-256 bank. */
static keybay_status parse_pcrs(const keybay_host *host, const keybay_option *options, size_t count, uint32_t *mask) {
    *mask = 0;
    for (size_t i = 0; i < count; i++) {
        if (strcmp(options[i].name, "pcrs") != 0)
            return fail(host, KEYBAY_ERR_INVALID_OPTION, "tpm2 has no option '%s' (it takes pcrs=N[,N...])", options[i].name);
        const char *p = options[i].value;
        do {
            char *end;
            errno = 0;
            long pcr = strtol(p, &end, 10);
            if (end == p || errno || pcr < 0 || pcr > 23 || (*end && *end != ','))
                return fail(host, KEYBAY_ERR_INVALID_OPTION, "tpm2 pcrs=%s: give PCR numbers 0-23 separated by commas", options[i].value);
            *mask |= 1u << pcr;
            p = *end ? end + 1 : end;
        } while (*p);
    }
    return KEYBAY_OK;
}

/* Defines the counter at the first free index of a range derived from the storage domain,
   increments it once (a counter reads only once written; it starts at the highest value any
   counter of this TPM had) and reads its base. */
static keybay_status define_counter(const keybay_host *host, tpm *t, const keybay_root_context *c, root_file *f) {
    uint8_t digest[32];
    crypto_hash_sha256(digest, c->storage_domain, 32);
    uint32_t start = (uint32_t)get_be(digest, 4) % NV_SPAN;
    TPM2B_AUTH empty = { 0 };
    TSS2_RC rc = TSS2_RC_SUCCESS;
    ESYS_TR nv = ESYS_TR_NONE;
    for (int probe = 0; probe < NV_PROBES; probe++) {
        TPM2B_NV_PUBLIC info = { .nvPublic = {
            .nvIndex = NV_FIRST + (start + (uint32_t)probe) % NV_SPAN,
            .nameAlg = TPM2_ALG_SHA256,
            .attributes = (TPM2_NT_COUNTER << TPMA_NV_TPM2_NT_SHIFT) | TPMA_NV_AUTHREAD | TPMA_NV_AUTHWRITE | TPMA_NV_OWNERREAD |
                          TPMA_NV_OWNERWRITE | TPMA_NV_NO_DA,
            .dataSize = 8,
        } };
        rc = T(Esys_NV_DefineSpace)(t->esys, ESYS_TR_RH_OWNER, ESYS_TR_PASSWORD, ESYS_TR_NONE, ESYS_TR_NONE, &empty, &info, &nv);
        if (rc == TSS2_RC_SUCCESS) { f->nv_index = info.nvPublic.nvIndex; break; }
        if (!rc_layer_is_tpm(rc) || rc_base(rc) != TPM2_RC_NV_DEFINED) break;
    }
    if (rc != TSS2_RC_SUCCESS) return tpm_fail(host, t, rc, KEYBAY_ERR_INTERNAL, "cannot define the rollback counter");
    rc = T(Esys_NV_Increment)(t->esys, nv, nv, ESYS_TR_PASSWORD, ESYS_TR_NONE, ESYS_TR_NONE);
    keybay_status s = rc == TSS2_RC_SUCCESS ? read_counter(host, t, nv, &f->base)
                                             : tpm_fail(host, t, rc, KEYBAY_ERR_INTERNAL, "cannot start the rollback counter");
    TPM2B_NAME *name = NULL;
    if (s == KEYBAY_OK && (rc = T(Esys_TR_GetName)(t->esys, nv, &name)) != TSS2_RC_SUCCESS)
        s = tpm_fail(host, t, rc, KEYBAY_ERR_INTERNAL, "cannot name the rollback counter");
    if (s == KEYBAY_OK) f->nv_name = *name;
    if (name) T(Esys_Free)(name);
    if (s != KEYBAY_OK) T(Esys_NV_UndefineSpace)(t->esys, ESYS_TR_RH_OWNER, nv, ESYS_TR_PASSWORD, ESYS_TR_NONE, ESYS_TR_NONE);
    else T(Esys_TR_Close)(t->esys, &nv);
    return s;
}

static void undefine_counter(tpm *t, const root_file *f) {
    ESYS_TR nv;
    if (open_counter(NULL, t, f, &nv) == KEYBAY_OK)
        T(Esys_NV_UndefineSpace)(t->esys, ESYS_TR_RH_OWNER, nv, ESYS_TR_PASSWORD, ESYS_TR_NONE, ESYS_TR_NONE);
}

static keybay_status root_create_with_options(const keybay_host *host, const keybay_root_context *c, const keybay_option *options,
                                              size_t option_count, keybay_buffer *state_out) {
    uint32_t pcrs;
    keybay_status s = parse_pcrs(host, options, option_count, &pcrs);
    int exists = 0;
    if (s == KEYBAY_OK) s = keybay_rf_exists(host, c, FILE_NAME, &exists);
    char path[KEYBAY_ROOT_PATH_BYTES];
    keybay_rf_path(c, FILE_NAME, path, sizeof path);
    if (s == KEYBAY_OK && exists) s = fail(host, KEYBAY_ERR_ROOT_EXISTS, "%s already exists; refusing to overwrite it", path);
    if (s != KEYBAY_OK) return s;
    tpm t;
    if ((s = tpm_open(host, c, 1, &t)) != KEYBAY_OK) return s;
    root_file *f = sodium_malloc(sizeof *f);
    TPM2B_SENSITIVE_CREATE *sensitive = sodium_malloc(sizeof *sensitive);
    ESYS_TR primary = ESYS_TR_NONE, trial = ESYS_TR_NONE;
    if (!f || !sensitive) s = fail(host, KEYBAY_ERR_INTERNAL, "out of memory creating the tpm2 root");
    TPM2B_PUBLIC template = { .publicArea = {
        .type = TPM2_ALG_KEYEDHASH,
        .nameAlg = TPM2_ALG_SHA256,
        .objectAttributes = TPMA_OBJECT_FIXEDTPM | TPMA_OBJECT_FIXEDPARENT | TPMA_OBJECT_NODA | (pcrs ? 0 : TPMA_OBJECT_USERWITHAUTH),
        .parameters.keyedHashDetail.scheme = { .scheme = TPM2_ALG_NULL },
    } };
    if (s == KEYBAY_OK && pcrs) {
        s = pcr_session(host, &t, TPM2_SE_TRIAL, pcrs, &trial);
        TPM2B_DIGEST *policy = NULL;
        TSS2_RC rc;
        if (s == KEYBAY_OK && (rc = T(Esys_PolicyGetDigest)(t.esys, trial, ESYS_TR_NONE, ESYS_TR_NONE, ESYS_TR_NONE, &policy)) != TSS2_RC_SUCCESS)
            s = tpm_fail(host, &t, rc, KEYBAY_ERR_INTERNAL, "cannot compute the PCR policy");
        if (s == KEYBAY_OK) template.publicArea.authPolicy = *policy;
        if (policy) T(Esys_Free)(policy);
        flush(&t, &trial);
    }
    if (s == KEYBAY_OK) s = create_primary(host, &t, &primary);
    if (s == KEYBAY_OK) {
        memset(f, 0, sizeof *f);
        memset(sensitive, 0, sizeof *sensitive);
        sensitive->sensitive.data.size = ROOT_KEY_BYTES;
        randombytes_buf(sensitive->sensitive.data.buffer, ROOT_KEY_BYTES);
        TPM2B_DATA outside = { 0 };
        TPML_PCR_SELECTION none = { 0 };
        TPM2B_PRIVATE *private = NULL;
        TPM2B_PUBLIC *public = NULL;
        TSS2_RC rc = T(Esys_Create)(t.esys, primary, ESYS_TR_PASSWORD, ESYS_TR_NONE, ESYS_TR_NONE, sensitive, &template, &outside, &none,
                                    &private, &public, NULL, NULL, NULL);
        sodium_memzero(sensitive, sizeof *sensitive);
        if (rc != TSS2_RC_SUCCESS) s = tpm_fail(host, &t, rc, KEYBAY_ERR_INTERNAL, "cannot seal the root key");
        else { f->private = *private; f->public = *public; f->pcrs = pcrs; }
        if (private) T(Esys_Free)(private);
        if (public) T(Esys_Free)(public);
    }
    flush(&t, &primary);
    int counter = 0;
    if (s == KEYBAY_OK && (s = define_counter(host, &t, c, f)) == KEYBAY_OK) counter = 1;
    if (s == KEYBAY_OK) s = encode_file(host, f);
    if (s == KEYBAY_OK) s = keybay_rf_create(host, c, FILE_NAME, f->bytes, f->length);
    if (s == KEYBAY_OK && !buffer_alloc(state_out, STATE_BYTES)) s = fail(host, KEYBAY_ERR_INTERNAL, "out of memory");
    if (s == KEYBAY_OK) provider_state(f, c->storage_domain, state_out->data);
    else if (counter) undefine_counter(&t, f); /* nothing names it: do not leave it behind */
    if (f) sodium_free(f);
    if (sensitive) sodium_free(sensitive);
    tpm_close(&t);
    return s;
}

/* Opens the TPM, reads the root file (checked against `state`) and unseals the root key. */
static keybay_status with_root_key(const keybay_host *host, const keybay_root_context *c, const uint8_t *state, size_t state_length,
                                   tpm *t, root_file **f, uint8_t **key) {
    *f = NULL;
    *key = NULL;
    keybay_status s = tpm_open(host, c, 0, t);
    if (s != KEYBAY_OK) return s;
    char path[KEYBAY_ROOT_PATH_BYTES];
    keybay_rf_path(c, FILE_NAME, path, sizeof path);
    *f = sodium_malloc(sizeof **f);
    *key = sodium_malloc(ROOT_KEY_BYTES);
    if (!*f || !*key) s = fail(host, KEYBAY_ERR_INTERNAL, "out of memory");
    if (s == KEYBAY_OK) s = load_file(host, c, state, state_length, *f);
    if (s == KEYBAY_OK) s = unseal_root(host, t, *f, path, *key);
    return s;
}

static void release(tpm *t, root_file *f, uint8_t *key) {
    if (f) sodium_free(f);
    if (key) sodium_free(key);
    tpm_close(t);
}

static keybay_status root_seal(const keybay_host *host, const keybay_root_context *c, const uint8_t *state, size_t state_length,
                               const uint8_t *plaintext, size_t plaintext_length, const uint8_t *aad, size_t aad_length,
                               keybay_buffer *sealed_out) {
    if (plaintext_length == 0) return fail(host, KEYBAY_ERR_INTERNAL, "refusing to seal an empty key package");
    tpm t;
    root_file *f;
    uint8_t *key;
    keybay_status s = with_root_key(host, c, state, state_length, &t, &f, &key);
    size_t length = crypto_aead_xchacha20poly1305_ietf_NPUBBYTES + plaintext_length + crypto_aead_xchacha20poly1305_ietf_ABYTES;
    if (s == KEYBAY_OK && !buffer_alloc(sealed_out, length)) s = fail(host, KEYBAY_ERR_INTERNAL, "out of memory");
    if (s == KEYBAY_OK) {
        uint8_t *nonce = sealed_out->data;
        randombytes_buf(nonce, crypto_aead_xchacha20poly1305_ietf_NPUBBYTES);
        unsigned long long written = 0;
        crypto_aead_xchacha20poly1305_ietf_encrypt(nonce + crypto_aead_xchacha20poly1305_ietf_NPUBBYTES, &written, plaintext,
                                                   plaintext_length, aad, aad_length, NULL, nonce, key);
    }
    release(&t, f, key);
    return s;
}

static keybay_status root_open_with_floor(const keybay_host *host, const keybay_root_context *c, const uint8_t *state,
                                          size_t state_length, const uint8_t *sealed, size_t sealed_length, const uint8_t *aad,
                                          size_t aad_length, keybay_buffer *plaintext_out, uint64_t *floor_out) {
    const size_t overhead = crypto_aead_xchacha20poly1305_ietf_NPUBBYTES + crypto_aead_xchacha20poly1305_ietf_ABYTES;
    tpm t;
    root_file *f;
    uint8_t *key;
    keybay_status s = with_root_key(host, c, state, state_length, &t, &f, &key);
    ESYS_TR nv = ESYS_TR_NONE;
    if (s == KEYBAY_OK) s = open_counter(host, &t, f, &nv);
    if (s == KEYBAY_OK) s = read_floor(host, &t, f, nv, floor_out);
    if (s == KEYBAY_OK && sealed_length <= overhead) s = fail(host, KEYBAY_ERR_INTEGRITY, "the sealed key package is too short for the tpm2 root");
    if (s == KEYBAY_OK && !buffer_alloc(plaintext_out, sealed_length - overhead)) s = fail(host, KEYBAY_ERR_INTERNAL, "out of memory");
    if (s == KEYBAY_OK) {
        unsigned long long written = 0;
        if (crypto_aead_xchacha20poly1305_ietf_decrypt(plaintext_out->data, &written, NULL, sealed + crypto_aead_xchacha20poly1305_ietf_NPUBBYTES,
                                                       sealed_length - crypto_aead_xchacha20poly1305_ietf_NPUBBYTES, aad, aad_length, sealed, key) != 0) {
            keybay_rf_free_buffer(plaintext_out);
            s = fail(host, KEYBAY_ERR_INTEGRITY, "the store's key package failed authentication with the tpm2 root (the store file was modified)");
        }
    }
    if (nv != ESYS_TR_NONE) T(Esys_TR_Close)(t.esys, &nv);
    release(&t, f, key);
    return s;
}

/* Increments the counter until counter - base reaches `epoch` (never lowers it). */
static keybay_status root_raise_floor(const keybay_host *host, const keybay_root_context *c, const uint8_t *state,
                                      size_t state_length, uint64_t epoch) {
    tpm t;
    keybay_status s = tpm_open(host, c, 0, &t);
    if (s != KEYBAY_OK) return s;
    root_file *f = sodium_malloc(sizeof *f);
    if (!f) s = fail(host, KEYBAY_ERR_INTERNAL, "out of memory");
    if (s == KEYBAY_OK) s = load_file(host, c, state, state_length, f);
    ESYS_TR nv = ESYS_TR_NONE;
    uint64_t floor = 0;
    if (s == KEYBAY_OK) s = open_counter(host, &t, f, &nv);
    if (s == KEYBAY_OK) s = read_floor(host, &t, f, nv, &floor);
    if (s == KEYBAY_OK && epoch > floor && epoch - floor > MAX_INCREMENTS)
        s = fail(host, KEYBAY_ERR_INTERNAL, "refusing to raise the rollback floor from %llu to %llu in one step",
                 (unsigned long long)floor, (unsigned long long)epoch);
    for (; s == KEYBAY_OK && floor < epoch; floor++) {
        TSS2_RC rc = T(Esys_NV_Increment)(t.esys, nv, nv, ESYS_TR_PASSWORD, ESYS_TR_NONE, ESYS_TR_NONE);
        if (rc != TSS2_RC_SUCCESS) s = tpm_fail(host, &t, rc, KEYBAY_ERR_INTERNAL, "cannot increment the rollback counter");
    }
    if (nv != ESYS_TR_NONE) T(Esys_TR_Close)(t.esys, &nv);
    if (f) sodium_free(f);
    tpm_close(&t);
    return s;
}

/* Undefines the counter (only if it is still the one the file names) and removes the file. A
   TPM that cannot be reached (another machine, no permission) does not keep reset from working:
   the file goes, and the counter stays in that TPM (docs/security.md says how to remove it). */
static keybay_status root_reset(const keybay_host *host, const keybay_root_context *c) {
    int exists = 0;
    keybay_status s = keybay_rf_exists(host, c, FILE_NAME, &exists);
    if (s != KEYBAY_OK || !exists) return s == KEYBAY_OK ? keybay_rf_remove(host, c, FILE_NAME) : s;
    tpm t;
    if ((s = tpm_open(host, c, 0, &t)) != KEYBAY_OK) {
        if (s != KEYBAY_ERR_NOT_AVAILABLE) return s;
        keybay_host_log(host, KEYBAY_LOG_ERROR, "tpm2 reset: the TPM cannot be reached; its rollback counter stays in it");
        return keybay_rf_remove(host, c, FILE_NAME);
    }
    root_file *f = sodium_malloc(sizeof *f);
    if (!f) s = fail(host, KEYBAY_ERR_INTERNAL, "out of memory");
    /* A file that does not decode names no counter of ours: it is removed all the same. */
    if (s == KEYBAY_OK && load_file(NULL, c, NULL, 0, f) == KEYBAY_OK) {
        ESYS_TR nv;
        keybay_status found = open_counter(host, &t, f, &nv);
        if (found == KEYBAY_OK) {
            TSS2_RC rc = T(Esys_NV_UndefineSpace)(t.esys, ESYS_TR_RH_OWNER, nv, ESYS_TR_PASSWORD, ESYS_TR_NONE, ESYS_TR_NONE);
            if (rc != TSS2_RC_SUCCESS) s = tpm_fail(host, &t, rc, KEYBAY_ERR_INTERNAL, "cannot remove the rollback counter");
        } else if (found == KEYBAY_ERR_NOT_AVAILABLE) {
            s = found;
        }
    }
    if (s == KEYBAY_OK) s = keybay_rf_remove(host, c, FILE_NAME);
    if (f) sodium_free(f);
    tpm_close(&t);
    return s;
}

static keybay_status copy_text(const keybay_host *host, const char *text, keybay_buffer *out) {
    size_t n = strlen(text);
    if (!buffer_alloc(out, n)) return fail(host, KEYBAY_ERR_INTERNAL, "out of memory");
    memcpy(out->data, text, n);
    return KEYBAY_OK;
}

/* "<path> (sealed by the TPM at ...)": the file is enough, status needs no TPM access. */
static keybay_status root_location(const keybay_host *host, const keybay_root_context *c, keybay_buffer *text_out) {
    char where[300], path[KEYBAY_ROOT_PATH_BYTES], text[4600];
    describe_tcti(where, sizeof where);
    if (keybay_rf_path(c, FILE_NAME, path, sizeof path) < 0)
        return fail(host, KEYBAY_ERR_IO, "the tpm2 root file's path under %.64s... is longer than PATH_MAX", c->state_home);
    snprintf(text, sizeof text, "%s (sealed by %s)", path, where);
    return copy_text(host, text, text_out);
}

static const char protection_note[] =
    "tpm2 seals the platform key to this machine's TPM and keeps the rollback floor in a TPM counter: it protects against copied "
    "files, backups, other users and any older copy of the store put back, not against other programs running as this user "
    "while they can use the TPM";

static keybay_status root_protection(const keybay_host *host, const keybay_root_context *c, keybay_buffer *text_out) {
    (void)c;
    return copy_text(host, protection_note, text_out);
}

static const keybay_option_spec option_specs[] = {
    { "pcrs", "bind the root to PCRs of the SHA-256 bank at their current values, e.g. 7 (Secure Boot) or 0,7; a change "
              "of any invalidates the root" },
};

static const keybay_plugin descriptor = {
    .abi_version = KEYBAY_PLUGIN_ABI_VERSION,
    .struct_size = sizeof(keybay_plugin),
    .id = "tpm2",
    .name = "TPM 2.0 (sealed to this machine's TPM)",
    .version = "1.0.0",
    .kind = KEYBAY_KIND_ROOT,
    .flags = KEYBAY_FLAG_NEEDS_DEVICE,
    .options = option_specs,
    .option_count = sizeof option_specs / sizeof option_specs[0],
    .free_buffer = keybay_rf_free_buffer,
    .root_exists = root_exists,
    .root_seal = root_seal,
    .root_reset = root_reset,
    .root_location_with_host = root_location,
    .root_protection = root_protection,
    .root_open_with_floor = root_open_with_floor,
    .root_raise_floor = root_raise_floor,
    .root_create_with_options = root_create_with_options,
};

KEYBAY_EXPORT const keybay_plugin *keybay_plugin_entry_v1(void) {
    if (sodium_init() < 0) return NULL;
    return &descriptor;
}
