// SPDX-License-Identifier: Apache-2.0
import Foundation
import Glibc
import Testing
@testable import Keybay

/// `unlock`, `lock` and the agent through the real CLI, each test with a runtime directory and
/// a store of its own (AgentSandbox): record commands ask nothing while the store is unlocked,
/// and as before once the time is up, after `lock`, after a change of methods, or when the file
/// on disk is not the one the agent holds.
@Suite struct AgentTests {
    @Test func afterUnlockThreeGetsAskNothingAndAfterTheTimeTheyExit4() throws {
        let agent = AgentSandbox()
        try agent.makeProtectedStore()
        #expect(try agent.cli("get", "service/token", "--no-input").status == 4)
        let unlocked = try agent.unlock("2s")
        let start = Date()
        #expect(unlocked.status == 0, "\(unlocked.stderr)")
        for _ in 0..<3 {
            let r = try agent.cli("get", "service/token", "--no-input")
            #expect(r.status == 0 && r.out == "s3cret", "\(r.status): \(r.stderr)")
        }
        let status = try agent.cli("status", "--json")
        let fields = try #require(try JSONSerialization.jsonObject(with: Data(status.stdout)) as? [String: Any])
        #expect(fields["unlocked"] as? Bool == true && (fields["unlockedUntil"] as? String)?.hasSuffix("Z") == true, "\(status.out)")
        // The agent counts from the hand-off, which came before `unlock` returned.
        let left = 2.1 - Date().timeIntervalSince(start)
        if left > 0 { usleep(UInt32(left * 1e6)) }
        let after = try agent.cli("get", "service/token", "--no-input")
        #expect(after.status == 4 && after.stdout.isEmpty, "\(after.status): \(after.stderr)")
        #expect(try agent.cli("status", "--json").out.contains("\"unlocked\":false"))
    }

    @Test func lockEndsItAtOnceAndForZeroHoldsUntilThen() throws {
        let agent = AgentSandbox()
        #expect(try agent.cli("set", "k", "v").status == 0)
        let platformOnly = try agent.withPassphrase(["unlock"])
        #expect(platformOnly.status == 1 && platformOnly.stderr.contains("[protection-mismatch]"), "\(platformOnly.stderr)")
        #expect(try agent.cli("rm", "k").status == 0)
        try agent.makeProtectedStore()
        #expect(try agent.unlock("0").status == 0)
        #expect(try agent.cli("get", "service/token", "--no-input").out == "s3cret")
        #expect(try agent.cli("status").out.contains("unlocked:   until lock or logout"))
        #expect(!(try agent.cli("status", "--json").out.contains("unlockedUntil")))
        let locked = try agent.cli("lock", "--json")
        #expect(locked.status == 0 && locked.out.contains("\"locked\":1"), "\(locked.out) \(locked.stderr)")
        #expect(try agent.cli("get", "service/token", "--no-input").status == 4)
        #expect(try agent.cli("lock", "--json").out.contains("\"locked\":0"))
        #expect(try agent.unlock("1h").status == 0)
        let all = try run(cliPath, ["lock", "--all", "--json"], environment: agent.environment.filter { $0.key != "KEYBAY_APP_ID" })
        #expect(all.status == 0 && all.out.contains("\"locked\":1"), "\(all.out) \(all.stderr)")
        #expect(try agent.cli("get", "service/token", "--no-input").status == 4)
    }

    /// A rotation never goes through the agent (it asks as before), and the new epoch it writes
    /// ends the unlock.
    @Test func removingTheMethodEndsItAndRotationsAskAsBefore() throws {
        let agent = AgentSandbox()
        try agent.makeProtectedStore()
        let recovery = try agent.withPassphrase(["enroll", "recovery", "--json"])
        #expect(recovery.status == 0, "\(recovery.stderr)")
        let passphraseID = try #require(try methodIDs(agent.box, environment: agent.environment).first)
        #expect(try agent.withPassphrase(["unlock", "--for", "1h", "--method", passphraseID]).status == 0)
        #expect(try agent.cli("get", "service/token", "--no-input").out == "s3cret")
        #expect(try agent.cli("enroll", "recovery", "--no-input").status == 4)
        #expect(try agent.cli("verify", passphraseID, "--no-input").status == 4)
        let removed = try agent.withPassphrase(["remove", passphraseID, "--method", passphraseID])
        #expect(removed.status == 0, "\(removed.stderr)")
        let after = try agent.cli("get", "service/token", "--no-input")
        #expect(after.status == 4 && after.stdout.isEmpty, "\(after.status): \(after.stderr)")
        #expect(try agent.cli("status", "--json").out.contains("\"unlocked\":false"))
    }

    /// Writes through the agent are the store's own durable writes: they are there after the
    /// agent is killed, read by a process that asks for the passphrase.
    @Test func setAndRmThroughTheAgentLandAndSurvive() throws {
        let agent = AgentSandbox()
        try agent.makeProtectedStore([("service/token", "s3cret"), ("old/key", "gone soon")])
        #expect(try agent.unlock("1h").status == 0)
        let value: [UInt8] = (0..<70_000).map { UInt8(truncatingIfNeeded: $0 * 7) }
        #expect(try agent.cli("set", "binary/blob", "--stdin", "--no-input", stdin: value).status == 0)
        #expect(try agent.cli("set", "service/token", "n3w", "--no-input").status == 0)
        #expect(try agent.cli("rm", "old/key", "--no-input").status == 0)
        #expect(try agent.cli("rm", "old/key", "--no-input").status == 3)
        #expect(try agent.cli("keys", "--no-input").out == "binary/blob\nservice/token\n")
        #expect(!exists(agent.box.stagingPath))
        let pid = try #require(agent.agentPID)
        kill(pid, SIGKILL)
        #expect(waitUntilGone(pid))
        #expect(try agent.cli("get", "service/token", "--no-input").status == 4)
        let blob = try agent.withPassphrase(["get", "binary/blob"]).stdout == value
        #expect(blob, "the 70 000-byte value did not read back")
        #expect(try agent.withPassphrase(["get", "service/token"]).out == "n3w")
        #expect(try agent.withPassphrase(["get", "old/key"]).status == 3)
    }

    /// The agent serves only the file it holds: a copy put back over it (here one from before a
    /// write through the agent: same key, an older value) ends the unlock instead of being read.
    @Test func aStoreReplacedOnDiskIsNotServed() throws {
        let agent = AgentSandbox()
        try agent.makeProtectedStore()
        #expect(try agent.unlock("1h").status == 0)
        let before = try #require(readBytes(agent.box.storePath))
        #expect(try agent.cli("set", "service/token", "newer", "--no-input").status == 0)
        writeBytes(agent.box.storePath + ".copy", before)
        #expect(rename(agent.box.storePath + ".copy", agent.box.storePath) == 0)
        let r = try agent.cli("get", "service/token", "--no-input")
        #expect(r.status == 4 && r.stdout.isEmpty, "\(r.status): \(r.out) \(r.stderr)")
        #expect(try agent.cli("status", "--json").out.contains("\"unlocked\":false"))
    }

    /// An older copy from before a change of methods, put back while unlocked: the agent does
    /// not serve it, and opening it without the agent is refused by the root's rollback floor.
    @Test func aStoreRolledBackWhileUnlockedIsNotServed() throws {
        let agent = AgentSandbox()
        try agent.makeProtectedStore()
        let old = try #require(readBytes(agent.box.storePath))
        let id = try #require(try methodIDs(agent.box, environment: agent.environment).first)
        let file = agent.box.root + "/secrets"
        try "\(AgentSandbox.passphrase)\n".write(toFile: file + ".old", atomically: true, encoding: .utf8)
        try "another agent horse\n".write(toFile: file + ".new", atomically: true, encoding: .utf8)
        let change = try run("/bin/sh", ["-c", "exec \"$0\" \"$@\" 3<\"\(file).old\" 4<\"\(file).new\"", cliPath, "change", id,
                                         "--passphrase-fd", "3", "--new-passphrase-fd", "4"] + fastPassphraseFlags, environment: agent.environment)
        #expect(change.status == 0, "\(change.stderr)")
        #expect(try agent.unlock("1h").status != 0)
        #expect(try agent.withPassphrase(["unlock", "--for", "1h"], "another agent horse").status == 0)
        #expect(try agent.cli("get", "service/token", "--no-input").status == 0)
        writeBytes(agent.box.storePath + ".copy", old)
        #expect(rename(agent.box.storePath + ".copy", agent.box.storePath) == 0)
        let r = try agent.cli("get", "service/token", "--no-input")
        #expect(r.status == 1 && r.stdout.isEmpty && r.stderr.contains("[rolled-back]"), "\(r.status): \(r.stderr)")
    }

    /// `kill -9` of the agent: the next get exits 4 with --no-input, well within 2 s, and asks
    /// for the passphrase without it.
    @Test func afterTheAgentIsKilledTheNextGetAsks() throws {
        let agent = AgentSandbox()
        try agent.makeProtectedStore()
        #expect(try agent.unlock("1h").status == 0)
        let pid = try #require(agent.agentPID)
        kill(pid, SIGKILL)
        #expect(waitUntilGone(pid))
        #expect(exists(agent.socketPath), "the killed agent's socket stays behind, stale")
        let bounded = try Tpm2BoundsTests.runWithin(10, cliPath, ["get", "service/token", "--no-input"], environment: agent.environment)
        #expect(!bounded.result.signalled && bounded.result.status == 4 && bounded.seconds < 2, "\(bounded.seconds) s: \(bounded.result.stderr)")
        let prompt = try run("/usr/bin/python3", [packageDirectory + "/Tests/pty/prompt_text.py", cliPath, "get", "service/token"],
                             environment: agent.environment)
        #expect(prompt.out.contains("Passphrase for com.example.agent"), "\(prompt.out)")
    }

    /// A socket file nobody listens on: record commands go on without the agent, and `unlock`
    /// starts one that takes the socket's place.
    @Test func aStaleSocketIsPassedOverAndReplaced() throws {
        let agent = AgentSandbox()
        try agent.makeProtectedStore()
        mkdir(agent.runtimeDirectory + "/keybay", 0o700)
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        let address = try #require(UnixSocket.address(agent.socketPath))
        #expect(UnixSocket.withAddress(address) { bind(fd, $0, $1) } == 0)
        close(fd)
        #expect(exists(agent.socketPath))
        let stale = try Tpm2BoundsTests.runWithin(10, cliPath, ["get", "service/token", "--no-input"], environment: agent.environment)
        #expect(!stale.result.signalled && stale.result.status == 4, "\(stale.result.stderr)")
        #expect(try agent.unlock("1h").status == 0)
        #expect(try agent.cli("get", "service/token", "--no-input").out == "s3cret")
    }

    /// The agent refuses a runtime directory that is missing or open to others, and `unlock`
    /// says so before it asks for anything.
    @Test func theAgentNeedsAPrivateRuntimeDirectory() throws {
        let agent = AgentSandbox()
        try agent.makeProtectedStore()
        var unset = agent.environment
        unset["XDG_RUNTIME_DIR"] = nil
        #expect(try run(cliPath, ["agent"], environment: unset).status == 2)
        #expect(try run(cliPath, ["unlock", "--no-input"], environment: unset).status == 2)
        chmod(agent.runtimeDirectory, 0o755)
        let open = try run(cliPath, ["agent"], environment: agent.environment)
        #expect(open.status == 1 && open.stderr.contains("[insecure-permissions]"), "\(open.status): \(open.stderr)")
        chmod(agent.runtimeDirectory, 0o700)
        mkdir(agent.runtimeDirectory + "/keybay", 0o750)
        chmod(agent.runtimeDirectory + "/keybay", 0o750)
        let group = try run(cliPath, ["agent"], environment: agent.environment)
        #expect(group.status == 1 && group.stderr.contains("[insecure-permissions]"), "\(group.status): \(group.stderr)")
        #expect(try agent.unlock("1h").status != 0)
    }

    /// systemd's socket activation: the agent takes the listening socket on descriptor 3 when
    /// LISTEN_PID names it, and `unlock` uses that agent instead of starting one.
    @Test func theAgentTakesASocketSystemdPasses() throws {
        let agent = AgentSandbox()
        try agent.makeProtectedStore()
        mkdir(agent.runtimeDirectory + "/keybay", 0o700)
        let script = """
            import os, socket, sys
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            os.umask(0o177)
            s.bind(sys.argv[2]); s.listen(16)
            if s.fileno() != 3: os.dup2(s.fileno(), 3)
            os.set_inheritable(3, True)
            os.environ["LISTEN_PID"] = str(os.getpid()); os.environ["LISTEN_FDS"] = "1"
            os.execv(sys.argv[1], [sys.argv[1], "agent"])
            """
        writeBytes(agent.box.root + "/activate.py", Array(script.utf8))
        let pid = spawnChild("/usr/bin/python3", [agent.box.root + "/activate.py", cliPath, agent.socketPath], environment: agent.environment,
                             stdinPath: "/dev/null")
        defer { kill(pid, SIGTERM); _ = waitChild(pid) }
        #expect(waitForFile(agent.socketPath))
        var before = stat(), after = stat()
        #expect(lstat(agent.socketPath, &before) == 0)
        #expect(try agent.unlock("1h").status == 0)
        #expect(agent.agentPID == pid)
        // The very socket systemd made, not one the agent bound in its place.
        #expect(lstat(agent.socketPath, &after) == 0 && after.st_ino == before.st_ino)
        #expect(try agent.cli("get", "service/token", "--no-input").out == "s3cret")
    }
}
