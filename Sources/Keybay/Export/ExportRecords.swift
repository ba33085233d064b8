// SPDX-License-Identifier: Apache-2.0
/// The plaintext inside an export's age payload (docs/format.md, "Export"): the line
/// `keybay-export/v1`, then one line per record, `KEY SP BASE64(VALUE)`, each ending in LF.
/// KEY follows the record-key grammar (so it has no space); BASE64 is RFC 4648 §4 with `=`
/// padding, canonical, empty for an empty value. Keys are unique; an export writes them in
/// ascending byte order, an import takes any order. Text, so `age -d` shows the records and
/// `base64 -w0` makes a value by hand.
enum ExportRecords {
    static let firstLine = Array("keybay-export/v1".utf8)

    /// The layout of `records` (keys valid, unique, in the order given), in guarded memory.
    static func encode(_ records: [(key: String, value: [UInt8])]) -> SecureBytes {
        var text = firstLine + [0x0a]
        defer { Sodium.wipe(&text) }
        for record in records {
            var value = Base64.encode(record.value, padded: true)
            text += Array(record.key.utf8) + [0x20] + value + [0x0a]
            Sodium.wipe(&value)
        }
        return SecureBytes(copying: text)
    }

    /// The records of a layout, in its order; `.malformed` naming the line (never a value) for
    /// anything else. The caller wipes the values.
    static func decode(_ text: UnsafeRawBufferPointer, context: String) throws -> [(key: String, value: [UInt8])] {
        // Split in place: no copy of the plaintext leaves guarded memory but the values.
        var lines = text.split(separator: 0x0a, omittingEmptySubsequences: false)
        var records: [(key: String, value: [UInt8])] = []
        var seen: Set<String> = []
        var failure: KeybayError?
        guard lines.count >= 2, lines.removeLast().isEmpty else {
            throw KeybayError(.malformed, "\(context): the record layout does not end with a line feed")
        }
        guard lines[0].elementsEqual(firstLine) else {
            throw KeybayError(.malformed, "\(context): the payload is not a keybay export (its first line is not keybay-export/v1)")
        }
        for (number, line) in lines.enumerated().dropFirst() {
            guard let space = line.firstIndex(of: 0x20) else {
                failure = KeybayError(.malformed, "\(context): line \(number + 1) has no space between key and value"); break
            }
            let keyBytes = line[..<space]
            guard RecordKey.isValid(keyBytes) else {
                failure = KeybayError(.malformed, "\(context): line \(number + 1) has an invalid record key"); break
            }
            let key = String(decoding: keyBytes, as: UTF8.self)
            guard seen.insert(key).inserted else {
                failure = KeybayError(.malformed, "\(context): line \(number + 1) repeats the key '\(key)'"); break
            }
            guard let value = Base64.decode(line[(space + 1)...], padded: true) else {
                failure = KeybayError(.malformed, "\(context): the value on line \(number + 1) ('\(key)') is not canonical padded base64"); break
            }
            guard value.count <= Suite1.maxValueBytes else {
                failure = KeybayError(.valueTooLarge, "\(context): the value of '\(key)' (line \(number + 1)) is over \(Suite1.maxValueBytes) bytes"); break
            }
            records.append((key, value))
        }
        if let failure {
            for i in records.indices { Sodium.wipe(&records[i].value) }
            throw failure
        }
        return records
    }
}
