/// The record-key grammar, public so hosts and the CLI can check input before opening a store:
/// 1–120 bytes, segments `[A-Za-z0-9][A-Za-z0-9._-]*` joined by `/`.
public enum KeybayRecordKey {
    public static func isValid(_ key: String) -> Bool { RecordKey.isValid(key.utf8) }
    public static let maxBytes = Suite1.maxKeyBytes
    public static let maxValueBytes = Suite1.maxValueBytes
}
