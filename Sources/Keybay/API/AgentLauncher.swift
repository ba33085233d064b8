// SPDX-License-Identifier: Apache-2.0
import CKeybayAgent
import Glibc

/// Starts the agent as gpg-agent starts its own: `program agent` (keybay-methods), detached (its
/// own session, standard descriptors on /dev/null, nothing else inherited), then waits until it
/// answers (bounded), or reports that it ended. The CLI's `unlock` and the C API's
/// `keybay_unlock` start it this way when none answers.
enum AgentLauncher {
    static let startBound = 5.0

    /// `keybay-methods`, which runs the agent, for a host linking `libkeybay.so.1`: beside the
    /// library (a build directory), else in the `bin` directory of the prefix it is installed in
    /// (`lib/` or `lib/<triple>/` below it).
    static func installedProgram() throws -> String {
        guard let directory = KeybayPluginSearch.libraryDirectory ?? KeybayPluginSearch.executableDirectory else {
            throw KeybayError(.io, "cannot find where libkeybay is, to start the keybay agent")
        }
        let candidates = ["", "/../bin", "/../../bin"].map { KeybayPluginSearch.normalise(directory + $0) + "/keybay-methods" }
        guard let program = candidates.first(where: { access($0, X_OK) == 0 }) else {
            throw KeybayError(.io, "no keybay agent answers, and keybay-methods, which starts one, is neither in \(directory) nor in its prefix's bin directory")
                .with(reason: "no-agent")
        }
        return program
    }

    /// Returns once an agent answers at `socket`, starting `executable agent` if none does.
    static func ensureRunning(_ socket: String, program executable: String) throws {
        if KeybayStore.agentAnswers(socket) { return }
        let argv: [UnsafeMutablePointer<CChar>?] = [strdup(executable), strdup("agent"), nil]
        defer { argv.forEach { free($0) } }
        var pid: pid_t = 0
        let rc = keybay_spawn_detached(executable, argv, environ, &pid)
        guard rc == 0 else { throw KeybayError(.io, "cannot start the keybay agent (\(executable) agent): \(String(cString: strerror(rc)))") }
        let deadline = now() + startBound
        while now() < deadline {
            if KeybayStore.agentAnswers(socket) { return }
            var status: Int32 = 0
            if waitpid(pid, &status, WNOHANG) == pid {
                if KeybayStore.agentAnswers(socket) { return }
                throw KeybayError(.io, "the keybay agent ended as it started (exit status \((status >> 8) & 0xff)); run keybay-methods agent to see why")
            }
            usleep(10_000)
        }
        throw KeybayError(.io, "the keybay agent did not answer on \(socket) within \(Int(startBound)) s")
    }

    private static func now() -> Double {
        var t = timespec()
        clock_gettime(CLOCK_MONOTONIC, &t)
        return Double(t.tv_sec) + Double(t.tv_nsec) / 1e9
    }
}
