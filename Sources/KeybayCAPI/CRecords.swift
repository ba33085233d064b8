// SPDX-License-Identifier: Apache-2.0
import CKeybay
import CKeybayValueArena
import Glibc
import Keybay

/// `bytes` in guarded memory (a slot of a guarded arena, or sodium_malloc's own for a large
/// value), which keybay_free_value wipes and frees.
func guardedCopy(_ bytes: [UInt8]) throws -> UnsafeMutablePointer<UInt8> {
    guard let out = keybay_value_alloc(max(bytes.count, 1)) else { throw KeybayError(.io, "cannot allocate guarded memory") }
    bytes.withUnsafeBytes { if let b = $0.baseAddress { out.copyMemory(from: b, byteCount: bytes.count) } }
    return out.assumingMemoryBound(to: UInt8.self)
}

@_cdecl("keybay_contains")
public func keybay_contains(_ store: OpaquePointer?, _ key: UnsafePointer<CChar>?, _ found: UnsafeMutablePointer<Int32>?,
                            _ err: UnsafeMutablePointer<OpaquePointer?>?) -> Int32 {
    found?.pointee = 0
    return reporting(err) {
        let session = try CStore.from(store).session
        let key = try text(key, "key")
        guard let found else { throw invalidArgument("keybay_contains needs found") }
        found.pointee = try session.contains(key) ? 1 : 0
    }
}

@_cdecl("keybay_get_many")
public func keybay_get_many(_ store: OpaquePointer?, _ keys: UnsafePointer<UnsafePointer<CChar>?>?, _ count: Int,
                            _ values: UnsafeMutablePointer<UnsafeMutablePointer<UInt8>?>?, _ lengths: UnsafeMutablePointer<Int>?,
                            _ err: UnsafeMutablePointer<OpaquePointer?>?) -> Int32 {
    guard count >= 0 else { return reporting(err) { throw invalidArgument("keybay_get_many: count \(UInt(bitPattern: count)) is too large") } }
    if let values { for i in 0..<count { values[i] = nil } }
    if let lengths { for i in 0..<count { lengths[i] = 0 } }
    return reporting(err) {
        let session = try CStore.from(store).session
        guard count == 0 || (keys != nil && values != nil && lengths != nil) else {
            throw invalidArgument("keybay_get_many needs keys, values and lengths")
        }
        guard count > 0, let keys, let values, let lengths else { return }
        let names = try (0..<count).map { try text(keys[$0], "keys[\($0)]") }
        // One generation for all of them.
        let found = try session.getMany(names)
        do {
            for (i, name) in names.enumerated() {
                guard let bytes = found[name] else { continue }
                values[i] = try guardedCopy(bytes)
                lengths[i] = bytes.count
            }
        } catch {
            for i in 0..<count {
                keybay_value_release(values[i])
                values[i] = nil
                lengths[i] = 0
            }
            throw error
        }
    }
}

@_cdecl("keybay_clear_all")
public func keybay_clear_all(_ store: OpaquePointer?, _ err: UnsafeMutablePointer<OpaquePointer?>?) -> Int32 {
    reporting(err) { try CStore.from(store).session.clearAll() }
}
