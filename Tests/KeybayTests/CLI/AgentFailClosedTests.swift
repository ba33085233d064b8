// SPDX-License-Identifier: Apache-2.0
import Foundation
import Glibc
import Testing
@testable import Keybay

/// The agent and its clients fail closed: a listener that is not this user's agent is never
/// sent a request (a value would go to it, a value from it would be believed), a silent one
/// costs the bound and no more, a client of another uid gets nothing, and the agent cannot be
/// read by other processes (not dumpable). The fakes are Tests/agent/fake_agent.py; another user
/// is uid 65534 through setpriv, which needs root (as Tpm2Tests runs the CLI).
@Suite struct AgentFailClosedTests {
    static let fake = packageDirectory + "/Tests/agent/fake_agent.py"
    /// Another user, who may still reach root's 0700 directories (CAP_DAC_OVERRIDE): only the
    /// peer's uid can tell it apart.
    static let otherUser = ["--reuid=65534", "--regid=65534", "--clear-groups", "--inh-caps=+dac_override", "--ambient-caps=+dac_override"]

    @Test(.enabled(if: geteuid() == 0, "running a client as another user needs root"))
    func aConnectionFromAnotherUIDIsRefused() throws {
        let agent = AgentSandbox()
        try agent.makeProtectedStore()
        #expect(try agent.unlock("1h").status == 0)
        let ref = AgentStoreRef(applicationID: agent.box.app, dataHome: agent.box.dataHome, stateHome: agent.box.stateHome)
        let request = AgentRequest.record(ref, .get(key: "service/token")).frame
        writeBytes(agent.box.root + "/request", request)
        let client = """
            import socket, sys
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.connect(sys.argv[1])
            got = b""
            try:
                # The agent may close a refused connection before the request is all sent.
                s.sendall(open(sys.argv[2], "rb").read())
                s.settimeout(5)
                while True:
                    chunk = s.recv(65536)
                    if not chunk: break
                    got += chunk
            except (BrokenPipeError, ConnectionResetError, socket.timeout):
                pass
            print(len(got))
            """
        writeBytes(agent.box.root + "/client.py", Array(client.utf8))
        let own = try run("/usr/bin/python3", [agent.box.root + "/client.py", agent.socketPath, agent.box.root + "/request"], environment: agent.environment)
        #expect(own.status == 0 && own.out != "0\n", "this user's client is answered: \(own.out) \(own.stderr)")
        let other = try run("/usr/bin/setpriv", Self.otherUser + ["/usr/bin/python3", agent.box.root + "/client.py", agent.socketPath, agent.box.root + "/request"],
                            environment: agent.environment)
        #expect(other.status == 0 && other.out == "0\n", "uid 65534 got an answer: \(other.out) \(other.stderr)")
        #expect(try agent.cli("get", "service/token", "--no-input").out == "s3cret")
    }

    /// A listener of another user on the agent's socket: the CLI sends it nothing (the fake
    /// records how many bytes each connection brought) and goes on as without an agent.
    @Test(.enabled(if: geteuid() == 0, "running a listener as another user needs root"))
    func anAgentOfAnotherUIDIsNotUsed() throws {
        let agent = AgentSandbox()
        try agent.makeProtectedStore()
        mkdir(agent.runtimeDirectory + "/keybay", 0o700)
        let record = agent.box.root + "/received"
        let pid = spawnChild("/usr/bin/setpriv", Self.otherUser + ["/usr/bin/python3", Self.fake, "answer", agent.socketPath, record],
                             environment: agent.environment, stdinPath: "/dev/null")
        defer { kill(pid, SIGKILL); _ = waitChild(pid) }
        #expect(waitForFile(agent.socketPath))
        let r = try agent.cli("get", "service/token", "--no-input")
        #expect(r.status == 4 && !r.out.contains("fake"), "\(r.status): \(r.out) \(r.stderr)")
        let received = String(decoding: readBytes(record) ?? [], as: UTF8.self).split(separator: "\n")
        #expect(!received.isEmpty && received.allSatisfy { $0 == "0" }, "bytes sent to another user's listener: \(received)")
        #expect(try agent.cli("status", "--json").out.contains("\"unlocked\":false"))
    }

    /// The same fake as this user: it is believed (the test's control, showing the fake speaks
    /// the protocol), so only the uid check kept the value above from being taken.
    @Test func theSameFakeAsThisUserIsBelieved() throws {
        let agent = AgentSandbox()
        try agent.makeProtectedStore()
        mkdir(agent.runtimeDirectory + "/keybay", 0o700)
        let pid = spawnChild("/usr/bin/python3", [Self.fake, "answer", agent.socketPath, agent.box.root + "/received"],
                             environment: agent.environment, stdinPath: "/dev/null")
        defer { kill(pid, SIGKILL); _ = waitChild(pid) }
        #expect(waitForFile(agent.socketPath))
        #expect(try agent.cli("get", "service/token", "--no-input").out == "fake-value")
    }

    /// A listener that accepts and never answers: every round trip has its bound, so the CLI
    /// goes on without the agent (exit 4 with --no-input) instead of hanging.
    @Test func aSilentAgentCostsTheBoundNotAHang() throws {
        let agent = AgentSandbox()
        try agent.makeProtectedStore()
        mkdir(agent.runtimeDirectory + "/keybay", 0o700)
        let pid = spawnChild("/usr/bin/python3", [Self.fake, "silent", agent.socketPath], environment: agent.environment, stdinPath: "/dev/null")
        defer { kill(pid, SIGKILL); _ = waitChild(pid) }
        #expect(waitForFile(agent.socketPath))
        for command in [["get", "service/token"], ["set", "k", "v"], ["keys"], ["status"]] {
            let r = try Tpm2BoundsTests.runWithin(20, cliPath, command + ["--no-input"], environment: agent.environment)
            #expect(!r.result.signalled && r.result.status == (command == ["status"] ? 0 : 4), "\(command): \(r.seconds) s, \(r.result.status) \(r.result.stderr)")
        }
        let unlock = try Tpm2BoundsTests.runWithin(20, cliPath, ["unlock", "--no-input"], environment: agent.environment)
        #expect(!unlock.result.signalled && unlock.result.status != 0, "\(unlock.seconds) s: \(unlock.result.stderr)")
    }

    /// The agent's memory cannot be read by the user's other processes: it is not dumpable, so
    /// its /proc files belong to root, not to the user it runs as.
    @Test(.enabled(if: geteuid() == 0, "telling a non-dumpable process apart needs another user than root"))
    func theAgentIsNotDumpable() throws {
        let agent = AgentSandbox()
        // The other user may not reach the build directory (a clone in a private directory): the
        // agent runs from a copy it can reach, as in Tpm2Tests (a sanitizer build runs in place).
        var cli = cliPath
        if sanitizer == nil {
            mkdir(agent.box.root + "/bin", 0o755)
            cli = agent.box.root + "/bin/keybay-methods"
            try Tpm2Tests.copyExecutable(cliPath, to: cli)
        }
        #expect(chown(agent.box.root, 65534, 65534) == 0 && chown(agent.runtimeDirectory, 65534, 65534) == 0)
        let pid = spawnChild("/usr/bin/setpriv", ["--reuid=65534", "--regid=65534", "--clear-groups", cli, "agent"], environment: agent.environment,
                             stdinPath: "/dev/null")
        defer { kill(pid, SIGTERM); _ = waitChild(pid) }
        #expect(waitForFile(agent.socketPath))
        var st = stat()
        #expect(stat("/proc/\(pid)/status", &st) == 0 && st.st_uid == 0, "the agent's /proc files belong to uid \(st.st_uid)")
        let status = String(decoding: readBytes("/proc/\(pid)/status") ?? [], as: UTF8.self)
        #expect(status.contains("Uid:\t65534"), "\(status)")
    }
}
