// SPDX-License-Identifier: Apache-2.0
import Keybay

/// `change METHOD-ID [--label L] [--opt NAME=VALUE ...]`: unlocks with the method (or
/// `--method`), then replaces its credential with a new one in one rotation.
extension Command {
    static func change(_ c: Context) throws -> Int32 {
        let a = c.a
        try a.expect(["METHOD-ID"])
        let id = a.positionals[0]
        if let label = a.label { try KeybayMethod.validateLabel(label) }
        var withMethod = a
        if a.method == nil { withMethod.method = id }
        let session = try unlock(withMethod, c.interaction, createIfAbsent: false, requireMethod: true)
        defer { session.close() }
        // Its replacement, enrolled by the same plugin, is what the --new-*-fd answer.
        c.interaction.enrolling = try session.auth.list().first { $0.id == id }?.plugin
        let prepared = try session.auth.prepare(replacing: id, options: a.options, label: a.label)
        let method = prepared.method
        try StoredEnrollment.commitAndPrint(c, prepared, json: [("changed", .string(id)), ("method", methodJSON(method)), ("methodId", .string(method.id))],
                                            text: "changed \(method.plugin) method \(id) (\(method.label)): it is now \(method.id); the old secret no longer opens the store",
                                            undone: "the change was taken back: method \(id) opens the store as before")
        return Exit.success
    }
}
