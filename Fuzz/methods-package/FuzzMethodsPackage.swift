// SPDX-License-Identifier: Apache-2.0
// libFuzzer target: the suite-2 methods-package decoder. Build and run with scripts/fuzz.sh methods-package.
@_spi(Fuzzing) import Keybay

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    KeybayFuzzing.decodeMethodsPackage(Array(UnsafeBufferPointer(start: data, count: size)))
    return 0
}
