// SPDX-License-Identifier: Apache-2.0
/// Record keys: 1–120 bytes, segments `[A-Za-z0-9][A-Za-z0-9._-]*` joined by `/`.
enum RecordKey {
    static func isValid(_ bytes: some Collection<UInt8>) -> Bool {
        guard bytes.count >= 1, bytes.count <= Suite1.maxKeyBytes else { return false }
        var atSegmentStart = true
        for b in bytes {
            let alnum = (b >= 0x30 && b <= 0x39) || (b >= 0x41 && b <= 0x5a) || (b >= 0x61 && b <= 0x7a)
            if atSegmentStart {
                guard alnum else { return false }
                atSegmentStart = false
            } else if b == 0x2f { // "/"
                atSegmentStart = true
            } else {
                guard alnum || b == 0x2e || b == 0x5f || b == 0x2d else { return false } // . _ -
            }
        }
        return !atSegmentStart
    }

    /// Validates a caller's key; the message shows the key only when it is printable and short
    /// (keys are names, not secrets), otherwise just its length.
    static func validated(_ key: String) throws -> [UInt8] {
        let bytes = Array(key.utf8)
        guard isValid(bytes) else {
            let shown = bytes.count <= Suite1.maxKeyBytes && bytes.allSatisfy({ $0 >= 0x20 && $0 < 0x7f })
                ? "'\(key)'" : "of \(bytes.count) bytes"
            throw KeybayError(.invalidKey, "invalid record key \(shown): use 1–120 bytes of [A-Za-z0-9._-] segments joined by '/', each starting with a letter or digit")
        }
        return bytes
    }
}
