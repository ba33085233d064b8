// SPDX-License-Identifier: Apache-2.0
import Foundation
import Glibc
import Testing
@testable import Keybay

/// The library through the agent: while `keybay-methods unlock` holds the store, `KeybayStore.open`
/// with no method and no interaction gives a session whose records go through the agent; so does
/// the C API (here through the Python package over libkeybay.so). Without the agent, the same
/// open is refused as before, and `auth` never goes through it.
@Suite struct AgentSessionTests {
    @Test func aSessionOpenedWhileUnlockedReadsAndWritesThroughTheAgent() throws {
        let agent = AgentSandbox()
        try agent.makeProtectedStore()
        let config = try agent.configuration()
        #expect(keybayError { _ = try KeybayStore.open(config) }?.code == .authenticationRequired)
        #expect(try agent.unlock("1h").status == 0)
        #expect(try KeybayStore.status(config).unlocked != nil)
        let session = try KeybayStore.open(config)
        #expect(session.readsThroughAgent && session.isProtected)
        #expect(try session.getString("service/token") == "s3cret")
        try session.set("from/library", string: "written")
        #expect(try session.keys() == ["from/library", "service/token"])
        #expect(try session.getMany(["from/library", "missing"]) == ["from/library": Array("written".utf8)])
        #expect(try session.contains("from/library") && !(try session.contains("missing")))
        #expect(try session.delete("from/library") && !(try session.delete("from/library")))
        #expect(try session.auth.list().map(\.plugin) == ["passphrase"])
        // `auth` needs the key: it opens the store itself, asking as `open` would have (here it
        // could not: the session was opened without a method).
        #expect(keybayError { _ = try session.auth.remove(try session.auth.list()[0].id) }?.code == .authenticationRequired)
        #expect(try agent.cli("lock").status == 0)
        #expect(keybayError { _ = try session.get("service/token") }?.code == .authenticationRequired)
        #expect(keybayError { _ = try KeybayStore.open(config) }?.code == .authenticationRequired)
        var off = config
        off.agentSocket = nil
        #expect(try agent.unlock("1h").status == 0)
        #expect(keybayError { _ = try KeybayStore.open(off) }?.code == .authenticationRequired)
        #expect(try KeybayStore.status(off).unlocked == nil)
    }

    /// A session opened with a method while unlocked asks nothing for records, and asks (once)
    /// when a method operation needs the key: it opens the store itself for method operations and
    /// keeps it for the next one, while its records still go through the agent.
    @Test func authOnAnAgentSessionUnlocksLocallyWithTheSessionsMethod() throws {
        let agent = AgentSandbox()
        try agent.makeProtectedStore()
        let config = try agent.configuration()
        let id = try #require(try KeybayStore.status(config).methods.first?.id)
        #expect(try agent.unlock("1h").status == 0)
        let asker = ScriptedInteraction([AgentSandbox.passphrase, AgentSandbox.passphrase, AgentSandbox.passphrase])
        let session = try KeybayStore.open(config, method: id, interaction: asker)
        #expect(session.readsThroughAgent && asker.requests.withLock { $0.isEmpty })
        #expect(try session.getString("service/token") == "s3cret")
        try session.auth.verify(id)
        #expect(session.readsThroughAgent && asker.requests.withLock { $0.count } == 2)
        try session.auth.verify(id)
        #expect(asker.requests.withLock { $0.count } == 3)
        try session.set("after/verify", string: "through the agent")
        #expect(try agent.cli("get", "after/verify", "--no-input").out == "through the agent")
        // Removing the method changes the file: the agent forgets the store, and the session's
        // records, which still go through it, say so.
        try session.auth.remove(id)
        #expect(session.readsThroughAgent)
        #expect(keybayError { _ = try session.get("service/token") }?.code == .authenticationRequired)
    }

    @Test func theCAPIReadsThroughTheAgent() throws {
        let agent = AgentSandbox()
        try agent.makeProtectedStore()
        var environment = agent.environment
        environment["KEYBAY_LIBRARY"] = buildDirectory + "/libkeybay.so"
        environment["PYTHONPATH"] = packageDirectory + "/bindings/python"
        let refusal = "import keybay, sys\ntry:\n keybay.open(sys.argv[1])\nexcept keybay.Error as e:\n print(e.code)"
        let before = try run("/usr/bin/python3", ["-c", refusal, agent.box.app], environment: environment)
        #expect(before.out == "interaction-required\n", "\(before.out) \(before.stderr)")
        #expect(try agent.unlock("1h").status == 0)
        let script = """
            import keybay, sys
            with keybay.open(sys.argv[1]) as store:
                store.set("from/python", b"py")
                print(store.get("service/token").decode(), store.get("from/python").decode(), keybay.status(sys.argv[1])["unlocked"])
            """
        let r = try run("/usr/bin/python3", ["-c", script, agent.box.app], environment: environment)
        #expect(r.status == 0 && r.out == "s3cret py True\n", "\(r.out) \(r.stderr)")
        #expect(try agent.cli("lock").status == 0)
        let locked = try run("/usr/bin/python3", ["-c", refusal, agent.box.app], environment: environment)
        #expect(locked.out == before.out, "\(locked.out) \(locked.stderr)")
    }
}
