// SPDX-License-Identifier: Apache-2.0
/* The PCRs of the SHA-256 bank: named in the pcrs= option, selected, read, and the PolicyPCR
   digest of given values, computed here (TPM 2.0 Part 3, 23.7), so a root can tell which bound
   PCR changed without unsealing. */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "keybay_plugin_host.h"
#include "keybay_root_files.h"
#include "keybay_tpm2.h"

keybay_status keybay_tpm2_read_pcrs(const keybay_host *host, keybay_tpm2 *t, uint32_t mask, uint8_t values[KEYBAY_TPM2_PCRS][32]) {
    uint32_t left = mask & KEYBAY_TPM2_PCR_MASK;
    /* A TPM answers at most 8 digests a read, and says which it gave. */
    while (left) {
        TPML_PCR_SELECTION in = keybay_tpm2_pcr_selection(left), *out = NULL;
        TPML_DIGEST *digests = NULL;
        UINT32 counter = 0;
        TSS2_RC rc = T(Esys_PCR_Read)(t->esys, ESYS_TR_NONE, ESYS_TR_NONE, ESYS_TR_NONE, &in, &counter, &out, &digests);
        if (rc != TSS2_RC_SUCCESS) return keybay_tpm2_fail(host, t, rc, KEYBAY_ERR_INTERNAL, "cannot read the PCRs");
        uint32_t given = 0;
        for (UINT32 i = 0; i < out->count; i++) {
            if (out->pcrSelections[i].hash != TPM2_ALG_SHA256) continue;
            for (int b = 0; b < out->pcrSelections[i].sizeofSelect && b < 3; b++) given |= (uint32_t)out->pcrSelections[i].pcrSelect[b] << (8 * b);
        }
        given &= left;
        UINT32 n = 0;
        int ok = given != 0;
        for (int pcr = 0; ok && pcr < KEYBAY_TPM2_PCRS; pcr++) {
            if (!(given >> pcr & 1)) continue;
            if (n >= digests->count || digests->digests[n].size != 32) { ok = 0; break; }
            memcpy(values[pcr], digests->digests[n++].buffer, 32);
        }
        ok = ok && n == digests->count;
        T(Esys_Free)(out);
        T(Esys_Free)(digests);
        if (!ok) return keybay_rf_fail(host, KEYBAY_ERR_INTERNAL, "%s answered a PCR read (SHA-256 bank, mask 0x%06x) with digests that do not "
                                       "match its selection", t->where, (unsigned)left);
        left &= ~given;
    }
    return KEYBAY_OK;
}

void keybay_tpm2_pcr_policy(uint32_t mask, const uint8_t values[KEYBAY_TPM2_PCRS][32], uint8_t digest[32]) {
    /* policyDigest' = H(policyDigest (zeros) || TPM_CC_PolicyPCR || TPML_PCR_SELECTION || H(the values in PCR order)) */
    uint8_t head[32 + 4 + 10] = { 0 }, values_digest[32];
    crypto_hash_sha256_state h;
    crypto_hash_sha256_init(&h);
    for (int pcr = 0; pcr < KEYBAY_TPM2_PCRS; pcr++)
        if (mask >> pcr & 1) crypto_hash_sha256_update(&h, values[pcr], 32);
    crypto_hash_sha256_final(&h, values_digest);
    keybay_tpm2_put_be(head + 32, TPM2_CC_PolicyPCR, 4);
    keybay_tpm2_put_be(head + 36, 1, 4);               /* count */
    keybay_tpm2_put_be(head + 40, TPM2_ALG_SHA256, 2); /* hash */
    head[42] = 3;                                      /* sizeofSelect */
    for (int b = 0; b < 3; b++) head[43 + b] = (uint8_t)(mask >> (8 * b));
    crypto_hash_sha256_init(&h);
    crypto_hash_sha256_update(&h, head, sizeof head);
    crypto_hash_sha256_update(&h, values_digest, sizeof values_digest);
    crypto_hash_sha256_final(&h, digest);
}

uint32_t keybay_tpm2_pcrs_differing(uint32_t mask, const uint8_t recorded[KEYBAY_TPM2_PCRS][32], const uint8_t now[KEYBAY_TPM2_PCRS][32]) {
    uint32_t differing = 0;
    for (int pcr = 0; pcr < KEYBAY_TPM2_PCRS; pcr++)
        if ((mask >> pcr & 1) && sodium_memcmp(recorded[pcr], now[pcr], 32) != 0) differing |= 1u << pcr;
    return differing;
}

int keybay_tpm2_format_pcrs(uint32_t mask, char *out, size_t size) {
    size_t at = 0;
    if (size) out[0] = 0;
    for (int pcr = 0; pcr < KEYBAY_TPM2_PCRS; pcr++) {
        if (!(mask >> pcr & 1)) continue;
        int n = snprintf(out + at, size - at, "%s%d", at ? "," : "", pcr);
        if (n < 0 || (size_t)n >= size - at) return -1;
        at += (size_t)n;
    }
    return 0;
}

/* PCR selection (SHA-256 bank) from a bit mask of PCRs 0–23. */
TPML_PCR_SELECTION keybay_tpm2_pcr_selection(uint32_t mask) {
    TPML_PCR_SELECTION s = { .count = 1 };
    s.pcrSelections[0].hash = TPM2_ALG_SHA256;
    s.pcrSelections[0].sizeofSelect = 3;
    for (int i = 0; i < 3; i++) s.pcrSelections[0].pcrSelect[i] = (uint8_t)(mask >> (8 * i));
    return s;
}

keybay_status keybay_tpm2_parse_pcrs(const keybay_host *host, const char *plugin, const keybay_option *options, size_t count,
                                     uint32_t *mask) {
    *mask = 0;
    for (size_t i = 0; i < count; i++) {
        if (strcmp(options[i].name, "pcrs") != 0) {
            keybay_host_error_reason(host, "unknown-option");
            return keybay_rf_fail(host, KEYBAY_ERR_INVALID_OPTION, "%s has no option '%s' (it takes pcrs=N[,N...])", plugin, options[i].name);
        }
        const char *p = options[i].value;
        do {
            char *end;
            errno = 0;
            long pcr = strtol(p, &end, 10);
            if (end == p || errno || pcr < 0 || pcr > 23 || (*end && *end != ',')) {
                keybay_host_error_reason(host, "invalid-pcrs");
                return keybay_rf_fail(host, KEYBAY_ERR_INVALID_OPTION, "%s pcrs=%s: give PCR numbers 0-23 separated by commas", plugin, options[i].value);
            }
            *mask |= 1u << pcr;
            p = *end ? end + 1 : end;
        } while (*p);
    }
    return KEYBAY_OK;
}
