// SPDX-License-Identifier: Apache-2.0
import CKeybaySecretItems
import Glibc
import Keybay

/// `import secret-service --attr NAME=VALUE... --key-from ATTR [--prefix P] [--replace]
/// [--dry-run] [--remove-source]`: every Secret Service item whose attributes include each
/// NAME=VALUE becomes the record `AttributeKeyMapping.key(ATTR's value)` holding its secret. A
/// locked keyring is unlocked through the Secret Service's own prompt, or is
/// `interaction-required` with `--no-input`. `--remove-source` deletes an item only once its
/// record has been read back.
extension Command {
    static func importSecretService(_ c: Context) throws -> Int32 {
        let a = c.a
        try a.expect(["secret-service"])
        let attributes = try (a.commandValues["--attr"] ?? []).map { pair -> (String, String) in
            guard let eq = pair.firstIndex(of: "="), eq != pair.startIndex else { throw Arguments.UsageError(message: "--attr takes NAME=VALUE") }
            return (String(pair[..<eq]), String(pair[pair.index(after: eq)...]))
        }
        guard !attributes.isEmpty else { throw Arguments.UsageError(message: "'import secret-service' needs --attr NAME=VALUE (one or more)") }
        guard let keyFrom = a.commandValues["--key-from"], keyFrom.count == 1 else {
            throw Arguments.UsageError(message: "'import secret-service' needs --key-from ATTR, once")
        }
        let prefixes = a.commandValues["--prefix"] ?? []
        guard prefixes.count <= 1, prefixes.allSatisfy(KeybayRecordKey.isValid) else {
            throw Arguments.UsageError(message: "--prefix takes one record key (segments of [A-Za-z0-9._-] joined by '/')")
        }
        let dryRun = a.flags.contains("--dry-run"), removeSource = a.flags.contains("--remove-source")
        let items = try SecretItems(attributes, unlock: !a.noInput)
        defer { items.free() }

        var records: [(key: String, value: [UInt8])] = []
        var itemOfKey: [String: Int] = [:]
        defer { for i in records.indices { wipe(&records[i].value) } }
        var skipped = 0
        for i in 0..<items.count {
            guard let value = items.attribute(i, keyFrom[0]), let key = AttributeKeyMapping.key(for: value, prefix: prefixes.first) else {
                skipped += 1
                Output.error("skipped an item: its \(keyFrom[0]) is missing, empty or maps to a key over 120 bytes")
                continue
            }
            guard itemOfKey[key] == nil else {
                skipped += 1
                Output.error("skipped an item: another matching item has the same \(keyFrom[0]) ('\(key)')")
                continue
            }
            guard let secret = items.secret(i) else { throw KeybayError(.io, "the secret of the item for '\(key)' cannot be read") }
            itemOfKey[key] = i
            records.append((key, secret))
        }
        let session = try unlock(a, c.interaction, createIfAbsent: !dryRun, throughAgent: a.flags.contains("--allow-agent"))
        defer { session.close() }
        let report = try session.importRecords(records, replace: a.flags.contains("--replace"), dryRun: dryRun)
        var removed = 0
        if removeSource && !dryRun {
            // importRecords read every written record back; unchanged ones were compared as read.
            for key in report.imported + report.unchanged + report.replaced {
                try items.delete(itemOfKey[key]!)
                removed += 1
            }
        }
        return printReport(report, json: a.json, extra: [("skipped", .number(skipped)), ("removed", .number(removed))])
    }
}

/// The matching items, owned until `free`.
private struct SecretItems {
    let list: OpaquePointer

    init(_ attributes: [(String, String)], unlock: Bool) throws {
        var message = [CChar](repeating: 0, count: 512)
        var found: OpaquePointer?
        let names = attributes.map { strdup($0.0) }, values = attributes.map { strdup($0.1) }
        defer { names.forEach { Glibc.free($0) }; values.forEach { Glibc.free($0) } }
        let code = names.map { UnsafePointer($0) }.withUnsafeBufferPointer { n in
            values.map { UnsafePointer($0) }.withUnsafeBufferPointer { v in
                keybay_secret_items_search(n.baseAddress, v.baseAddress, attributes.count, unlock ? 1 : 0, &found, &message, message.count)
            }
        }
        let text = String(cString: message)
        switch Int(code) {
        case KEYBAY_SECRET_ITEMS_OK: list = found!
        case KEYBAY_SECRET_ITEMS_LOCKED: throw KeybayError(unlock ? .locked : .interactionRequired, "the Secret Service: \(text)")
        default: throw KeybayError(.io, "the Secret Service: \(text)")
        }
    }

    var count: Int { keybay_secret_items_count(list) }

    func attribute(_ index: Int, _ name: String) -> String? {
        keybay_secret_items_attribute(list, index, name).map { String(cString: $0) }
    }

    func secret(_ index: Int) -> [UInt8]? {
        var bytes: UnsafePointer<UInt8>?
        var length = 0
        guard keybay_secret_items_secret(list, index, &bytes, &length) == 0 else { return nil }
        return Array(UnsafeBufferPointer(start: bytes, count: length))
    }

    func delete(_ index: Int) throws {
        var message = [CChar](repeating: 0, count: 512)
        guard keybay_secret_items_delete(list, index, &message, message.count) == 0 else {
            throw KeybayError(.io, "the Secret Service: \(String(cString: message)); the items before it were deleted, it and those after it were kept")
        }
    }

    func free() { keybay_secret_items_free(list) }
}
