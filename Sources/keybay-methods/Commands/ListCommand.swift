// SPDX-License-Identifier: Apache-2.0
import Keybay

/// `list [--describe]`: the enrolled methods, and how a method is shown in JSON (also by
/// `change` and `remove`).
extension Command {
    /// The enrolled methods, read with the root alone; `--describe` also loads each method's
    /// plugin for its one-line description.
    static func list(_ c: Context) throws -> Int32 {
        let a = c.a
        try a.expect([])
        let describing = a.flags.contains("--describe")
        let (s, described) = describing ? try KeybayStore.describeMethods(configuration(a)) : (try KeybayStore.status(configuration(a)), [])
        guard s.state == .protected || s.state == .platformOnly else {
            throw KeybayError(.storeNotFound, "no usable store at \(s.storePath) (state \(s.state.rawValue))")
        }
        if a.json {
            Output.line(JSON.render(.array(describing ? described.map(describedJSON) : s.methods.map(methodJSON))))
        } else if s.methods.isEmpty {
            Output.line("no unlock methods: the store is protected by its platform root only")
        } else if describing {
            for d in described {
                Output.line("\(d.method.id)  \(d.method.plugin)  \(d.method.label)")
                Output.line("    " + (d.description ?? "(unknown: \(d.failure?.description ?? "no description"))"))
            }
        } else {
            for m in s.methods { Output.line("\(m.id)  \(m.plugin)  \(m.label)") }
        }
        return Exit.success
    }

    static func describedJSON(_ d: KeybayMethodDescription) -> JSON.Value {
        let m = d.method
        var fields: [(String, JSON.Value)] = [("id", .string(m.id)), ("plugin", .string(m.plugin)), ("label", .string(m.label))]
        if let text = d.description { fields.append(("description", .string(text))) }
        if let failure = d.failure { fields.append(("descriptionError", .string(failure.description))) }
        return .object(fields)
    }

    static func methodJSON(_ m: KeybayMethod) -> JSON.Value { m.jsonValue }
}
