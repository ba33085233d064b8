// SPDX-License-Identifier: Apache-2.0
/// The textual fields of a method envelope and how they are checked: plugin ids, labels and
/// method ids. The decoder and the API share these rules, so a stored name is always one the API
/// would accept.
enum MethodNames {
    /// Plugin ids: `[a-z0-9][a-z0-9._-]{0,63}` (they become file names); the public rule.
    static func isValidPluginID(_ id: String) -> Bool { KeybayPluginSearch.isValidPluginID(id) }

    /// Stored labels, as the decoder accepts them: 1–64 bytes of UTF-8 without C0 controls or
    /// DEL. Stores written before the stricter enrollment rule keep opening; output escapes the rest.
    static func isValidLabel(_ label: String) -> Bool {
        let bytes = label.utf8
        return (1...MethodEnvelope.maxLabelBytes).contains(bytes.count) && label.unicodeScalars.allSatisfy { $0.value >= 0x20 && $0.value != 0x7f }
    }

    /// Labels a new enrollment may give: a stored label without the characters
    /// `misleadsWhenShown` lists (controls, bidirectional marks and overrides, line separators).
    static func isValidNewLabel(_ label: String) -> Bool {
        isValidLabel(label) && !label.unicodeScalars.contains(where: misleadsWhenShown)
    }

    /// Characters that can move the cursor or reorder or break the line of shown text: controls
    /// (C0, DEL, C1), the bidirectional marks, overrides and isolates (U+061C, U+200E–U+200F,
    /// U+202A–U+202E, U+2066–U+2069) and the line and paragraph separators (U+2028–U+2029).
    /// (Invisible characters such as U+200B are not among them.) Newline and tab are the
    /// caller's to allow.
    static func misleadsWhenShown(_ s: Unicode.Scalar) -> Bool {
        switch s.value {
        case 0x00..<0x20, 0x7f...0x9f, 0x061c, 0x200e...0x200f, 0x2028...0x2029, 0x202a...0x202e, 0x2066...0x2069: true
        default: false
        }
    }

    /// Method ids are 16 bytes, written as 32 lowercase hex characters.
    static func parseMethodID(_ id: String) throws -> [UInt8] {
        let chars = Array(id.utf8)
        func nibble(_ c: UInt8) -> UInt8? {
            switch c { case 0x30...0x39: c - 0x30; case 0x61...0x66: c - 0x61 + 10; default: nil }
        }
        let refusal = KeybayError(.invalidArgument, "method ids are 32 lowercase hex characters")
        guard chars.count == 2 * MethodEnvelope.idBytes else { throw refusal }
        var out: [UInt8] = []
        for i in stride(from: 0, to: chars.count, by: 2) {
            guard let hi = nibble(chars[i]), let lo = nibble(chars[i + 1]) else { throw refusal }
            out.append(hi << 4 | lo)
        }
        return out
    }
}
