// SPDX-License-Identifier: Apache-2.0
/*
 * tpm2_root_internal.h — what the tpm2 root's files share: the root file's layout and limits,
 * its decoded form, and the functions one file calls in another. Private to libkeybay-tpm2.so:
 * the functions are hidden, so the plugin still exports its entry point alone.
 */
#ifndef KEYBAY_TPM2_ROOT_INTERNAL_H
#define KEYBAY_TPM2_ROOT_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "keybay_plugin.h"
#include "keybay_root_files.h"
#include "keybay_tpm2.h"

#define fail keybay_rf_fail
#define buffer_alloc keybay_rf_buffer_alloc

#define ROOT_KEY_BYTES 32
#define FILE_NAME "tpm2-root.sealed"
#define FILE_MAGIC "KBT2"
#define FILE_VERSION 1        /* a root without PCRs, as before */
#define FILE_VERSION_FIELDS 2 /* followed by tagged fields: a root with PCRs */
#define FIELD_RECOVERY 0x0001u   /* the recovery object: kept for the root's life */
#define FIELD_SIGNED 0x0002u     /* the key that signs PCR policies, and where its signatures are */
#define SIGNATURE_PATH_BYTES KEYBAY_TPM2_SIGNATURE_PATH_BYTES
#define TICKET_FILE "tpm2-root.ticket"
#define TICKET_MAGIC "KBTK"
#define TICKET_HEAD 74 /* magic | version:u16 | pkfp(32) | pcrs:u32 | policy(32) */
#define FIELD_PCR_VALUES 0x8001u /* resealable (high bit): outside the provider state's binding */
#define MAX_FILE_BYTES 2048
#define STATE_BYTES 44 /* nvIndex:u32 | base:u64 | binding(32) */
#define NV_FIRST 0x01000000u /* the owner's NV range (TCG handle registry) */
#define NV_SPAN 0x00400000u
#define NV_PROBES 32
#define MAX_INCREMENTS 4096 /* one rotation is one increment; more than this is not a floor */

/* ---------------------------------------------------------------- the TPM (Plugins/Support/tpm2) */

typedef keybay_tpm2 tpm;
#define rc_layer_is_tpm keybay_tpm2_rc_is_tpm
#define rc_base keybay_tpm2_rc_base
#define tpm_fail keybay_tpm2_fail
#define tpm_close keybay_tpm2_close
#define flush keybay_tpm2_flush
#define flush_leftovers keybay_tpm2_flush_leftovers
#define create_primary keybay_tpm2_create_primary
#define describe_tcti keybay_tpm2_describe_tcti
#define put_be keybay_tpm2_put_be
#define get_be keybay_tpm2_get_be

/* ---------------------------------------------------------------- the root file */

/*
 * "KBT2" | version:u16 (1 or 2) | nvIndex:u32 | base:u64 | pcrs:u32 | nvName:LP16 | public:LP16 | private:LP16
 * public and private are TPM2B_PUBLIC / TPM2B_PRIVATE as the TPM marshals them (their own size
 * first); nvName is the NV counter's TPM name once written (nameAlg | SHA-256 of its public area).
 * Version 2 goes on with fields, tag:u16 | value:LP16, tags strictly increasing, none unknown:
 * 0x0001 the recovery object (public:LP16 | private:LP16), 0x0002 the signed policy's key and
 * signature file (spki:LP16 | path:LP16), 0x8001 the bound PCRs' SHA-256 values at sealing, in
 * PCR order (docs/format.md §12).
 */
typedef struct root_file {
    uint8_t bytes[MAX_FILE_BYTES];
    size_t length;
    uint16_t version;
    size_t fields_at;       /* version 2: where the fields begin */
    int has_pcr_values;
    uint8_t pcr_values[KEYBAY_TPM2_PCRS][32];
    int has_recovery;
    TPM2B_PUBLIC recovery_public;
    TPM2B_PRIVATE recovery_private;
    int has_signed;
    keybay_tpm2_signing_key key;
    char signature_path[SIGNATURE_PATH_BYTES]; /* "" for the default files */
    const keybay_root_context *context;        /* where the file was read (the ticket kept beside it); NULL while creating */
    uint32_t nv_index;
    uint64_t base;
    uint32_t pcrs;
    TPM2B_NAME nv_name;
    TPM2B_PUBLIC public;
    TPM2B_PRIVATE private;
} root_file;

#pragma GCC visibility push(hidden)

/* tpm2_root.c: the TPM for one operation, this user's turn on it taken. */
keybay_status tpm_open(const keybay_host *host, const keybay_root_context *c, int create, tpm *t);

/* tpm2_root_file.c: the root file's strict decoding and its encoding, the provider state that
   binds it to the store, and its reading. */
keybay_status decode_file(const keybay_host *host, const char *path, root_file *f);
keybay_status encode_file(const keybay_host *host, root_file *f);
void provider_state(const root_file *f, const uint8_t *domain, uint8_t out[STATE_BYTES]);
keybay_status load_file(const keybay_host *host, const keybay_root_context *c, const uint8_t *state, size_t state_length,
                        root_file *f);

/* tpm2_root_pcr_policy.c: whether the PCRs now in effect open the root, and the failure when not. */
keybay_status signed_ticket(const keybay_host *host, tpm *t, const root_file *f, const uint8_t policy[32], int use_kept, int check,
                            TPMT_TK_VERIFIED *ticket, int *have, int *cached);
keybay_status pcrs_in_the_way(const keybay_host *host, tpm *t, const root_file *f, uint32_t *differing);
keybay_status pcr_mismatch(const keybay_host *host, tpm *t, const root_file *f);

/* tpm2_root_sealed_key.c: the root key sealed as the root's main object, loaded and unsealed. */
keybay_status seal_main(const keybay_host *host, tpm *t, root_file *f, const uint8_t *key);
keybay_status load_object(const keybay_host *host, tpm *t, const root_file *f, const char *path, ESYS_TR *object);
keybay_status unseal_root(const keybay_host *host, tpm *t, const root_file *f, const char *path, uint8_t *key);

/* tpm2_root_counter.c: the NV counter that holds the rollback floor. */
keybay_status open_counter(const keybay_host *host, tpm *t, const root_file *f, ESYS_TR *nv);
keybay_status read_floor(const keybay_host *host, tpm *t, const root_file *f, ESYS_TR nv, uint64_t *floor);
keybay_status define_counter(const keybay_host *host, tpm *t, const keybay_root_context *c, root_file *f);
void undefine_counter(tpm *t, const root_file *f);

/* tpm2_root_recovery.c: root recovery, sealed at creation and used by `root reseal`. */
keybay_status seal_recovery(const keybay_host *host, tpm *t, root_file *f, const uint8_t *key);
keybay_status root_reseal(const keybay_host *host, const keybay_root_context *c, const uint8_t *state, size_t state_length,
                          const uint8_t *secret, size_t secret_length);

#pragma GCC visibility pop

#endif /* KEYBAY_TPM2_ROOT_INTERNAL_H */
