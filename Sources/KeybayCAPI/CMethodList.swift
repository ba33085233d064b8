// SPDX-License-Identifier: Apache-2.0
import CKeybay
import Glibc
import Keybay

/// Methods as a C array of `keybay_method_info`, whose strings it owns until it goes: what a
/// status, an error and `choose_method` hand out.
final class CMethodList: @unchecked Sendable {
    // @unchecked: made once, read-only afterwards; freed only in deinit.
    let entries: UnsafeMutablePointer<keybay_method_info>
    let count: Int

    init(_ methods: [KeybayMethod]) {
        count = methods.count
        entries = .allocate(capacity: max(methods.count, 1))
        for (i, m) in methods.enumerated() { (entries + i).initialize(to: methodInfo(m)) }
    }

    deinit {
        for i in 0..<count { freeMethodInfo(entries[i]) }
        entries.deallocate()
    }
}

/// `m` as a `keybay_method_info` whose strings are `strdup`'s (freed by `freeMethodInfo`).
func methodInfo(_ m: KeybayMethod) -> keybay_method_info {
    var info = keybay_method_info()
    info.struct_size = UInt32(MemoryLayout<keybay_method_info>.size)
    info.id = UnsafePointer(strdup(m.id))
    info.plugin = UnsafePointer(strdup(m.plugin))
    info.label = UnsafePointer(strdup(m.label))
    info.needs_device = m.needsDevice.map { $0 ? 1 : 0 } ?? -1
    return info
}

func freeMethodInfo(_ info: keybay_method_info) {
    for p in [info.id, info.plugin, info.label] { free(UnsafeMutablePointer(mutating: p)) }
}
