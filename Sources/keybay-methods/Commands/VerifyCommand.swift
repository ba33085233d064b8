// SPDX-License-Identifier: Apache-2.0
import Keybay

/// `verify [METHOD-ID]`: a method's secret checked, nothing changed.
extension Command {
    static func verify(_ c: Context) throws -> Int32 {
        let a = c.a
        try a.expect(["METHOD-ID"], optional: 1)
        var withMethod = a
        if let id = a.positionals.first { withMethod.method = id }
        let session = try unlock(withMethod, c.interaction, createIfAbsent: false, requireMethod: true)
        session.close()
        a.json ? Output.line(JSON.render(.object([("verified", .bool(true))]))) : Output.line("verified: the secret unlocks the store")
        return Exit.success
    }
}
