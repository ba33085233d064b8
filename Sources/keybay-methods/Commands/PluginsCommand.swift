// SPDX-License-Identifier: Apache-2.0
import Keybay

/// `plugins`: the plugins found, whether each is usable here and needs a device, and its options.
extension Command {
    static func plugins(_ c: Context) throws -> Int32 {
        let a = c.a
        try a.expect([])
        let plugins = try KeybayPlugins.list(search: search(a))
        if a.json {
            Output.line(JSON.render(.array(plugins.map { p in
                var fields: [(String, JSON.Value)] = [("id", .string(p.id)), ("kind", .string(p.kind ?? "refused")),
                                                     ("version", .string(p.version ?? "")), ("path", .string(p.path)),
                                                     ("available", .bool(p.available)), ("needsDevice", .bool(p.needsDevice))]
                if let reason = p.reason { fields.append(("reason", .string(reason))) }
                return .object(fields)
            })))
        } else {
            for p in plugins {
                let device = p.needsDevice ? "  needs a device" : ""
                Output.line("\(p.id)  \(p.kind ?? "refused")  \(p.version ?? "-")  \(p.available ? "available" : "not available")\(device)  \(p.path)")
                if let reason = p.reason { Output.line("    \(reason)") }
                for o in p.options { Output.line("    --opt \(o.name)=…  \(o.help)") }
            }
        }
        return Exit.success
    }
}
