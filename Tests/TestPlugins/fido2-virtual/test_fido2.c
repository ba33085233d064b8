// SPDX-License-Identifier: Apache-2.0
/*
 * libkeybay-test-fido2.so — the `fido2` method (the same core as libkeybay-fido2.so) wired to
 * the virtual authenticator (Tests/VirtualAuthenticator) instead of real HID devices, so tests
 * run the whole stack — loader, host bridge, plugin, libfido2, CTAP2 — without hardware.
 * Test support only; never installed.
 *
 * Besides keybay_plugin_entry_v1 it exports, for tests (dlopen + dlsym):
 *   int  keybay_test_fido2_set(int device, const char *name, const char *value);
 *   long keybay_test_fido2_get(int device, const char *name);
 *   void keybay_test_fido2_reset(void);
 * with the settings and counters of keybay_virtual_authenticator.h. A process that cannot call
 * them (the CLI) can configure the devices with KEYBAY_TEST_FIDO2, read when the plugin is first
 * loaded: "N:name=value;N:name=value" (e.g. "0:pin=1234;1:present=1").
 */
#define _POSIX_C_SOURCE 200809L

#include <stdlib.h>
#include <string.h>

#include "keybay_fido2_core.h"
#include "keybay_plugin.h"
#include "keybay_virtual_authenticator.h"

static int tf_list(char paths[][KEYBAY_FIDO2_PATH_MAX], size_t capacity, size_t *count) {
    char found[KEYBAY_VA_MAX_DEVICES][KEYBAY_VA_PATH_MAX];
    size_t n = keybay_va_list(found, KEYBAY_VA_MAX_DEVICES);
    *count = 0;
    for (size_t i = 0; i < n && *count < capacity; i++) strcpy(paths[(*count)++], found[i]);
    return 0;
}

static fido_dev_t *tf_new_device(const char *path) {
    (void)path;
    return keybay_va_new_device();
}

static const keybay_fido2_device_opener tf_opener = {tf_list, tf_new_device};

static void tf_configure_from_environment(void) {
    const char *env = getenv("KEYBAY_TEST_FIDO2");
    if (env == NULL || strlen(env) > 1024) return;
    char copy[1025];
    strcpy(copy, env);
    char *save = NULL;
    for (char *item = strtok_r(copy, ";", &save); item != NULL; item = strtok_r(NULL, ";", &save)) {
        int device = 0;
        if (item[0] >= '0' && item[0] <= '9' && item[1] == ':') {
            device = item[0] - '0';
            item += 2;
        }
        char *eq = strchr(item, '=');
        if (eq == NULL) continue;
        *eq = '\0';
        keybay_va_set(device, item, eq + 1);
    }
}

/* Isolated, the helper keeps only the environment a plugin declares. */
static const char *const tf_sandbox[] = {"env:KEYBAY_TEST_FIDO2", NULL};

static const keybay_plugin tf_plugin = KEYBAY_FIDO2_DESCRIPTOR("test-fido2", "FIDO2 on a virtual authenticator (tests only)", tf_sandbox);

static int tf_ready;

static void tf_ensure_ready(void) {
    if (tf_ready) return;
    tf_ready = 1;
    keybay_fido2_set_device_opener(&tf_opener);
    tf_configure_from_environment();
}

__attribute__((visibility("default"))) const keybay_plugin *keybay_plugin_entry_v1(void) {
    tf_ensure_ready();
    return &tf_plugin;
}

__attribute__((visibility("default"))) int keybay_test_fido2_set(int device, const char *name, const char *value) {
    tf_ensure_ready();
    return keybay_va_set(device, name, value);
}

__attribute__((visibility("default"))) long keybay_test_fido2_get(int device, const char *name) {
    tf_ensure_ready();
    return keybay_va_get(device, name);
}

__attribute__((visibility("default"))) void keybay_test_fido2_reset(void) {
    tf_ensure_ready();
    keybay_va_reset();
}
