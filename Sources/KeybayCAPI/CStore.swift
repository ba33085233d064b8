// SPDX-License-Identifier: Apache-2.0
import CKeybay
import CKeybayValueArena
import CSodium
import Glibc
import Keybay

/// What a `keybay_store *` points to: an open session (`Sendable`, so the handle may be used
/// from several threads at once).
final class CStore {
    let session: KeybaySession

    init(_ session: KeybaySession) { self.session = session }

    static func from(_ handle: OpaquePointer?) throws -> CStore {
        guard let handle else { throw invalidArgument("the keybay_store is NULL") }
        return Unmanaged<CStore>.fromOpaque(UnsafeRawPointer(handle)).takeUnretainedValue()
    }
}

/// The interaction a call may use: none with `no_input` or NULL.
func interaction(_ pointer: UnsafePointer<keybay_interaction>?, noInput: Bool = false) throws -> any KeybayInteraction {
    guard !noInput, let bridged = try CInteraction.from(pointer) else { return NonInteractive() }
    return bridged.asker
}

func text(_ c: UnsafePointer<CChar>?, _ what: String) throws -> String {
    guard let c else { throw invalidArgument("\(what) is NULL") }
    return try OpenOptions.text(c, what)
}

@_cdecl("keybay_open")
public func keybay_open(_ options: UnsafePointer<keybay_open_options>?, _ host: UnsafePointer<keybay_interaction>?,
                        _ err: UnsafeMutablePointer<OpaquePointer?>?) -> OpaquePointer? {
    var store: OpaquePointer?
    _ = reporting(err) {
        let options = try OpenOptions(options)
        let asker = try interaction(host, noInput: options.noInput)
        // The library's one policy: method_id, the only method, choose_method, else
        // authentication-required listing the methods.
        let session = try KeybayStore.open(options.configuration, policy: options.policy, interaction: asker)
        store = OpaquePointer(Unmanaged.passRetained(CStore(session)).toOpaque())
    }
    return store
}

@_cdecl("keybay_close")
public func keybay_close(_ store: OpaquePointer?) {
    guard let store else { return }
    let box = Unmanaged<CStore>.fromOpaque(UnsafeRawPointer(store))
    box.takeUnretainedValue().session.close()
    box.release()
}

@_cdecl("keybay_get")
public func keybay_get(_ store: OpaquePointer?, _ key: UnsafePointer<CChar>?, _ value: UnsafeMutablePointer<UnsafeMutablePointer<UInt8>?>?,
                       _ length: UnsafeMutablePointer<Int>?, _ err: UnsafeMutablePointer<OpaquePointer?>?) -> Int32 {
    value?.pointee = nil
    length?.pointee = 0
    return reporting(err) {
        let session = try CStore.from(store).session
        let key = try text(key, "key")
        guard let value, let length else { throw invalidArgument("keybay_get needs value and length") }
        guard let bytes = try session.get(key) else { throw CAPIFailure.notFound(key, in: session.storePath) }
        value.pointee = try guardedCopy(bytes)
        length.pointee = bytes.count
    }
}

@_cdecl("keybay_free_value")
public func keybay_free_value(_ value: UnsafeMutablePointer<UInt8>?, _ length: Int) {
    // Wipes the slot, or (sodium_free) the whole allocation, before it frees it.
    keybay_value_release(value)
}

@_cdecl("keybay_set")
public func keybay_set(_ store: OpaquePointer?, _ key: UnsafePointer<CChar>?, _ value: UnsafePointer<UInt8>?, _ length: Int,
                       _ err: UnsafeMutablePointer<OpaquePointer?>?) -> Int32 {
    reporting(err) {
        let session = try CStore.from(store).session
        let key = try text(key, "key")
        guard value != nil || length == 0 else { throw invalidArgument("keybay_set: value is NULL with a length of \(length)") }
        // A size_t past Int's range, or past the format's limit, is refused before anything is copied.
        guard length >= 0, length <= KeybayRecordKey.maxValueBytes else {
            throw KeybayError(.valueTooLarge, "the value for '\(key)' is \(UInt(bitPattern: length)) bytes, limit \(KeybayRecordKey.maxValueBytes)")
        }
        try session.set(key, bytes: value.map { Array(UnsafeBufferPointer(start: $0, count: length)) } ?? [])
    }
}

@_cdecl("keybay_delete")
public func keybay_delete(_ store: OpaquePointer?, _ key: UnsafePointer<CChar>?, _ err: UnsafeMutablePointer<OpaquePointer?>?) -> Int32 {
    reporting(err) {
        let session = try CStore.from(store).session
        let key = try text(key, "key")
        guard try session.delete(key) else { throw CAPIFailure.notFound(key, in: session.storePath) }
    }
}

@_cdecl("keybay_keys")
public func keybay_keys(_ store: OpaquePointer?, _ keys: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>?,
                        _ count: UnsafeMutablePointer<Int>?, _ err: UnsafeMutablePointer<OpaquePointer?>?) -> Int32 {
    keys?.pointee = nil
    count?.pointee = 0
    return reporting(err) {
        let session = try CStore.from(store).session
        guard let keys, let count else { throw invalidArgument("keybay_keys needs keys and count") }
        let names = try session.keys()
        guard let list = calloc(max(names.count, 1), MemoryLayout<UnsafeMutablePointer<CChar>?>.stride)?
            .assumingMemoryBound(to: UnsafeMutablePointer<CChar>?.self) else { throw KeybayError(.io, "cannot allocate the key list") }
        for (i, name) in names.enumerated() { list[i] = strdup(name) }
        keys.pointee = list
        count.pointee = names.count
    }
}

@_cdecl("keybay_free_strings")
public func keybay_free_strings(_ strings: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?, _ count: Int) {
    guard let strings else { return }
    for i in 0..<max(count, 0) { free(strings[i]) }
    free(strings)
}

@_cdecl("keybay_free_string")
public func keybay_free_string(_ string: UnsafeMutablePointer<CChar>?) {
    free(string)
}
