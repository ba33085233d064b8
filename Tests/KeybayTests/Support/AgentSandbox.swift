// SPDX-License-Identifier: Apache-2.0
import CKeybayAgent
import Foundation
import Glibc
import Testing
@testable import Keybay

/// A sandbox for the agent's tests: the usual XDG directories, a runtime directory of its own
/// (XDG_RUNTIME_DIR, 0700, never the user's) and a cheap passphrase store (8 MiB, one pass).
/// `stop()` ends the agent that serves it, if one does; the runtime directory goes with the
/// sandbox, and an agent whose socket is gone ends within a second anyway.
final class AgentSandbox: Sendable {
    let box: Sandbox
    static let passphrase = "correct agent horse"

    init(app: String = "com.example.agent") {
        box = Sandbox(app: app)
        mkdir(box.root + "/run", 0o700)
    }

    deinit { stop() }

    var runtimeDirectory: String { box.root + "/run" }
    var socketPath: String { runtimeDirectory + "/keybay/agent.socket" }
    var environment: [String: String] { box.environment.merging(["XDG_RUNTIME_DIR": runtimeDirectory]) { $1 } }

    /// The configuration of the sandbox's store, with its agent socket.
    func configuration() throws -> KeybayConfiguration {
        var c = try box.configuration()
        c.agentSocket = socketPath
        return c
    }

    /// Runs the CLI in the sandbox's environment (with its runtime directory).
    @discardableResult
    func cli(_ arguments: String..., stdin: [UInt8]? = nil) throws -> RunResult {
        try run(cliPath, arguments, environment: environment, stdin: stdin)
    }

    /// Runs the CLI with the passphrase on descriptor 3 (`--passphrase-fd 3`).
    func withPassphrase(_ arguments: [String], _ passphrase: String = AgentSandbox.passphrase) throws -> RunResult {
        try box.cli(arguments, secret: passphrase, option: "--passphrase-fd", environment: environment)
    }

    /// A store holding `records`, protected by a passphrase with cheap parameters.
    func makeProtectedStore(_ records: [(String, String)] = [("service/token", "s3cret")]) throws {
        for (key, value) in records {
            let r = try cli("set", key, value)
            guard r.status == 0 else { throw KeybayTestFailure("set \(key): \(r.stderr)") }
        }
        let enrolled = try withPassphrase(["enroll", "passphrase"] + fastPassphraseFlags)
        guard enrolled.status == 0 else { throw KeybayTestFailure("enroll passphrase: \(enrolled.stderr)") }
    }

    /// `unlock --for DURATION` with the passphrase.
    func unlock(_ duration: String) throws -> RunResult {
        try withPassphrase(["unlock", "--for", duration])
    }

    /// The pid of the process listening on the sandbox's socket (SO_PEERCRED), if one answers.
    var agentPID: pid_t? {
        guard let address = UnixSocket.address(socketPath) else { return nil }
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        defer { close(fd) }
        guard UnixSocket.withAddress(address, { connect(fd, $0, $1) }) == 0 else { return nil }
        var uid: uid_t = 0, pid: pid_t = 0
        guard keybay_peer_credentials(fd, &uid, &pid) == 0 else { return nil }
        return pid
    }

    /// Ends the agent serving the sandbox (SIGTERM), and waits until it is gone.
    func stop() {
        guard let pid = agentPID else { return }
        kill(pid, SIGTERM)
        _ = waitUntilGone(pid)
    }
}

/// Whether `pid` is no longer running (gone, or a zombie nobody reaps) before `seconds` pass.
func waitUntilGone(_ pid: pid_t, seconds: Double = 10) -> Bool {
    let deadline = Date().addingTimeInterval(seconds)
    while Date() < deadline {
        guard let stat = readBytes("/proc/\(pid)/stat") else { return true }
        let text = String(decoding: stat, as: UTF8.self)
        if let close = text.lastIndex(of: ")"), text[text.index(close, offsetBy: 2)] == "Z" { return true }
        usleep(10_000)
    }
    return false
}

/// Waits until `path` exists (a listener bound its socket), at most `seconds`.
func waitForFile(_ path: String, seconds: Double = 10) -> Bool {
    let deadline = Date().addingTimeInterval(seconds)
    while Date() < deadline {
        if exists(path) { return true }
        usleep(10_000)
    }
    return false
}
