// SPDX-License-Identifier: Apache-2.0
import Glibc
import Keybay

/// `get KEY...`: every key checked before the store is opened, all values read from one unlock
/// and one generation of the store (`getMany` for several). One key prints its value as it is (a newline
/// added only on a terminal), `--json` `{"key", "value"|"valueHex"}`; several print each value
/// and a newline, `--json` one object `{KEY: "value" | {"valueHex": "…"}, …}` in argument order.
/// A key without a record prints nothing but the error, naming every such key (exit 3).
extension Command {
    static func get(_ c: Context) throws -> Int32 {
        let a = c.a
        try a.expect(Array(repeating: "KEY", count: max(a.positionals.count, 1)))
        let keys = a.positionals
        for key in keys { try validateKey(key) }
        let session = try unlock(a, c.interaction, createIfAbsent: false)
        defer { session.close() }
        // One key is read as before (`get`: the path the benchmark against age measures).
        let values = keys.count == 1 ? try session.get(keys[0]).map { [keys[0]: $0] } ?? [:] : try session.getMany(keys)
        var seen: Set<String> = []
        let unique = keys.filter { seen.insert($0).inserted }
        let missing = unique.filter { values[$0] == nil }
        guard missing.isEmpty else { return notFound(missing, session, json: a.json) }
        if keys.count == 1, let value = values[keys[0]] {
            if a.json {
                let field: (String, JSON.Value) = String(validating: value, as: UTF8.self).map { ("value", .string($0)) } ?? ("valueHex", .string(hex(value)))
                Output.line(JSON.render(.object([("key", .string(keys[0])), field])))
            } else {
                Output.write(1, value)
                if isatty(1) == 1, value.last != 0x0a { Output.out("\n") }
            }
        } else if a.json {
            Output.line(JSON.render(.object(unique.map { key in
                let value = values[key]!
                return (key, String(validating: value, as: UTF8.self).map { .string($0) } ?? .object([("valueHex", .string(hex(value)))]))
            })))
        } else {
            for key in keys { Output.write(1, values[key]! + [0x0a]) }
        }
        return Exit.success
    }

    private static func hex(_ bytes: [UInt8]) -> String {
        bytes.map { ($0 < 16 ? "0" : "") + String($0, radix: 16) }.joined()
    }
}
