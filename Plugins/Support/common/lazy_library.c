// SPDX-License-Identifier: Apache-2.0
/* A library opened on first use: see include/keybay_lazy_library.h. */
#include "keybay_lazy_library.h"

#include <stdio.h>
#include <string.h>

static void load(keybay_lazy_library *library) {
    dlerror();
    void *handle = dlopen(library->soname, library->mode | RTLD_LOCAL);
    if (handle == NULL) {
        const char *why = dlerror();
        snprintf(library->error, sizeof library->error, "%s", why != NULL ? why : "unknown error");
        library->state = -1;
        return;
    }
    for (size_t i = 0; i < library->count; i++) {
        library->table[i] = dlsym(handle, library->names[i]);
        if (library->table[i] == NULL) {
            /* dlerror's line names the file found and the symbol ("...: undefined symbol: x"). */
            const char *why = dlerror();
            if (why != NULL) snprintf(library->error, sizeof library->error, "%s", why);
            else snprintf(library->error, sizeof library->error, "%s has no %s", library->soname, library->names[i]);
            /* Nothing half-filled stays callable. */
            memset(library->table, 0, library->count * sizeof library->table[0]);
            dlclose(handle);
            library->state = -1;
            return;
        }
    }
    library->state = 1; /* the handle stays open for the life of the process */
}

const char *keybay_lazy_library_open(keybay_lazy_library *library) {
    pthread_mutex_lock(&library->lock);
    if (library->state == 0) load(library);
    int opened = library->state == 1;
    pthread_mutex_unlock(&library->lock);
    return opened ? NULL : library->error; /* error is written once, before state leaves 0 */
}
