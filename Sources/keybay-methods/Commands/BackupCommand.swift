// SPDX-License-Identifier: Apache-2.0
import Keybay

/// `backup exclude|include`, and how `status` shows the backup markers.
extension Command {
    static func backup(_ c: Context) throws -> Int32 {
        let a = c.a
        try a.expect(["exclude|include"])
        let excluded: Bool
        switch a.positionals[0] {
        case "exclude": excluded = true
        case "include": excluded = false
        default: throw Arguments.UsageError(message: "'backup' takes exclude or include, not '\(a.positionals[0].prefix(40))'")
        }
        let markers = try KeybayStore.setBackupExclusion(try configuration(a), excluded: excluded)
        a.json ? Output.line(JSON.render(.object([("backupExclusion", backupJSON(markers))])))
               : Output.line(excluded ? "excluded from backups: \(backupText(markers))" : "kept in backups: \(backupText(markers))")
        return Exit.success
    }

    static func backupJSON(_ markers: KeybayBackupExclusion) -> JSON.Value { markers.jsonValue }

    static func backupText(_ markers: KeybayBackupExclusion) -> String {
        func list(_ names: [String]) -> String { names.isEmpty ? "no markers" : names.joined(separator: ", ") }
        return "store directory: \(list(markers.storeDirectory)); root directory: \(list(markers.rootDirectory))"
    }
}
