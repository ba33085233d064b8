// SPDX-License-Identifier: Apache-2.0
/* Whether the PCRs now in effect open the root: a signed policy's ticket (verified, or kept beside
   the root file from an earlier open), the bound PCRs in the way, and the pcr-mismatch failure. */
#define _POSIX_C_SOURCE 200809L

#include <string.h>

#include <sodium.h>

#include "keybay_plugin_host.h"
#include "tpm2_root_internal.h"

/* The TPM's verification ticket for `policy`, kept beside the root file by an earlier open
   (docs/format.md §12): 1 and *out when the file holds one for this key, PCRs and policy. */
static int kept_ticket(const root_file *f, const uint8_t policy[32], TPMT_TK_VERIFIED *out) {
    uint8_t b[TICKET_HEAD + 8 + sizeof out->digest.buffer];
    size_t n = 0;
    if (!f->context || keybay_rf_read(NULL, f->context, TICKET_FILE, "the tpm2 ticket", b, sizeof b, &n) != KEYBAY_OK || n < TICKET_HEAD + 8 ||
        memcmp(b, TICKET_MAGIC, 4) != 0 || get_be(b + 4, 2) != 1 || memcmp(b + 6, f->key.fingerprint, 32) != 0 || get_be(b + 38, 4) != f->pcrs ||
        memcmp(b + 42, policy, 32) != 0)
        return 0;
    size_t digest = (size_t)get_be(b + TICKET_HEAD + 6, 2);
    if (digest > sizeof out->digest.buffer || TICKET_HEAD + 8 + digest != n) return 0;
    out->tag = (TPM2_ST)get_be(b + TICKET_HEAD, 2);
    out->hierarchy = (TPMI_RH_HIERARCHY)get_be(b + TICKET_HEAD + 2, 4);
    out->digest.size = (UINT16)digest;
    memcpy(out->digest.buffer, b + TICKET_HEAD + 8, digest);
    return 1;
}

/* Keeps the ticket for the next open (a failure to write it only costs the next open a
   verification: the file is an optimisation, never trusted, as PolicyAuthorize checks it). */
static void keep_ticket(const root_file *f, const uint8_t policy[32], const TPMT_TK_VERIFIED *ticket) {
    uint8_t b[TICKET_HEAD + 8 + sizeof ticket->digest.buffer];
    if (!f->context || ticket->digest.size > sizeof ticket->digest.buffer) return;
    memcpy(b, TICKET_MAGIC, 4);
    put_be(b + 4, 1, 2);
    memcpy(b + 6, f->key.fingerprint, 32);
    put_be(b + 38, f->pcrs, 4);
    memcpy(b + 42, policy, 32);
    put_be(b + TICKET_HEAD, ticket->tag, 2);
    put_be(b + TICKET_HEAD + 2, ticket->hierarchy, 4);
    put_be(b + TICKET_HEAD + 6, ticket->digest.size, 2);
    memcpy(b + TICKET_HEAD + 8, ticket->digest.buffer, ticket->digest.size);
    (void)keybay_rf_replace(NULL, f->context, TICKET_FILE, b, TICKET_HEAD + 8 + ticket->digest.size);
}

/* The ticket of a signature in the signature file that authorizes `policy` for the root's key:
   *have, and *cached when it was the one kept from an earlier open (`use_kept`) rather than
   verified now; one verified now is kept for the next open unless this is a check (`check`:
   `status` and `root check` write nothing). The entry must be in the file either way: removing
   it revokes the state. */
keybay_status signed_ticket(const keybay_host *host, tpm *t, const root_file *f, const uint8_t policy[32], int use_kept, int check,
                            TPMT_TK_VERIFIED *ticket, int *have, int *cached) {
    *have = *cached = 0;
    const char *file = keybay_tpm2_signature_file(f->signature_path);
    if (!file) return KEYBAY_OK;
    uint8_t signature[KEYBAY_TPM2_MAX_SIGNATURE];
    size_t length = 0;
    int found = 0, valid = 0;
    keybay_status s = keybay_tpm2_find_signature(host, file, &f->key, f->pcrs, policy, signature, &length, &found);
    if (s != KEYBAY_OK || !found) return s;
    if (use_kept && kept_ticket(f, policy, ticket)) { *have = *cached = 1; return KEYBAY_OK; }
    TPMT_TK_VERIFIED *fresh = NULL;
    s = keybay_tpm2_verify_signature(host, t, &f->key, policy, signature, length, &fresh, &valid);
    if (s == KEYBAY_OK && valid && fresh) {
        *ticket = *fresh;
        *have = 1;
        if (!check) keep_ticket(f, policy, fresh);
    }
    if (fresh) T(Esys_Free)(fresh);
    return s;
}

/* The bound PCRs whose values now keep the object from unsealing: 0 when the values now in
   effect give the object's policy; else those that differ from the values the file records,
   or every bound PCR for a version-1 file (it records none) or values that all agree (the
   policy itself was changed). */
keybay_status pcrs_in_the_way(const keybay_host *host, tpm *t, const root_file *f, uint32_t *differing) {
    *differing = 0;
    if (!f->pcrs) return KEYBAY_OK;
    uint8_t now[KEYBAY_TPM2_PCRS][32], digest[32];
    keybay_status s = keybay_tpm2_read_pcrs(host, t, f->pcrs, now);
    if (s != KEYBAY_OK) return s;
    keybay_tpm2_pcr_policy(f->pcrs, (const uint8_t (*)[32])now, digest);
    if (f->has_signed) {
        TPMT_TK_VERIFIED ticket;
        int have = 0, cached = 0;
        s = signed_ticket(host, t, f, digest, 1, 1, &ticket, &have, &cached);
        if (s != KEYBAY_OK || have) return s;
    } else {
        const TPM2B_DIGEST *policy = &f->public.publicArea.authPolicy;
        if (policy->size == sizeof digest && sodium_memcmp(policy->buffer, digest, sizeof digest) == 0) return KEYBAY_OK;
    }
    *differing = f->has_pcr_values ? keybay_tpm2_pcrs_differing(f->pcrs, (const uint8_t (*)[32])f->pcr_values, (const uint8_t (*)[32])now) : 0;
    if (!*differing) *differing = f->pcrs;
    return KEYBAY_OK;
}

/* The pcr-mismatch failure, naming the PCRs that changed (all the bound ones when they cannot be read). */
keybay_status pcr_mismatch(const keybay_host *host, tpm *t, const root_file *f) {
    uint32_t differing = 0;
    if (pcrs_in_the_way(NULL, t, f, &differing) != KEYBAY_OK || !differing) differing = f->pcrs;
    char list[80];
    keybay_tpm2_format_pcrs(differing, list, sizeof list);
    keybay_host_error_reason(host, "pcr-mismatch");
    keybay_host_error_pcrs(host, differing);
    if (f->has_signed) {
        const char *file = keybay_tpm2_signature_file(f->signature_path);
        return fail(host, KEYBAY_ERR_ROOT_MISMATCH, "platform key invalidated: no signature in %s authorizes the values PCR %s (SHA-256) holds now "
                    "for the root's key (they changed since sealing: %s); install the signature for this boot", file ? file : "the default "
                    "signature files (none exists)", list, differing == f->pcrs && !f->has_pcr_values ? "unknown" : "these");
    }
    return fail(host, KEYBAY_ERR_ROOT_MISMATCH, "platform key invalidated: PCR %s (SHA-256) no longer holds the value%s the root was sealed to "
                "(a firmware, boot loader, kernel or Secure Boot change)", list, differing & (differing - 1) ? "s" : "");
}
