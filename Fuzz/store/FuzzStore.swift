// SPDX-License-Identifier: Apache-2.0
// libFuzzer target: the store-file decoders. Build and run with scripts/fuzz.sh store.
@_spi(Fuzzing) import Keybay

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    KeybayFuzzing.decodeStore(Array(UnsafeBufferPointer(start: data, count: size)))
    return 0
}
