// SPDX-License-Identifier: Apache-2.0
/// The per-user keybay agent, which holds unlocked stores for a while so that their reads ask
/// nothing (docs/agent.md): running it in this process, and starting it as a process of its own.
/// Hand it a store with ``KeybayStore/unlock(_:agentSocket:for:)``; make it forget with
/// ``KeybayStore/lock(_:)`` or ``KeybayStore/lockAll(agentSocket:)``.
public enum KeybayAgent {
    /// Runs the agent in this process until it ends (then it has forgotten every store): on
    /// SIGTERM, SIGINT or SIGHUP, when its socket file is no longer in place, or after a minute
    /// with nothing held and nobody served. `keybay-methods agent` is this call.
    ///
    /// - Parameter log: Gets one line per event worth a journal entry (never a key, a value or a
    ///   record key), on the calling thread.
    /// - Throws: What keeps it from starting: `.invalidArgument` (no `XDG_RUNTIME_DIR`, a socket
    ///   systemd passed that is not the agent's), `.insecurePermissions` (a runtime directory
    ///   that is not this user's and private), `.io`. Another agent already listening is not an
    ///   error: it is logged and this call returns.
    public static func run(log: (String) -> Void) throws {
        try AgentDaemon.run(log: log)
    }

    /// `keybay-methods`, which runs the agent, for a host linking `libkeybay.so.1`: beside the
    /// library (a build directory), else in the `bin` directory of the prefix it is installed in.
    ///
    /// - Throws: `.io` with reason `no-agent` when it is in neither.
    public static func installedProgram() throws -> String {
        try AgentLauncher.installedProgram()
    }

    /// Returns once an agent answers at `socket`, starting `program agent` detached (its own
    /// session, standard descriptors on `/dev/null`) when none does, and waiting at most 5 s.
    ///
    /// - Parameters:
    ///   - socket: The agent's socket (``KeybayConfiguration/agentSocket``).
    ///   - program: An absolute path to `keybay-methods` (``installedProgram()``).
    /// - Throws: `.io` when it cannot be started, ended as it started, or did not answer in time.
    public static func ensureRunning(_ socket: String, program: String) throws {
        try AgentLauncher.ensureRunning(socket, program: program)
    }
}
