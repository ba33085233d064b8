// SPDX-License-Identifier: Apache-2.0
import Foundation
import Glibc
import Testing
@testable import Keybay

/// The crash-kill harness for writes through the agent (ProcessTests has it for a process's own
/// writes): a `set` goes through the agent, which is SIGKILLed at a random moment of it. The
/// store must then open (without the agent, with the passphrase) holding the value from before
/// or the one written, the written one when the client was told the write was done. A write
/// through the agent is the store's own durable commit, in another process.
@Suite struct AgentCrashTests {
    @Test func anAgentKilledMidWriteNeverTearsTheStore() throws {
        let runs = ProcessInfo.processInfo.environment["KEYBAY_CRASH_RUNS"].flatMap(Int.init) ?? 20
        let agent = AgentSandbox()
        try agent.makeProtectedStore([("big", "start")])
        var current = Array("start".utf8)
        let valuePath = agent.box.root + "/value"
        // How long one write through the agent takes, to spread the kills over it.
        #expect(try agent.unlock("0").status == 0)
        writeBytes(valuePath, [UInt8](repeating: 1, count: 300_000))
        let t0 = Date()
        #expect(waitChild(spawnChild(cliPath, ["set", "big", "--stdin", "--no-input"], environment: agent.environment, stdinPath: valuePath)).succeeded)
        let window = max(0.005, 2 * Date().timeIntervalSince(t0))
        current = [UInt8](repeating: 1, count: 300_000)
        var acknowledged = 0, refused = 0
        for run in 0..<runs {
            if agent.agentPID == nil { #expect(try agent.unlock("0").status == 0) }
            let agentPID = try #require(agent.agentPID)
            let next = [UInt8](repeating: UInt8(truncatingIfNeeded: run + 2), count: 300_000)
            writeBytes(valuePath, next)
            let client = spawnChild(cliPath, ["set", "big", "--stdin", "--no-input"], environment: agent.environment, stdinPath: valuePath)
            usleep(UInt32(Double.random(in: 0..<window) * 1e6))
            kill(agentPID, SIGKILL)
            let done = waitChild(client).succeeded
            #expect(waitUntilGone(agentPID))
            let read = try agent.withPassphrase(["get", "big"])
            #expect(read.status == 0, "run \(run): the store does not open after the kill: \(read.stderr)")
            // Compared outside #expect: a failed expectation on two 300 KB arrays would be diffed.
            let isNext = read.stdout == next, isCurrent = read.stdout == current
            if done {
                acknowledged += 1
                #expect(isNext, "run \(run): an acknowledged write is gone")
            } else {
                refused += 1
                #expect(isNext || isCurrent, "run \(run): neither the old value nor the new one")
            }
            if isNext { current = next }
        }
        #expect(acknowledged + refused == runs)
    }
}
