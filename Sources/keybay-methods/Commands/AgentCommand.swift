// SPDX-License-Identifier: Apache-2.0
import Keybay

/// `agent`: the keybay agent itself (docs/agent.md).
extension Command {
    /// Runs in the foreground until it ends (the launcher detaches it; systemd runs it as a service).
    static func runAgent(_ c: Context) throws -> Int32 {
        try c.a.expect([])
        try KeybayAgent.run { Output.error("keybay agent: " + $0) }
        return Exit.success
    }
}
