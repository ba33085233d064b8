// SPDX-License-Identifier: Apache-2.0
import Keybay

/// `status`: what is on disk (state, paths, root, methods, policy, backup markers, the agent).
extension Command {
    static func status(_ c: Context) throws -> Int32 {
        try c.a.expect([])
        return try status(c.a, configuration(c.a))
    }

    static func status(_ a: Arguments, _ config: KeybayConfiguration) throws -> Int32 {
        let s = try KeybayStore.status(config)
        let policy = statusPolicy(config, s)
        if a.json {
            guard case .object(let fields) = s.jsonValue else { return Exit.failure }
            Output.line(JSON.render(.object(fields + (policy.map { [("rootPolicy", $0.json)] } ?? []))))
        } else {
            let methods = s.methods.isEmpty ? "none" : s.methods.map { "\($0.id) \($0.plugin) (\($0.label))" }.joined(separator: "\n            ")
            Output.out("""
                state:      \(s.state.rawValue)
                store:      \(s.storePath)
                root:       \(s.rootPlugin) at \(s.rootLocation)
                methods:    \(methods)
                note:       \(s.rootProtection)\(policy.map { "\npolicy:     " + $0.text } ?? "")
                backups:    \(backupText(s.backupExclusion))\(s.state == .protected ? "\nunlocked:   " + (s.unlocked.map { untilText($0.until) } ?? "no") : "")

                """)
            for leftover in s.leftoverRoots {
                Output.line("leftover:   \(leftover.plugin) at \(leftover.location) (an interrupted root move left it; reset removes it)")
            }
        }
        return Exit.success
    }
}
