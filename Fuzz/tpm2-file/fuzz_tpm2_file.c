// SPDX-License-Identifier: Apache-2.0
/*
 * libFuzzer target: the tpm2 plugin's root-file decoder (decode_file in
 * Plugins/tpm2/tpm2_root_file.c). Reaching it through the plugin's entry point would need a TPM
 * for every input (the plugin opens the TPM before it reads the file), so the plugin's root-file
 * source is compiled into this target, with coverage and AddressSanitizer; tss2's unmarshalling
 * functions come from libtss2-mu, opened with dlopen as the plugin opens them. Each input is a root file (docs/format.md §12):
 *   - decode_file says OK or ROOT_MISMATCH, nothing else (a file that reaches the decoder is
 *     shorter than MAX_FILE_BYTES: load_file refuses a longer one first);
 *   - a file it accepts has its NV index in the owner range and a PCR mask below 2^24, and
 *     encodes back to exactly its own bytes: the decoder takes no trailing byte, no length that
 *     disagrees, nothing the encoder would not write.
 * A broken promise aborts (a crash artifact), as does a memory error.
 * Built by scripts/fuzz.sh:
 *   clang -fsanitize=fuzzer,address -I Sources/CKeybayPlugin/include -I Plugins/Support/<each>/include \
 *     Fuzz/tpm2-file/fuzz_tpm2_file.c (every .c of Plugins/Support/common, root-files, tpm2 and \
 *     recovery-key) -lsodium -ldl -lpthread
 */
#include "../../Plugins/tpm2/tpm2_root_file.c"

#include <stdio.h>
#include <stdlib.h>

static void expect(int condition, const char *what) {
    if (!condition) {
        fprintf(stderr, "fuzz tpm2-file: %s\n", what);
        abort();
    }
}

/* tss2 is opened before libFuzzer starts, so that its loading is not taken for an input's work. */
int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc;
    (void)argv;
    expect(sodium_init() >= 0, "libsodium");
    const char *unloaded = keybay_tpm2_load_tss();
    expect(unloaded == NULL, unloaded ? unloaded : "");
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static root_file file, again;
    if (size >= MAX_FILE_BYTES) return 0;
    memcpy(file.bytes, data, size);
    file.length = size;
    keybay_status s = decode_file(NULL, "fuzz", &file);
    expect(s == KEYBAY_OK || s == KEYBAY_ERR_ROOT_MISMATCH, "decode_file said neither OK nor ROOT_MISMATCH");
    if (s != KEYBAY_OK) return 0;
    expect((file.nv_index & ~(NV_SPAN - 1)) == NV_FIRST && file.pcrs >> 24 == 0, "an accepted file names an NV index or PCRs out of range");
    again = file;
    memset(again.bytes, 0, sizeof again.bytes);
    expect(encode_file(NULL, &again) == KEYBAY_OK, "an accepted file does not encode");
    expect(again.length == size && memcmp(again.bytes, data, size) == 0, "an accepted file does not encode back to its own bytes");
    return 0;
}
