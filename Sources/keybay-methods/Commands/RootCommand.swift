// SPDX-License-Identifier: Apache-2.0
import Keybay

/// `root move ROOT`, and the way to `root check` and `root reseal`.
extension Command {
    /// `root move ROOT`: the store (unlocked with a method if it is protected) re-sealed under
    /// another root, then the old root removed.
    static func root(_ c: Context) throws -> Int32 {
        let a = c.a
        if a.positionals.first == "check" { return try rootCheck(c) }
        if a.positionals.first == "reseal" { return try rootReseal(c) }
        try a.expect(["move", "ROOT"])
        guard a.positionals[0] == "move" else { throw Arguments.UsageError(message: "unknown root command '\(a.positionals[0])' (root move ROOT, root check, root reseal)") }
        let target = a.positionals[1]
        guard target == KeybayConfiguration.automaticRoot || KeybayPluginSearch.isValidPluginID(target) else {
            throw Arguments.UsageError(message: "'\(target)' is not a root plugin id (file-root, secret-service, auto, ...)")
        }
        var moving = a
        moving.root = nil // the store opens with its own root; the target is the argument
        let session = try unlock(moving, c.interaction, createIfAbsent: false)
        let from = session.configuration
        var moved: KeybayRootMove?
        let unconfirmed = try tookEffect { moved = try session.moveRoot(to: target, options: a.options) }
        // A move that took effect unconfirmed is read back from the store itself.
        let readBack = try moved == nil ? KeybayStore.status(from) : nil
        let rootPlugin = moved?.rootPlugin ?? readBack!.rootPlugin, rootLocation = moved?.rootLocation ?? readBack!.rootLocation
        if let left = moved?.oldRootLeftAt { Output.error("warning: the store moved, but its old root at \(left) could not be removed; remove it by hand") }
        a.json ? Output.line(JSON.render(.object([("rootPlugin", .string(rootPlugin)), ("rootLocation", .string(rootLocation)),
                                                  ("oldRootRemoved", .bool(moved != nil && moved?.oldRootLeftAt == nil))])))
               : Output.line("moved \(from.storePath) to the root \(rootPlugin) at \(rootLocation)")
        return try succeeded(unless: unconfirmed)
    }
}
