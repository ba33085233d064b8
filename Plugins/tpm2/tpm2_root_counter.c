// SPDX-License-Identifier: Apache-2.0
/* The NV counter that holds the tpm2 root's rollback floor: defined at creation, checked to be
   still the one the root file names, read, and undefined. */
#define _POSIX_C_SOURCE 200809L

#include <string.h>

#include <sodium.h>

#include "keybay_plugin_host.h"
#include "tpm2_root_internal.h"

/* The counter's ESYS handle, after checking that the index is still the one the root file
   names (its TPM name covers its attributes: a counter, defined by us, written). */
keybay_status open_counter(const keybay_host *host, tpm *t, const root_file *f, ESYS_TR *nv) {
    TSS2_RC rc = T(Esys_TR_FromTPMPublic)(t->esys, f->nv_index, ESYS_TR_NONE, ESYS_TR_NONE, ESYS_TR_NONE, nv);
    if (rc != TSS2_RC_SUCCESS) {
        *nv = ESYS_TR_NONE;
        if (!rc_layer_is_tpm(rc) || !(rc & TPM2_RC_FMT1)) return tpm_fail(host, t, rc, KEYBAY_ERR_INTERNAL, "cannot find the rollback counter");
        keybay_host_error_reason(host, "counter-missing");
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
        keybay_host_error_reason(host, "counter-redefined");
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
keybay_status read_floor(const keybay_host *host, tpm *t, const root_file *f, ESYS_TR nv, uint64_t *floor) {
    uint64_t value;
    keybay_status s = read_counter(host, t, nv, &value);
    if (s == KEYBAY_OK && value < f->base)
        s = fail(host, KEYBAY_ERR_ROOT_MISMATCH, "platform key invalidated: the rollback counter NV 0x%08x is below its base", (unsigned)f->nv_index);
    if (s == KEYBAY_OK) *floor = value - f->base;
    return s;
}

/* Defines the counter at the first free index of a range derived from the storage domain,
   increments it once (a counter reads only once written; it starts at the highest value any
   counter of this TPM had) and reads its base. */
keybay_status define_counter(const keybay_host *host, tpm *t, const keybay_root_context *c, root_file *f) {
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

void undefine_counter(tpm *t, const root_file *f) {
    ESYS_TR nv;
    if (open_counter(NULL, t, f, &nv) == KEYBAY_OK)
        T(Esys_NV_UndefineSpace)(t->esys, ESYS_TR_RH_OWNER, nv, ESYS_TR_PASSWORD, ESYS_TR_NONE, ESYS_TR_NONE);
}
