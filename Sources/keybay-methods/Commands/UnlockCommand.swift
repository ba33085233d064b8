// SPDX-License-Identifier: Apache-2.0
import CKeybayAgent
import Glibc
import Keybay

/// `unlock [--for DURATION]`: the store handed to the keybay agent for a while (docs/agent.md).
extension Command {
    /// The agent is started if none answers (before anything is asked, so a missing runtime
    /// directory fails first), the store is opened through its method as `get` opens it (never
    /// through the agent), and its unlocked generation is handed over.
    static func unlockStore(_ c: Context) throws -> Int32 {
        let a = c.a
        try a.expect([])
        let seconds = try AgentDuration.seconds(a.duration ?? "15m")
        let config = try configuration(a)
        guard let socket = config.agentSocket else {
            throw KeybayError(.invalidArgument, "XDG_RUNTIME_DIR is not set to an absolute path: there is no place for the keybay agent's socket")
        }
        try AgentLauncher.ensureRunning(socket, program: try selfExecutable())
        let session = try unlock(a, c.interaction, createIfAbsent: false, throughAgent: false)
        defer { session.close() }
        // The agent may have ended meanwhile (it leaves after a minute with nothing to hold).
        try AgentLauncher.ensureRunning(socket, program: try selfExecutable())
        let until = try KeybayStore.unlock(session, agentSocket: socket, for: seconds)
        if a.json {
            var fields: [(String, JSON.Value)] = [("unlocked", .bool(true)), ("storePath", .string(config.storePath))]
            if until != 0 { fields.append(("unlockedUntil", .string(KeybayStatus.Unlocked.utcText(until)))) }
            Output.line(JSON.render(.object(fields)))
        } else {
            Output.line("unlocked \(config.storePath) \(untilText(until == 0 ? nil : until))")
        }
        return Exit.success
    }

    /// "until 2026-12-01 10:15:00 (local time)", or "until lock or logout".
    static func untilText(_ until: Int64?) -> String {
        guard let until else { return "until lock or logout" }
        var time = time_t(until)
        var parts = tm()
        var buffer = [CChar](repeating: 0, count: 64)
        guard localtime_r(&time, &parts) != nil, strftime(&buffer, buffer.count, "%Y-%m-%d %H:%M:%S %Z", &parts) > 0 else {
            return "until " + KeybayStatus.Unlocked.utcText(until)
        }
        return "until " + String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}

/// This executable, which runs the agent as `keybay-methods agent`.
private func selfExecutable() throws -> String {
    var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
    let n = readlink("/proc/self/exe", &buffer, buffer.count - 1)
    guard n > 0 else { throw KeybayError(.io, "cannot find this executable (/proc/self/exe) to start the keybay agent") }
    return String(decoding: buffer[0..<n].map { UInt8(bitPattern: $0) }, as: UTF8.self)
}
