// SPDX-License-Identifier: Apache-2.0
import Keybay

/// `reset --yes`: the store and its platform root removed, every record lost.
extension Command {
    static func reset(_ c: Context) throws -> Int32 {
        let a = c.a
        try a.expect([])
        guard a.flags.contains("--yes") else {
            throw Arguments.UsageError(message: "reset deletes the store and its platform root, losing every record; confirm with --yes")
        }
        let config = try configuration(a)
        try KeybayStore.reset(config, interaction: c.interaction)
        a.json ? Output.line(JSON.render(.object([("reset", .bool(true)), ("storePath", .string(config.storePath))])))
               : Output.line("removed the store and platform root of \(config.applicationID) (if there were any)")
        return Exit.success
    }
}
