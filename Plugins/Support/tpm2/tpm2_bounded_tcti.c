// SPDX-License-Identifier: Apache-2.0
/* A TCTI that gives up: see tpm2_bounded_tcti.h.

   tss2's own TCTIs wait as long as the TPM takes: swtpm's and mssim's block on their sockets
   (while connecting and initializing too), and ESAPI's synchronous calls wait for ever whatever
   timeout is set. So the TCTI tss2 loads runs on a thread of its own, and the TCTI Esys talks
   to (this one) hands each call over (initialization, every command) and waits for it until
   the operation's deadline. A command is one handover: the thread sends it and reads the
   response at once, which the receive calls then take (two handovers a command cost two thread
   switches more, each a wait for a core on a busy machine). A TPM that has not answered by then is abandoned:
   the thread finishes its call whenever the TPM answers, or never, then finalizes the TCTI and
   frees what it holds; nothing of the caller's is touched after the caller has returned. */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <time.h>

#include <sodium.h>

#include "keybay_plugin_host.h"
#include "keybay_root_files.h"
#include "keybay_tpm2.h"
#include "tpm2_bounded_tcti.h"

#define fail keybay_rf_fail
#define TCTI_MAX_BYTES KEYBAY_TPM2_TCTI_MAX_BYTES
typedef keybay_tpm2_bounded bounded;

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

keybay_status keybay_tpm2_bounded_start(const keybay_host *host, keybay_tpm2 *t) {
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

void keybay_tpm2_bounded_close(bounded *b) {
    TSS2_RC rc;
    if (!b->abandoned) bounded_call(b, OP_FINALIZE, &rc);
    bounded_release(b);
}

int keybay_tpm2_bounded_initialize(bounded *b, TSS2_RC *rc) { return bounded_call(b, OP_INIT, rc); }

int keybay_tpm2_bounded_abandoned(const bounded *b) { return b->abandoned; }
