// SPDX-License-Identifier: Apache-2.0
/*
 * libFuzzer target: the file-root plugin's root-file parser, through the plugin's own entry
 * point (dlopen of $KEYBAY_FUZZ_PLUGIN_DIR/libkeybay-file-root.so, which scripts/fuzz.sh builds
 * with coverage and AddressSanitizer). Each input is written as the root file
 * <state>/keybay/<app>/file-root.key; then, with the provider state computed here from the
 * input as docs/format.md gives it (SHA-256(label | 0x00 | domain | root)), root_seal and
 * root_open_with_floor must agree with the file's format:
 *   - a well-formed file ("KBFR", version 1 in 38 bytes, or version 2 with its rollback floor in
 *     46) seals, opens what it sealed (root_open_with_floor reporting the file's floor: 0 for
 *     version 1), and refuses what was sealed under another AAD;
 *   - anything else is ROOT_MISMATCH, never a sealed package;
 *   - the input taken as a sealed package never opens (it cannot authenticate).
 * A broken promise aborts (a crash artifact), as does a memory error.
 * Built by scripts/fuzz.sh:
 *   clang -fsanitize=fuzzer,address -I Sources/CKeybayPlugin/include Fuzz/file-root/fuzz_root_file.c -lsodium
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sodium.h>

#include "keybay_plugin.h"

#define APP "com.example.fuzz"

static const keybay_plugin *plugin;
static char state_home[64], root_path[160];
static uint8_t domain[32];

static void expect(int condition, const char *what) {
    if (!condition) {
        fprintf(stderr, "fuzz file-root: %s\n", what);
        abort();
    }
}

static void ignore_error(void *context, const char *text) { (void)context; (void)text; }
static void ignore_log(void *context, keybay_log_level level, const char *text) { (void)context; (void)level; (void)text; }

static const keybay_host host = {
    .abi_version = KEYBAY_PLUGIN_ABI_VERSION,
    .struct_size = sizeof(keybay_host),
    .log = ignore_log,
    .set_error = ignore_error,
};

static void setup(void) {
    if (plugin != NULL) return;
    const char *dir = getenv("KEYBAY_FUZZ_PLUGIN_DIR");
    char path[4096];
    snprintf(path, sizeof path, "%s/libkeybay-file-root.so", dir ? dir : ".");
    void *handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    expect(handle != NULL, dlerror());
    keybay_plugin_entry_fn entry = (keybay_plugin_entry_fn)dlsym(handle, KEYBAY_PLUGIN_ENTRY_SYMBOL);
    expect(entry != NULL && (plugin = entry()) != NULL && plugin->root_seal && plugin->root_open_with_floor,
           "no file-root plugin");
    expect(sodium_init() >= 0, "libsodium");
    snprintf(state_home, sizeof state_home, "/tmp/keybay-fuzz-file-root-XXXXXX");
    expect(mkdtemp(state_home) != NULL, "mkdtemp");
    char dir_path[128];
    snprintf(dir_path, sizeof dir_path, "%s/keybay", state_home);
    expect(mkdir(dir_path, 0700) == 0, "mkdir keybay");
    snprintf(dir_path, sizeof dir_path, "%s/keybay/" APP, state_home);
    expect(mkdir(dir_path, 0700) == 0, "mkdir app");
    snprintf(root_path, sizeof root_path, "%s/file-root.key", dir_path);
    randombytes_buf(domain, sizeof domain);
}

static void provider_state(const uint8_t root[32], uint8_t out[32]) {
    static const char label[] = "keybay:v2:s1:provider-state:file-root";
    crypto_hash_sha256_state h;
    const uint8_t zero = 0;
    crypto_hash_sha256_init(&h);
    crypto_hash_sha256_update(&h, (const uint8_t *)label, sizeof label - 1);
    crypto_hash_sha256_update(&h, &zero, 1);
    crypto_hash_sha256_update(&h, domain, sizeof domain);
    crypto_hash_sha256_update(&h, root, 32);
    crypto_hash_sha256_final(&h, out);
}

/* The plugin is loaded before libFuzzer starts, so its coverage counters are among those it
   watches from the first input on. */
int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc; (void)argv;
    setup();
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    int fd = open(root_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    expect(fd >= 0 && write(fd, data, size) == (ssize_t)size && close(fd) == 0, "cannot write the root file");

    uint8_t state[32] = {0};
    if (size >= 38) provider_state(data + 6, state);
    int well_formed = (size == 38 && memcmp(data, "KBFR\x00\x01", 6) == 0) || (size == 46 && memcmp(data, "KBFR\x00\x02", 6) == 0);
    uint64_t file_floor = 0;
    if (well_formed && size == 46)
        for (int i = 0; i < 8; i++) file_floor = file_floor << 8 | data[38 + i];
    const keybay_root_context context = {sizeof context, APP, state_home, domain};
    static const uint8_t plaintext[] = "key package", aad[] = "aad", other_aad[] = "aaD";

    keybay_buffer sealed = {0};
    keybay_status s = plugin->root_seal(&host, &context, state, sizeof state, plaintext, sizeof plaintext, aad, sizeof aad, &sealed);
    if (well_formed) {
        expect(s == KEYBAY_OK, "a well-formed root file did not seal");
        keybay_buffer opened = {0};
        uint64_t floor = UINT64_MAX;
        s = plugin->root_open_with_floor(&host, &context, state, sizeof state, sealed.data, sealed.length, aad, sizeof aad, &opened, &floor);
        expect(s == KEYBAY_OK && opened.length == sizeof plaintext && memcmp(opened.data, plaintext, sizeof plaintext) == 0,
               "what was sealed did not open to itself");
        expect(floor == file_floor, "root_open_with_floor did not report the file's floor");
        plugin->free_buffer(&opened);
        s = plugin->root_open_with_floor(&host, &context, state, sizeof state, sealed.data, sealed.length, other_aad, sizeof other_aad,
                                         &opened, &floor);
        expect(s == KEYBAY_ERR_INTEGRITY && opened.data == NULL, "a package opened under another AAD");
        plugin->free_buffer(&sealed);
    } else {
        expect(s == KEYBAY_ERR_ROOT_MISMATCH && sealed.data == NULL, "a malformed root file was not ROOT_MISMATCH");
    }
    keybay_buffer opened = {0};
    uint64_t floor;
    s = plugin->root_open_with_floor(&host, &context, state, sizeof state, data, size, aad, sizeof aad, &opened, &floor);
    expect(s != KEYBAY_OK && opened.data == NULL, "the input opened as a sealed package");
    return 0;
}
