// SPDX-License-Identifier: Apache-2.0
/* The fido2 core's libfido2, opened on first use, and the security keys it finds: fido2_internal.h. */
#define _POSIX_C_SOURCE 200809L

#include "fido2_internal.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <sodium.h>

#include "keybay_plugin_host.h"

/* Here, where it is opened: PackagingTests reads the sonames from the .c files. */
#define F2_LIBRARY "libfido2.so.1"

/* ---------------------------------------------------------------- libfido2, opened on first use */

struct f2_lib f2_lib; /* filled only when every symbol resolved; used only after f2_init succeeded */
KEYBAY_LAZY_LIBRARY(f2_library, F2_LIBRARY, RTLD_NOW, f2_lib, F2_FUNCTIONS, KEYBAY_LAZY_NAME);

static pthread_once_t f2_once = PTHREAD_ONCE_INIT;
static int f2_sodium_ok;
static const char *f2_lib_error; /* why libfido2 could not be loaded, NULL when it was */

static void f2_init_once(void) {
    f2_lib_error = keybay_lazy_library_open(&f2_library);
    if (f2_lib_error == NULL) F2(fido_init)(0);
    f2_sodium_ok = sodium_init() >= 0;
}

/* Loads libfido2 and libsodium once; every operation that touches a key calls this first. */
keybay_status f2_init(const keybay_host *host) {
    pthread_once(&f2_once, f2_init_once);
    if (f2_lib_error != NULL) {
        keybay_host_error_reason(host, "library-missing");
        keybay_host_error(host, "fido2: cannot load " F2_LIBRARY " (%s); FIDO2 security keys need libfido2 (Debian: libfido2-1)",
                 f2_lib_error);
        return KEYBAY_ERR_NOT_AVAILABLE;
    }
    if (!f2_sodium_ok) {
        keybay_host_error(host, "fido2: libsodium could not be initialised");
        return KEYBAY_ERR_INTERNAL;
    }
    return KEYBAY_OK;
}

/* ---------------------------------------------------------------- devices */

static int f2_real_list(char paths[][KEYBAY_FIDO2_PATH_MAX], size_t capacity, size_t *count) {
    *count = 0;
    fido_dev_info_t *list = F2(fido_dev_info_new)(capacity);
    if (list == NULL) return -1;
    size_t found = 0;
    if (F2(fido_dev_info_manifest)(list, capacity, &found) != FIDO_OK) {
        F2(fido_dev_info_free)(&list, capacity);
        return -1;
    }
    for (size_t i = 0; i < found && *count < capacity; i++) {
        const char *path = F2(fido_dev_info_path)(F2(fido_dev_info_ptr)(list, i));
        if (path == NULL || strlen(path) >= KEYBAY_FIDO2_PATH_MAX) continue;
        strcpy(paths[(*count)++], path);
    }
    F2(fido_dev_info_free)(&list, capacity);
    return 0;
}

static fido_dev_t *f2_real_new_device(const char *path) {
    (void)path;
    return F2(fido_dev_new)();
}

static const keybay_fido2_device_opener f2_real_opener = {f2_real_list, f2_real_new_device};
static const keybay_fido2_device_opener *f2_opener = &f2_real_opener;

void keybay_fido2_set_device_opener(const keybay_fido2_device_opener *opener) {
    f2_opener = opener != NULL ? opener : &f2_real_opener;
}

/* Every use of the device opener starts here, so nothing reaches a device (or libfido2) before
   f2_init succeeded; the opener's fido_dev_t must come from that same libfido2.so.1. */
keybay_status f2_list(const keybay_host *host, f2_device_list *list) {
    keybay_status status = f2_init(host);
    if (status != KEYBAY_OK) return status;
    if (f2_opener->list(list->paths, KEYBAY_FIDO2_MAX_DEVICES, &list->count) != 0) {
        keybay_host_error(host, "fido2: cannot list FIDO devices");
        return KEYBAY_ERR_NOT_AVAILABLE;
    }
    if (list->count > KEYBAY_FIDO2_MAX_DEVICES) list->count = KEYBAY_FIDO2_MAX_DEVICES;
    return KEYBAY_OK;
}

void f2_close(fido_dev_t **dev) {
    if (*dev == NULL) return;
    F2(fido_dev_close)(*dev);
    F2(fido_dev_free)(dev);
}

/* Opens `path`; returns NULL (and the libfido2 error in *rc) if it cannot be opened. */
fido_dev_t *f2_open(const char *path, int *rc) {
    fido_dev_t *dev = f2_opener->new_device(path);
    if (dev == NULL) {
        *rc = FIDO_ERR_INTERNAL;
        return NULL;
    }
    if ((*rc = F2(fido_dev_open)(dev, path)) != FIDO_OK) {
        F2(fido_dev_free)(&dev);
        return NULL;
    }
    return dev;
}

/* Does the (open) device speak CTAP2 and offer hmac-secret? */
keybay_status f2_check_device(const keybay_host *host, fido_dev_t *dev, const char *path) {
    if (!F2(fido_dev_is_fido2)(dev)) {
        keybay_host_error_reason(host, "u2f-only");
        keybay_host_error(host, "fido2: %s is a U2F-only key; hmac-secret needs a FIDO2 key", path);
        return KEYBAY_ERR_UNSUPPORTED;
    }
    fido_cbor_info_t *info = F2(fido_cbor_info_new)();
    if (info == NULL) return KEYBAY_ERR_INTERNAL;
    int rc = F2(fido_dev_get_cbor_info)(dev, info);
    int hmac = 0;
    if (rc == FIDO_OK) {
        char **ext = F2(fido_cbor_info_extensions_ptr)(info);
        for (size_t i = 0; i < F2(fido_cbor_info_extensions_len)(info); i++)
            if (strcmp(ext[i], "hmac-secret") == 0) hmac = 1;
    }
    F2(fido_cbor_info_free)(&info);
    if (rc != FIDO_OK) {
        keybay_host_error(host, "fido2: %s did not describe itself (%s)", path, F2(fido_strerr)(rc));
        return KEYBAY_ERR_NOT_AVAILABLE;
    }
    if (!hmac) {
        keybay_host_error_reason(host, "no-hmac-secret");
        keybay_host_error(host, "fido2: the key at %s does not offer the hmac-secret extension", path);
        return KEYBAY_ERR_UNSUPPORTED;
    }
    return KEYBAY_OK;
}

