// SPDX-License-Identifier: Apache-2.0
import CKeybayAgent
import Glibc
import Keybay

/// `unlock`, `lock` and `agent`: the store handed to the keybay agent for a while, forgotten
/// again, and the agent itself (docs/agent.md).
extension Command {
    /// The commands whose store may be served by the agent (and `status`, which says whether it
    /// is). Every other command reads the store itself: rotations never go through the agent.
    static let agentCommands: Set<String> = ["get", "set", "rm", "keys", "status", "unlock", "lock"]

    /// `unlock [--for DURATION]`: the agent is started if none answers (before anything is
    /// asked, so a missing runtime directory fails first), the store is opened through its
    /// method as `get` opens it (never through the agent), and its unlocked generation is handed over.
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

    /// `lock [--all]`: the agent forgets the store (or every store). Nothing to forget, or no
    /// agent, is a success too.
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

    /// `agent`: runs in the foreground until it ends (the launcher detaches it; systemd runs it as a service).
    static func runAgent(_ c: Context) throws -> Int32 {
        try c.a.expect([])
        try KeybayAgent.run { Output.error("keybay agent: " + $0) }
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

/// `--for DURATION`: whole seconds (`90`), or a number with `s`, `m`, `h` or `d` (`90s`, `15m`,
/// `2h`, `1d`); `0` holds the store until `lock` or logout. At most a year.
enum AgentDuration {
    static let maxSeconds: UInt64 = 366 * 86400

    static func seconds(_ text: String) throws -> UInt64 {
        let units: [Character: UInt64] = ["s": 1, "m": 60, "h": 3600, "d": 86400]
        var digits = Substring(text), unit: UInt64 = 1
        if let last = text.last, let factor = units[last] {
            digits = digits.dropLast()
            unit = factor
        }
        guard !digits.isEmpty, digits.utf8.count <= 12, digits.allSatisfy({ $0.isASCII && $0.isNumber }), let n = UInt64(digits),
              n.multipliedReportingOverflow(by: unit).partialValue <= maxSeconds else {
            throw Arguments.UsageError(message: "--for takes a duration: seconds, or a number with s, m, h or d (90s, 15m, 2h), at most 366d; 0 until lock")
        }
        return n * unit
    }
}

/// This executable, which runs the agent as `keybay-methods agent`.
private func selfExecutable() throws -> String {
    var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
    let n = readlink("/proc/self/exe", &buffer, buffer.count - 1)
    guard n > 0 else { throw KeybayError(.io, "cannot find this executable (/proc/self/exe) to start the keybay agent") }
    return String(decoding: buffer[0..<n].map { UInt8(bitPattern: $0) }, as: UTF8.self)
}
