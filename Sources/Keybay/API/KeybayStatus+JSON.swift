// SPDX-License-Identifier: Apache-2.0
import Glibc

extension KeybayStatus {
    /// The status as `keybay-methods status --json` prints it (and `keybay_status_json`
    /// returns it): `state`, `storePath`, `rootPlugin`, `rootLocation`, `methods` (each `id`,
    /// `plugin`, `label`), `protection`, `leftoverRoots` (each `plugin`, `location`),
    /// `backupExclusion` (``KeybayBackupExclusion/jsonValue``), `unlocked` (whether the keybay
    /// agent holds the store) and, while it holds it for a time, `unlockedUntil` (UTC, ISO 8601:
    /// `2026-12-01T10:15:00Z`).
    public var jsonValue: KeybayJSON.Value {
        var fields: [(String, KeybayJSON.Value)] = [
            ("state", .string(state.rawValue)),
            ("storePath", .string(storePath)),
            ("rootPlugin", .string(rootPlugin)),
            ("rootLocation", .string(rootLocation)),
            ("methods", .array(methods.map(\.jsonValue))),
            ("protection", .string(rootProtection)),
            ("leftoverRoots", .array(leftoverRoots.map { .object([("plugin", .string($0.plugin)), ("location", .string($0.location))]) })),
            ("backupExclusion", backupExclusion.jsonValue),
            ("unlocked", .bool(unlocked != nil)),
        ]
        if let until = unlocked?.until { fields.append(("unlockedUntil", .string(KeybayStatus.Unlocked.utcText(until)))) }
        return .object(fields)
    }

    /// ``jsonValue`` as one line of JSON.
    public var json: String { KeybayJSON.render(jsonValue) }
}

extension KeybayMethod {
    /// The method as the CLI's JSON lists it: `id`, `plugin`, `label`.
    public var jsonValue: KeybayJSON.Value {
        .object([("id", .string(id)), ("plugin", .string(plugin)), ("label", .string(label))])
    }
}

extension KeybayBackupExclusion {
    /// The markers in place, as `status --json` and `backup --json` list them: `storeDirectory`
    /// and `rootDirectory`, each an array of marker names.
    public var jsonValue: KeybayJSON.Value {
        .object([("storeDirectory", .array(storeDirectory.map { .string($0) })),
                 ("rootDirectory", .array(rootDirectory.map { .string($0) }))])
    }
}

extension KeybayStatus.Unlocked {
    /// `seconds` since the Unix epoch as UTC in ISO 8601, `2026-12-01T10:15:00Z`.
    ///
    /// - Parameter seconds: A Unix time.
    /// - Returns: The time as text.
    public static func utcText(_ seconds: Int64) -> String {
        var time = time_t(seconds)
        var parts = tm()
        guard gmtime_r(&time, &parts) != nil else { return String(seconds) }
        func two(_ n: Int32) -> String { (n < 10 ? "0" : "") + String(n) }
        return "\(parts.tm_year + 1900)-\(two(parts.tm_mon + 1))-\(two(parts.tm_mday))T\(two(parts.tm_hour)):\(two(parts.tm_min)):\(two(parts.tm_sec))Z"
    }
}
