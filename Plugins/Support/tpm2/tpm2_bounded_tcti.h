// SPDX-License-Identifier: Apache-2.0
/*
 * tpm2_bounded_tcti.h — the TCTI that gives up (tpm2_bounded_tcti.c): Esys talks to it, and it
 * hands every call to tss2's TCTI on a thread of its own, waiting no longer than the operation's
 * deadline. Private to this library, and hidden: the plugins that link it export their entry
 * points alone.
 */
#ifndef KEYBAY_TPM2_BOUNDED_TCTI_H
#define KEYBAY_TPM2_BOUNDED_TCTI_H

#include "keybay_tpm2.h"

#pragma GCC visibility push(hidden)

/* Puts it in front of the TCTI `t` chose (t->tcti) and starts its thread; nothing is loaded or
   reached yet. */
keybay_status keybay_tpm2_bounded_start(const keybay_host *host, keybay_tpm2 *t);

/* Loads and initializes tss2's TCTI on the thread: 1 when that was done before the deadline,
   with tss2's answer in *rc; 0 when the TPM was abandoned. */
int keybay_tpm2_bounded_initialize(keybay_tpm2_bounded *b, TSS2_RC *rc);

/* The deadline passed before the TPM answered: this and every later call fail at once. */
int keybay_tpm2_bounded_abandoned(const keybay_tpm2_bounded *b);

/* Finalizes tss2's TCTI (unless the TPM was abandoned, when the thread does once it answers)
   and lets go of it. */
void keybay_tpm2_bounded_close(keybay_tpm2_bounded *b);

#pragma GCC visibility pop

#endif /* KEYBAY_TPM2_BOUNDED_TCTI_H */
