// SPDX-License-Identifier: Apache-2.0
import Keybay

/// Record keys on the command line: checked before a store is opened, and named when a record
/// is missing.
extension Command {
    static func validateKey(_ key: String) throws {
        // The session validates too; doing it first keeps invalid input from creating a store.
        if !KeybayRecordKey.isValid(key) {
            throw KeybayError(.invalidKey, "invalid record key: use 1–120 bytes of [A-Za-z0-9._-] segments joined by '/', each starting with a letter or digit")
        }
    }

    /// Exit 3 for `keys` that have no record, named on standard error (and, with `--json`, in
    /// the error object on standard output, with `missing` listing them).
    static func notFound(_ keys: [String], _ session: KeybaySession, json: Bool) -> Int32 {
        let message = "no record\(keys.count > 1 ? "s" : "") \(keys.map { "'\($0)'" }.joined(separator: ", ")) in \(session.storePath)"
        Output.error(message + " [not-found]")
        if json { Output.jsonError(code: "not-found", message: message, fields: [("missing", .array(keys.map { .string($0) }))]) }
        return Exit.notFound
    }
}
