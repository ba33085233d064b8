// SPDX-License-Identifier: Apache-2.0
/* tpm2-tss (and the libcrypto it links), opened with dlopen on first use: see include/keybay_tpm2.h. */
#define _POSIX_C_SOURCE 200809L

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "keybay_tpm2.h"

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
