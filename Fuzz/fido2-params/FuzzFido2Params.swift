// SPDX-License-Identifier: Apache-2.0
// libFuzzer target: the fido2 plugin's parameter decoder, through the real loader (describe
// needs no libfido2 and no device). The plugin is looked up in $KEYBAY_FUZZ_PLUGIN_DIR, built by
// scripts/fuzz.sh with coverage and AddressSanitizer. Run with scripts/fuzz.sh 60 fido2-params.
@_spi(Fuzzing) import Keybay
import Glibc

let pluginDirectory: String = getenv("KEYBAY_FUZZ_PLUGIN_DIR").map { String(cString: $0) } ?? "."

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    KeybayFuzzing.describeParameters(plugin: "fido2", directory: pluginDirectory, Array(UnsafeBufferPointer(start: data, count: size)))
    return 0
}
