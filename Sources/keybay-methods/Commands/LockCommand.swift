// SPDX-License-Identifier: Apache-2.0
import Glibc
import Keybay

/// `lock [--all]`: the keybay agent forgets the store, or every store (docs/agent.md).
extension Command {
    /// Nothing to forget, or no agent, is a success too.
    static func lockStores(_ c: Context) throws -> Int32 {
        let a = c.a
        try a.expect([])
        let all = a.flags.contains("--all")
        let config: KeybayConfiguration? = all && a.app == nil && getenv("KEYBAY_APP_ID") == nil ? nil : try configuration(a)
        let socket = config?.agentSocket ?? KeybayConfiguration.defaultAgentSocket()
        let forgotten: UInt32? = all ? socket.flatMap { KeybayStore.lockAll(agentSocket: $0) } : config.flatMap { KeybayStore.lock($0) }
        if a.json {
            Output.line(JSON.render(.object([("locked", .number(Int(forgotten ?? 0))), ("agentAnswered", .bool(forgotten != nil))])))
        } else if forgotten == nil {
            Output.line("no keybay agent answers: nothing is unlocked")
        } else if all {
            Output.line("locked \(forgotten!) store(s)")
        } else {
            Output.line(forgotten! > 0 ? "locked \(config!.storePath)" : "\(config!.storePath) was not unlocked")
        }
        return Exit.success
    }
}
