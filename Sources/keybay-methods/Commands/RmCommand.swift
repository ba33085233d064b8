// SPDX-License-Identifier: Apache-2.0
import Keybay

/// `rm KEY`: a record removed (exit 3 if there is none).
extension Command {
    static func remove(_ c: Context) throws -> Int32 {
        try c.a.expect(["KEY"])
        let key = c.a.positionals[0]
        // Checked before the store is opened; the store is never created.
        try validateKey(key)
        let session = try unlock(c.a, c.interaction, createIfAbsent: false)
        defer { session.close() }
        var found = false
        let unconfirmed = try tookEffect { found = try session.delete(key) }
        guard found || unconfirmed != nil else { return notFound([key], session, json: c.a.json) }
        if c.a.json { Output.line(JSON.render(.object([("key", .string(key)), ("removed", .bool(true))]))) }
        return try succeeded(unless: unconfirmed)
    }
}
