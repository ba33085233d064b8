// SPDX-License-Identifier: Apache-2.0
import Keybay

/// `keys`: the record keys, one a line (`--json`: an array).
extension Command {
    static func keys(_ c: Context) throws -> Int32 {
        let a = c.a
        try a.expect([])
        let session = try unlock(a, c.interaction, createIfAbsent: false)
        defer { session.close() }
        let keys = try session.keys()
        a.json ? Output.line(JSON.render(.array(keys.map { .string($0) })))
               : Output.out(keys.map { $0 + "\n" }.joined())
        return Exit.success
    }
}
