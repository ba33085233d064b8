// SPDX-License-Identifier: Apache-2.0
/// The record-key grammar, public so hosts and the CLI can check input before opening a store:
/// 1–120 bytes, segments `[A-Za-z0-9][A-Za-z0-9._-]*` joined by `/`.
///
/// A session refuses a key outside the grammar with `.invalidKey`.
public enum KeybayRecordKey {
    /// Whether `key` is a valid record key, e.g. `api/token`.
    public static func isValid(_ key: String) -> Bool { RecordKey.isValid(key.utf8) }
    /// The longest key, in UTF-8 bytes (120).
    public static let maxBytes = Suite1.maxKeyBytes
    /// The largest value, in bytes (1 MiB); a larger one is `.valueTooLarge`.
    public static let maxValueBytes = Suite1.maxValueBytes
}
