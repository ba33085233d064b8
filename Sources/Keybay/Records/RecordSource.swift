// SPDX-License-Identifier: Apache-2.0
/// Where a session's record operations go, chosen once when the store is opened: the store file
/// itself (`LocalRecords`) or the keybay agent that holds it unlocked (`AgentRecords`). Both
/// take record keys as text and check nothing the other checks twice: a source that serves
/// callers it cannot trust (the agent's) checks keys and values itself.
///
/// A source is shared by every task of its session and used from them at once. After `close()`
/// every call throws `.closed`.
protocol RecordSource: AnyObject, Sendable {
    /// The value of `key`, or nil.
    func get(_ key: String) throws -> [UInt8]?
    /// The values of `keys`, in their order, all from one generation; nil where there is no record.
    func getMany(_ keys: [String]) throws -> [[UInt8]?]
    /// Every key, in ascending byte order.
    func keys() throws -> [String]
    /// Whether `key` has a record.
    func contains(_ key: String) throws -> Bool
    /// Stores `value` under `key`, durably.
    func set(_ key: String, value: [UInt8]) throws
    /// Removes `key`; whether there was a record.
    func delete(_ key: String) throws -> Bool
    /// Removes every record.
    func clearAll() throws
    /// Ends the source; later calls throw `.closed`. Never waits for a call in progress.
    func close()
    /// Whether `close()` was called.
    var isClosed: Bool { get }
}

extension RecordSource {
    /// What a call on a closed source throws.
    static func closedError(_ storePath: String) -> KeybayError {
        KeybayError(.closed, "the session for \(storePath) is closed")
    }
}
