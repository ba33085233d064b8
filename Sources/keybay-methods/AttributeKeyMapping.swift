// SPDX-License-Identifier: Apache-2.0
import Keybay

/// How `import secret-service --key-from ATTR` turns an attribute's value into a record key
/// (docs/cli.md): injective, and the identity on values that are already simple names.
///
/// Each byte of the value's UTF-8 in `A–Z a–z 0–9 . -` stays as it is; every other byte (`_`
/// and `/` included) becomes `_` and its two lowercase hex digits. A result that does not start
/// with a letter or digit gets the prefix `x_x`, which no escaped value contains (`_` is always
/// followed by a hex digit there). With `--prefix P` the key is `P/` and the result. A value that
/// maps to more than 120 bytes, or an empty one, has no key.
enum AttributeKeyMapping {
    static let marker = "x_x"

    static func key(for value: String, prefix: String?) -> String? {
        guard !value.isEmpty else { return nil }
        var mapped = ""
        for byte in value.utf8 {
            let kept = (byte >= 0x41 && byte <= 0x5a) || (byte >= 0x61 && byte <= 0x7a) || (byte >= 0x30 && byte <= 0x39) || byte == 0x2e || byte == 0x2d
            if kept { mapped.unicodeScalars.append(Unicode.Scalar(byte)) } else {
                mapped += "_" + (byte < 16 ? "0" : "") + String(byte, radix: 16)
            }
        }
        if let first = mapped.utf8.first, !((first >= 0x41 && first <= 0x5a) || (first >= 0x61 && first <= 0x7a) || (first >= 0x30 && first <= 0x39)) {
            mapped = marker + mapped
        }
        let key = prefix.map { $0 + "/" + mapped } ?? mapped
        return KeybayRecordKey.isValid(key) ? key : nil
    }
}
