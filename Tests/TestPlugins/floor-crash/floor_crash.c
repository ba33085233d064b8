// SPDX-License-Identifier: Apache-2.0
/*
 * test-floor-crash — a root plugin for tests only (libkeybay-test-floor-crash.so). It serves
 * the root plugin named by KEYBAY_TEST_WRAPPED_ROOT (a library path) under its own id, and when
 * KEYBAY_TEST_KILL_AT_FLOOR is set it SIGKILLs its process as the rollback floor is about to
 * rise: exactly between a rotation's durable store write and its floor write. With
 * KEYBAY_TEST_FAIL_AT_FLOOR set the floor write fails instead (IO), as a root that cannot be
 * written at that moment would. With KEYBAY_TEST_HOLD_AT_OPEN=PATH, opening a key package first
 * creates PATH.waiting, then waits while PATH exists (a test moves the store meanwhile).
 */
#define _POSIX_C_SOURCE 200809L

#include <dlfcn.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "keybay_plugin.h"

static keybay_plugin descriptor;
static const keybay_plugin *wrapped;

static keybay_status raise_floor(const keybay_host *host, const keybay_root_context *c,
                                 const uint8_t *state, size_t state_length, uint64_t epoch) {
    if (getenv("KEYBAY_TEST_KILL_AT_FLOOR")) raise(SIGKILL);
    if (getenv("KEYBAY_TEST_FAIL_AT_FLOOR")) {
        if (KEYBAY_HOST_HAS(host, set_error)) host->set_error(host->context, "test-floor-crash: the floor write fails on purpose");
        return KEYBAY_ERR_IO;
    }
    return wrapped->root_raise_floor(host, c, state, state_length, epoch);
}

static void hold_at_open(void) {
    const char *hold = getenv("KEYBAY_TEST_HOLD_AT_OPEN");
    if (!hold) return;
    char waiting[4200];
    snprintf(waiting, sizeof waiting, "%s.waiting", hold);
    FILE *f = fopen(waiting, "w");
    if (f) fclose(f);
    struct timespec millisecond = { 0, 1000000 };
    for (int i = 0; i < 600000 && access(hold, F_OK) == 0; i++) nanosleep(&millisecond, NULL);
}

static keybay_status open_with_floor(const keybay_host *host, const keybay_root_context *c, const uint8_t *state, size_t state_length,
                                     const uint8_t *sealed, size_t sealed_length, const uint8_t *aad, size_t aad_length,
                                     keybay_buffer *plaintext_out, uint64_t *floor_out) {
    hold_at_open();
    return wrapped->root_open_with_floor(host, c, state, state_length, sealed, sealed_length, aad, aad_length, plaintext_out, floor_out);
}

__attribute__((visibility("default")))
const keybay_plugin *keybay_plugin_entry_v1(void) {
    if (wrapped) return &descriptor;
    const char *path = getenv("KEYBAY_TEST_WRAPPED_ROOT");
    void *library = path ? dlopen(path, RTLD_NOW | RTLD_LOCAL) : NULL;
    keybay_plugin_entry_fn entry = library ? (keybay_plugin_entry_fn)dlsym(library, KEYBAY_PLUGIN_ENTRY_SYMBOL) : NULL;
    const keybay_plugin *inner = entry ? entry() : NULL;
    if (!inner || inner->struct_size < sizeof(keybay_plugin) || !inner->root_raise_floor) return NULL;
    descriptor = *inner;
    descriptor.id = "test-floor-crash";
    descriptor.root_raise_floor = raise_floor;
    if (inner->root_open_with_floor) descriptor.root_open_with_floor = open_with_floor;
    wrapped = inner;
    return &descriptor;
}
