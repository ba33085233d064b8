// SPDX-License-Identifier: Apache-2.0
// libFuzzer target: the passphrase plugin's parameter decoder, through the real loader.
// The plugin is looked up in $KEYBAY_FUZZ_PLUGIN_DIR, built by scripts/fuzz.sh with coverage and
// AddressSanitizer. Run with scripts/fuzz.sh 60 passphrase-params.
@_spi(Fuzzing) import Keybay
import Glibc

let pluginDirectory: String = getenv("KEYBAY_FUZZ_PLUGIN_DIR").map { String(cString: $0) } ?? "."

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    KeybayFuzzing.describeParameters(plugin: "passphrase", directory: pluginDirectory, Array(UnsafeBufferPointer(start: data, count: size)))
    return 0
}
