// SPDX-License-Identifier: Apache-2.0
import Keybay

/// `remove METHOD-ID`: an unlock method removed (the store is platform-only after the last).
extension Command {
    static func removeMethod(_ c: Context) throws -> Int32 {
        let a = c.a
        try a.expect(["METHOD-ID"])
        let session = try unlock(a, c.interaction, createIfAbsent: false)
        defer { session.close() }
        let unconfirmed = try tookEffect { try session.auth.remove(a.positionals[0]) }
        let left = try session.auth.list()
        a.json ? Output.line(JSON.render(.object([("removed", .string(a.positionals[0])), ("methods", .array(left.map(methodJSON)))])))
               : Output.line("removed method \(a.positionals[0]); \(left.isEmpty ? "the store is platform-only again" : "\(left.count) method(s) left")")
        return try succeeded(unless: unconfirmed)
    }
}
