/*
 * SPDX-License-Identifier: Apache-2.0
 * One credential of an import put into the store under the import rules (docs/integrations.md,
 * "Migrating"): no record: imported; the same secret: unchanged; another secret: a conflict,
 * kept unless `replace`. A written record is read back before it counts as in the store.
 */
#ifndef KEYBAY_IMPORT_STORE_H
#define KEYBAY_IMPORT_STORE_H

#include <keybay/keybay.h>
#include "import_source.h"
#include "integration_record.h"

typedef enum {
    IMPORT_IN_STORE,  /* verifiably in the store now (or, in a dry run, would be) */
    IMPORT_CONFLICT,  /* another secret is stored; kept */
    IMPORT_FAILED,    /* a store call failed (said on stderr) or the record did not read back */
} import_outcome;

typedef struct {
    const char *program;
    keybay_store *store; /* NULL for a dry run with no store yet */
    int replace, dry_run;
} import_target;

/* `record` (of `max_tag` tags) under `key`; "the same" is equal fields at `same_tags`. Counts
 * imported, unchanged, replaced or conflicts in `counts`. */
import_outcome import_record(const import_target *target, const char *key, const integration_record *record, uint8_t max_tag,
                             const uint8_t *same_tags, size_t same_count, import_counts *counts);

#endif
