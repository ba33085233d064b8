// SPDX-License-Identifier: Apache-2.0
import CKeybay
import CKeybayValueArena
import CSodium
import Keybay

/// keybay_export and keybay_import_age (keybay.h, "Export and import (age)"): the session's
/// `export` and `importAge`, the age file handed out in memory keybay_free_value frees.

@_cdecl("keybay_export")
public func keybay_export(_ store: OpaquePointer?, _ recipients: UnsafePointer<UnsafePointer<CChar>?>?, _ recipientCount: Int,
                          _ keys: UnsafePointer<UnsafePointer<CChar>?>?, _ keyCount: Int, _ flags: UInt32,
                          _ file: UnsafeMutablePointer<UnsafeMutablePointer<UInt8>?>?, _ length: UnsafeMutablePointer<Int>?,
                          _ err: UnsafeMutablePointer<OpaquePointer?>?) -> Int32 {
    file?.pointee = nil
    length?.pointee = 0
    return reporting(err) {
        let session = try CStore.from(store).session
        guard let file, let length else { throw invalidArgument("keybay_export needs file and length") }
        guard flags & ~UInt32(KEYBAY_EXPORT_ALLOW_AGENT) == 0 else { throw invalidArgument("keybay_export: unknown flags \(flags)") }
        let recipientList = try strings(recipients, recipientCount, "recipients")
        let keyList = try strings(keys, keyCount, "keys")
        let bytes = try session.export(to: recipientList, keys: keyList, allowAgent: flags & UInt32(KEYBAY_EXPORT_ALLOW_AGENT) != 0)
        guard let out = keybay_value_alloc(bytes.count) else { throw KeybayError(.io, "cannot allocate memory for the export") }
        bytes.withUnsafeBytes { out.copyMemory(from: $0.baseAddress!, byteCount: bytes.count) }
        file.pointee = out.assumingMemoryBound(to: UInt8.self)
        length.pointee = bytes.count
    }
}

@_cdecl("keybay_import_age")
public func keybay_import_age(_ store: OpaquePointer?, _ file: UnsafePointer<UInt8>?, _ fileLength: Int,
                              _ identity: UnsafePointer<UInt8>?, _ identityLength: Int, _ flags: UInt32,
                              _ report: UnsafeMutablePointer<keybay_import_report>?, _ err: UnsafeMutablePointer<OpaquePointer?>?) -> Int32 {
    reporting(err) {
        let session = try CStore.from(store).session
        guard let file, let identity, fileLength >= 0, identityLength >= 0 else { throw invalidArgument("keybay_import_age needs the file and the identity") }
        guard let report, Int(report.pointee.struct_size) >= MemoryLayout<keybay_import_report>.size else {
            throw invalidArgument("keybay_import_age needs a report whose struct_size is sizeof(keybay_import_report)")
        }
        let known = UInt32(KEYBAY_IMPORT_REPLACE) | UInt32(KEYBAY_IMPORT_DRY_RUN)
        guard flags & ~known == 0 else { throw invalidArgument("keybay_import_age: unknown flags \(flags)") }
        var identityBytes = Array(UnsafeBufferPointer(start: identity, count: identityLength))
        defer { identityBytes.withUnsafeMutableBytes { if let base = $0.baseAddress { sodium_memzero(base, $0.count) } } }
        let done = try session.importAge(Array(UnsafeBufferPointer(start: file, count: fileLength)), identityFile: identityBytes,
                                         replace: flags & UInt32(KEYBAY_IMPORT_REPLACE) != 0, dryRun: flags & UInt32(KEYBAY_IMPORT_DRY_RUN) != 0)
        report.pointee.imported = done.imported.count
        report.pointee.unchanged = done.unchanged.count
        report.pointee.replaced = done.replaced.count
        report.pointee.conflicts = done.conflicts.count
    }
}

private func strings(_ list: UnsafePointer<UnsafePointer<CChar>?>?, _ count: Int, _ what: String) throws -> [String] {
    guard count >= 0, count == 0 || list != nil else { throw invalidArgument("\(what) is NULL with a count of \(count)") }
    return try (0..<count).map { try text(list![$0], what) }
}
