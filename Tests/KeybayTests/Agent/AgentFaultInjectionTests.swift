// SPDX-License-Identifier: Apache-2.0
import Foundation
import Glibc
import Testing

/// Record writes through the agent with one system call failing in the agent at each of its
/// calls in turn (`strace -e inject` on `keybay-methods agent`): fsync, fdatasync, the renames,
/// linkat, pread64 and write, and sendto (its replies), with EIO and (where a call can run out of
/// space) ENOSPC. The agent
/// is started, strace attached to it once it listens, `unlock` hands it a passphrase store, and the CLI then writes with
/// `--no-input` (so it can only write through the agent). After each run, read without the agent
/// with the passphrase: the store opens, the record written before is there, and the change is
/// on disk exactly when the CLI printed its result; an error that says the agent did not confirm
/// the write (reason `agent-unconfirmed`) is the one case where either may be true.
@Suite struct AgentFaultInjectionTests {
    struct Scenario: Sendable {
        let name: String
        let command: [String]
        /// Whether the change is on disk, read back with the passphrase (nil: the store did not open).
        let applied: @Sendable (AgentSandbox) throws -> Bool?
    }

    /// The store's calls, and the agent's replies (a lost reply is a write nobody confirmed).
    static let calls = FaultInjectionTests.calls + ["sendto"]

    static let scenarios = [
        Scenario(name: "set through the agent", command: ["set", "c", "3", "--json", "--no-input"]) { agent in
            guard try recordWithPassphrase(agent, "a") == "1" else { return nil }
            return try recordWithPassphrase(agent, "c") == "3"
        },
        Scenario(name: "rm through the agent", command: ["rm", "a", "--json", "--no-input"]) { agent in
            guard try recordWithPassphrase(agent, "b") == "2" else { return nil }
            return try recordWithPassphrase(agent, "a") == nil
        },
    ]

    @Test(arguments: scenarios.indices)
    func everyFailingCallInTheAgentLeavesWhatTheCommandSaid(_ index: Int) throws {
        let scenario = Self.scenarios[index]
        let template = AgentSandbox()
        try template.makeProtectedStore([("a", "1"), ("b", "2")])
        // The agent's calls when nothing fails: from its start, through the hand-off and the write.
        let made = try Self.tracedRun(template, scenario.command, strace: ["-y", "-e", "trace=" + Self.calls.joined(separator: ",")],
                                      trace: true)
        #expect(made.outcome.status == 0, "\(scenario.name), undisturbed: \(made.outcome.stderr)")
        #expect(made.calls["fsync", default: []].count > 0 && made.calls["renameat", default: []].count > 0
                && made.calls["sendto", default: []].count >= 2, "strace saw \(made.calls)")
        var runs = 0
        var unconfirmed = 0
        for call in Self.calls {
            for errno in FaultInjectionTests.noSpaceCalls.contains(call) ? ["EIO", "ENOSPC"] : ["EIO"] {
                for (n, targets) in FaultInjectionTests.invocations(made.calls[call, default: []])
                where !targets.allSatisfy(FaultInjectionTests.isSharedLibrary) {
                    let target = targets.joined(separator: ", ")
                    let run = try Self.tracedRun(template, scenario.command,
                                                 strace: ["-e", "trace=\(call)", "-e", "inject=\(call):error=\(errno):when=\(n)"])
                    let r = run.outcome
                    let what = "\(scenario.name), agent's \(call) #\(n) on \(target) failing with \(errno): exit \(r.status), \(r.stderr)"
                    #expect(!r.signalled && [0, 1, 4].contains(r.status), "\(what)")
                    let printed = FaultInjectionTests.printedObject(r) != nil
                    if r.status == 0 { #expect(printed, "\(what)") }
                    let applied = try scenario.applied(run.box)
                    #expect(applied != nil, "\(what): the store does not open with the passphrase, or lost a record")
                    if r.error?.reason == "agent-unconfirmed" {
                        #expect(r.status == 1 && r.error?.code == "io", "\(what)")
                        unconfirmed += 1
                    } else if let applied {
                        #expect(applied == printed, "\(what): printed \(printed), on disk \(applied)")
                    }
                    runs += 1
                }
            }
        }
        #expect(runs >= 10, "only \(runs) runs")
        // The write's own reply lost: the CLI cannot know, and says so.
        #expect(unconfirmed >= 1, "no run lost the write's reply")
        print("\(scenario.name): \(runs) runs")
    }

    struct TracedRun {
        let box: AgentSandbox
        let outcome: RunResult
        let calls: [String: [FaultInjectionTests.TracedCall]]
    }

    /// On a copy of `template`: an agent started, and once it listens `strace` attached to it
    /// (`-p`, following the threads it starts for requests) with `strace` arguments; `unlock`
    /// (its outcome not required: a failure there leaves the write nobody to go through), the
    /// command, then the agent stopped. With `trace`, the calls strace saw. strace counts
    /// `when=N` per thread: attached after the start, it counts no call of the dynamic loader,
    /// whose reads in the main thread would otherwise share their numbers with the workers' reads
    /// of the store.
    static func tracedRun(_ template: AgentSandbox, _ command: [String], strace: [String], trace: Bool = false) throws -> TracedRun {
        let agent = AgentSandbox(app: template.box.app)
        for (from, to) in [(template.box.dataHome, agent.box.dataHome), (template.box.stateHome, agent.box.stateHome)] {
            #expect(try run("/bin/cp", ["-a", from, to], environment: agent.box.environment).status == 0)
        }
        let traceFile = agent.box.root + "/trace"
        let agentPID = spawnChild(cliPath, ["agent"], environment: withoutLeakChecks(agent.environment), stdinPath: "/dev/null")
        var tracer: pid_t = 0
        // Stops the agent, then reaps it and strace (which ends with it) within a bound; killed if
        // they do not end, so a run never hangs. Reaped exactly once: no pid is signalled after.
        var reaped = false
        func end() {
            guard !reaped else { return }
            agent.stop()
            for pid in [agentPID, tracer] where pid > 0 {
                if !waitUntilGone(pid) {
                    Issue.record("\(pid == tracer ? "strace" : "the agent") did not end within 10 s")
                    kill(pid, SIGKILL)
                }
                _ = waitChild(pid)
            }
            reaped = true
        }
        defer { end() }
        #expect(waitForFile(agent.socketPath), "the agent bound no socket")
        tracer = spawnChild("/usr/bin/strace", ["-f", "-qq", "-o", trace ? traceFile : "/dev/null"] + strace + ["-p", "\(agentPID)"],
                            environment: agent.environment, stdinPath: "/dev/null")
        #expect(waitUntilTraced(agentPID, by: tracer), "strace did not attach to the agent within 10 s")
        _ = try agent.unlock("1h")
        let outcome = try run(cliPath, command, environment: agent.environment)
        end()
        let calls = trace ? FaultInjectionTests.parseTrace(readBytes(traceFile) ?? []) : [:]
        return TracedRun(box: agent, outcome: outcome, calls: calls)
    }
}

/// Whether `tracer` traces `pid` (its `TracerPid`) before `seconds` pass.
private func waitUntilTraced(_ pid: pid_t, by tracer: pid_t, seconds: Double = 10) -> Bool {
    let deadline = Date().addingTimeInterval(seconds)
    while Date() < deadline {
        let status = String(decoding: readBytes("/proc/\(pid)/status") ?? [], as: UTF8.self)
        if status.split(separator: "\n").contains("TracerPid:\t\(tracer)") { return true }
        usleep(10_000)
    }
    return false
}

/// The value of `key`, read without the agent (no runtime directory) with the passphrase; nil
/// when the store does not open or has no such record.
private func recordWithPassphrase(_ agent: AgentSandbox, _ key: String) throws -> String? {
    let r = try agent.box.cli(["get", key], secret: AgentSandbox.passphrase, option: "--passphrase-fd",
                              environment: agent.box.environment)
    return r.status == 0 ? r.out : nil
}
