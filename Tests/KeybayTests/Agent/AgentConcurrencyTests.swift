// SPDX-License-Identifier: Apache-2.0
import Foundation
import Glibc
import Synchronization
import Testing
@testable import Keybay

/// The agent serves connections at once: a client that connects and says nothing, stops in the
/// middle of its request, or does not read its reply, holds nobody else; writes to one store from many clients all land,
/// each visible to a read sent after it was acknowledged; and `lock` racing reads never hands a
/// reader freed keys. The only bounds are the client's own (1 s for a read, 10 s for a write):
/// a reply later than that is no reply, which the assertions count.
@Suite struct AgentConcurrencyTests {
    /// A running agent holding the sandbox's protected store, and the store's name in it.
    static func unlocked(_ agent: AgentSandbox) throws -> (client: AgentClient, store: AgentStoreRef) {
        try agent.makeProtectedStore()
        let r = try agent.unlock("1h")
        guard r.status == 0 else { throw KeybayTestFailure("unlock: \(r.stderr)") }
        let config = try agent.configuration()
        return (AgentClient(socketPath: agent.socketPath), config.agentStore)
    }

    /// Runs `body(i)` for i in 0..<count, each on a thread of its own, all released at once.
    static func together(_ count: Int, _ body: @escaping @Sendable (Int) -> Void) {
        let start = DispatchSemaphore(value: 0), done = DispatchGroup()
        for i in 0..<count {
            done.enter()
            Thread.detachNewThread {
                start.wait()
                body(i)
                done.leave()
            }
        }
        for _ in 0..<count { start.signal() }
        done.wait()
    }

    @Test func aSilentClientDelaysNoneOfTwentyOthers() throws {
        let agent = AgentSandbox()
        let (client, store) = try Self.unlocked(agent)
        try AgentRecords(client: client, store: store).set("big", value: [UInt8](repeating: 0x5a, count: 1 << 20))
        // One connection says nothing; another stops after its length and two bytes of the body;
        // a third asks for a 1 MiB value and reads none of it (more than a socket's buffer).
        let silent = try AgentSocket.connect(agent.socketPath, timeout: 1)
        let stalled = try AgentSocket.connect(agent.socketPath, timeout: 1)
        let unread = try AgentSocket.connect(agent.socketPath, timeout: 1)
        defer { close(silent); close(stalled); close(unread) }
        #expect(AgentSocket.send(stalled, Array(AgentRequest.record(store, .get(key: "service/token")).frame.prefix(6)), before: AgentSocket.monotonicNow() + 1))
        #expect(AgentSocket.send(unread, AgentRequest.record(store, .get(key: "big")).frame, before: AgentSocket.monotonicNow() + 1))
        let answers = Mutex<[String]>([])
        Self.together(20) { _ in
            let outcome: String
            switch client.ask(.record(store, .get(key: "service/token"))) {
            case .reply(.answer(.value(let v?))): outcome = String(decoding: v, as: UTF8.self)
            case .reply(let other): outcome = "reply 0x\(String(other.type, radix: 16))"
            case .unreachable(let why): outcome = "unreachable: \(why.reason)"
            case .unanswered(let why): outcome = "unanswered: \(why)"
            }
            answers.withLock { $0.append(outcome) }
        }
        let got = answers.withLock { $0 }
        #expect(got == Array(repeating: "s3cret", count: 20), "\(got)")
        // The agent drops the first two at their bound: each reads the end of the stream, no reply.
        for fd in [silent, stalled] { #expect(AgentSocket.receive(fd, before: AgentSocket.monotonicNow() + 5) == nil) }
    }

    /// A write held up (another process holds its store's lock: /proc/locks shows the agent
    /// waiting) delays no request on another store: 20 reads of a second store the agent holds
    /// all get their value within their bound; once the lock is let go the write lands.
    @Test func aWriteWaitingForItsStoresLockDelaysNoOtherStore() throws {
        let agent = AgentSandbox()
        let (client, store) = try Self.unlocked(agent)
        let other = "com.example.other"
        let otherEnvironment = agent.environment.merging(["KEYBAY_APP_ID": other]) { $1 }
        #expect(try run(cliPath, ["set", "other/token", "b"], environment: otherEnvironment).status == 0)
        for step in [["enroll", "passphrase"] + fastPassphraseFlags, ["unlock", "--for", "1h"]] {
            let r = try agent.box.cli(step, secret: AgentSandbox.passphrase, option: "--passphrase-fd", environment: otherEnvironment)
            #expect(r.status == 0, "\(step): \(r.stderr)")
        }
        let otherStore = try agent.box.configuration(app: other).agentStore
        let write = try HeldUpWrite(agent, AgentRecords(client: client, store: store), key: "held/up", value: "late")
        let answers = Mutex<[String]>([])
        Self.together(20) { _ in
            let outcome = (try? AgentRecords(client: client, store: otherStore).get("other/token")).map { $0.map { String(decoding: $0, as: UTF8.self) } ?? "nil" }
            answers.withLock { $0.append(outcome ?? "failed") }
        }
        #expect(answers.withLock { $0 } == Array(repeating: "b", count: 20), "\(answers.withLock { $0 })")
        #expect(write.outcome == nil, "the write did not wait for the lock")
        #expect(write.letGo() == "written")
        #expect(try AgentRecords(client: client, store: store).get("held/up") == Array("late".utf8))
    }

    /// A write in progress when the agent is told to end (SIGTERM while it waits for the store's
    /// lock) is still done and answered: the agent stops taking requests (a query goes
    /// unanswered), and once the lock is let go the client is told the write is done.
    @Test func aWriteInProgressWhenTheAgentEndsIsAnswered() throws {
        let agent = AgentSandbox()
        let (client, store) = try Self.unlocked(agent)
        let pid = try #require(agent.agentPID)
        let write = try HeldUpWrite(agent, AgentRecords(client: client, store: store), key: "at/the/end", value: "done")
        #expect(kill(pid, SIGTERM) == 0)
        // The main loop has ended once a query is no longer answered (each try costs its 1 s bound).
        let ended = (0..<5).contains { _ in client.holding(store) == nil }
        #expect(ended, "the agent still answers after SIGTERM")
        #expect(write.letGo() == "written")
        #expect(waitUntilGone(pid))
        let r = try agent.withPassphrase(["get", "at/the/end"])
        #expect(r.status == 0 && r.out == "done", "\(r.status) \(r.stderr)")
    }

    /// A client that hangs up while its write waits for the store's lock costs the agent no CPU:
    /// over 2 s of that wait the agent uses under 0.5 s of CPU (idle, it uses none; polling the
    /// hung-up connection over and over took all 2 s of a core). The bound is generous on
    /// purpose: the agent's own work in that time is a sweep a second.
    @Test func aClientThatHangsUpDuringItsWriteCostsNoCPU() throws {
        let agent = AgentSandbox()
        let (_, store) = try Self.unlocked(agent)
        let pid = try #require(agent.agentPID)
        let lock = open(agent.box.lockPath, O_RDONLY | O_CLOEXEC)
        try #require(lock >= 0, "the lock file \(agent.box.lockPath)")
        defer { close(lock) }
        #expect(flock(lock, LOCK_SH) == 0)
        let client = try AgentSocket.connect(agent.socketPath, timeout: 1)
        #expect(AgentSocket.send(client, AgentRequest.record(store, .set(key: "hung/up", value: [1])).frame, before: AgentSocket.monotonicNow() + 1))
        let waiting = (0..<1000).contains { _ in MutationGuardTests.waitsForExclusiveFlock(pid) || usleep(10_000) != 0 }
        #expect(waiting, "the agent never waited for the store's lock")
        close(client)
        let before = try Self.cpuSeconds(pid)
        usleep(2_000_000)
        let used = try Self.cpuSeconds(pid) - before
        #expect(used < 0.5, "the agent used \(used) s of CPU in 2 s")
        #expect(flock(lock, LOCK_UN) == 0)
    }

    /// The user and system time `pid` has used (`/proc/PID/stat`, fields 14 and 15).
    static func cpuSeconds(_ pid: pid_t) throws -> Double {
        let stat = String(decoding: try #require(readBytes("/proc/\(pid)/stat")), as: UTF8.self)
        let fields = try #require(stat.split(separator: ")").last).split(separator: " ")
        let ticks = try #require(Double(fields[11])) + (try #require(Double(fields[12])))
        return ticks / Double(sysconf(Int32(_SC_CLK_TCK)))
    }

    @Test func concurrentWritesAllLandAndEachIsReadBackAfterItsAcknowledgement() throws {
        let agent = AgentSandbox()
        let (client, store) = try Self.unlocked(agent)
        let records = AgentRecords(client: client, store: store)
        let failures = Mutex<[String]>([])
        Self.together(10) { i in
            do {
                try records.set("w/\(i)", value: Array("value \(i)".utf8))
                let back = try records.get("w/\(i)")
                if back != Array("value \(i)".utf8) { failures.withLock { $0.append("w/\(i) read back \(String(describing: back))") } }
            } catch {
                failures.withLock { $0.append("w/\(i): \(error)") }
            }
        }
        #expect(failures.withLock { $0 }.isEmpty, "\(failures.withLock { $0 })")
        #expect(try records.keys() == ["service/token"] + (0..<10).map { "w/\($0)" }.sorted())
        // The store on disk has them too: read it without the agent.
        let off = try { var c = try agent.configuration(); c.agentSocket = nil; return c }()
        let id = try #require(try KeybayStore.status(off).methods.first?.id)
        let session = try KeybayStore.open(off, method: id, interaction: ScriptedInteraction([AgentSandbox.passphrase]))
        #expect(try session.getMany((0..<10).map { "w/\($0)" }).count == 10)
    }

    /// `lock` and `unlock` of the store over and over while four clients read it: every read is
    /// the value or "not unlocked", the agent lives through it, and after the last `lock` nothing
    /// is served.
    @Test func lockRacingReadsNeverServesFreedKeys() throws {
        let agent = AgentSandbox()
        let (client, store) = try Self.unlocked(agent)
        let pid = try #require(agent.agentPID)
        var off = try agent.configuration()
        off.agentSocket = nil
        let id = try #require(try KeybayStore.status(off).methods.first?.id)
        let handoff = try KeybayStore.open(off, method: id, interaction: ScriptedInteraction([AgentSandbox.passphrase])).handoff(seconds: 0)
        let stop = Atomic<Bool>(false)
        let outcomes = Mutex<[String: Int]>([:])
        let readers = DispatchGroup()
        for _ in 0..<4 {
            readers.enter()
            Thread.detachNewThread {
                let records = AgentRecords(client: client, store: store)
                while !stop.load(ordering: .relaxed) {
                    let outcome: String
                    do { outcome = try records.get("service/token").map { String(decoding: $0, as: UTF8.self) } ?? "nil" }
                    catch let e as KeybayError { outcome = e.code.rawValue }
                    catch { outcome = "\(error)" }
                    outcomes.withLock { $0[outcome, default: 0] += 1 }
                }
                readers.leave()
            }
        }
        var rounds = 0
        while rounds < 200, client.forget(store) != nil, (try? client.hold(handoff)) != nil { rounds += 1 }
        #expect(rounds == 200, "the agent stopped answering after \(rounds) rounds")
        stop.store(true, ordering: .relaxed)
        readers.wait()
        let seen = outcomes.withLock { $0 }
        #expect(Set(seen.keys).isSubset(of: ["s3cret", "authentication-required"]) && seen["s3cret", default: 0] > 0, "\(seen)")
        #expect(agent.agentPID == pid)
        #expect(client.forget(store) == 1)
        #expect(keybayError { _ = try AgentRecords(client: client, store: store).get("service/token") }?.code == .authenticationRequired)
    }
}

/// A `set` through the agent held up by this process holding the store's lock shared: started on
/// a thread of its own once the lock is taken, and waited for until /proc/locks shows the agent
/// waiting for the lock. `letGo()` lets go of the lock and waits for the write's outcome.
final class HeldUpWrite: Sendable {
    private let lock: Int32
    private let written = Mutex<String?>(nil)
    private let writer = DispatchGroup()

    init(_ agent: AgentSandbox, _ records: AgentRecords, key: String, value: String) throws {
        let pid = try #require(agent.agentPID)
        lock = open(agent.box.lockPath, O_RDONLY | O_CLOEXEC)
        try #require(lock >= 0, "the lock file \(agent.box.lockPath)")
        #expect(flock(lock, LOCK_SH) == 0)
        writer.enter()
        Thread.detachNewThread { [self] in
            do {
                try records.set(key, value: Array(value.utf8))
                written.withLock { $0 = "written" }
            } catch let e as KeybayError {
                written.withLock { $0 = "\(e.code.rawValue) \(e.reason ?? "")" }
            } catch {
                written.withLock { $0 = "\(error)" }
            }
            writer.leave()
        }
        let waiting = (0..<1000).contains { _ in MutationGuardTests.waitsForExclusiveFlock(pid) || usleep(10_000) != 0 }
        #expect(waiting, "the agent never waited for the store's lock")
    }

    deinit { close(lock) }

    /// "written", or the error's code and reason; nil while the write waits.
    var outcome: String? { written.withLock { $0 } }

    /// Lets go of the lock; the write's outcome once it is over.
    func letGo() -> String? {
        #expect(flock(lock, LOCK_UN) == 0)
        writer.wait()
        return outcome
    }
}
