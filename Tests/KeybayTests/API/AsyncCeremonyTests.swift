// SPDX-License-Identifier: Apache-2.0
import CKeybayPlugin
import Foundation
import Glibc
import Synchronization
import Testing
@testable import Keybay

/// The async entry points run ceremonies on threads of their own: a plugin waiting for the user
/// holds no cooperative thread, and cancelling the task ends the wait.
///
/// A waiting ceremony holds its plugin's call lock until a task on the cooperative pool answers
/// or cancels it. These tests therefore use `test-ceremony`, which no other test loads (a
/// synchronous test of another suite waiting for the same lock would hold a cooperative thread,
/// and two of them all of a 2-core machine's), and run one at a time.
@Suite(.serialized) struct AsyncCeremonyTests {
    /// Answers "1234" once released; counts who is waiting. Released by a task, or (only if no
    /// task could run) by a watchdog thread. (The plugin is called by one thread at a time, so
    /// the other opens wait for it meanwhile: on their own threads, or, if the async forms ran
    /// ceremonies inline, on the cooperative threads the answering task needs.)
    final class HeldAnswer: KeybayInteraction, Sendable {
        let waiting = Atomic<Int>(0)
        /// 0: held; 1: released by a task; 2: released by the watchdog.
        let releasedBy = Atomic<Int>(0)
        func askSecret(_ request: KeybaySecretRequest, into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
            waiting.add(1, ordering: .sequentiallyConsistent)
            while releasedBy.load(ordering: .sequentiallyConsistent) == 0 { usleep(1000) }
            buffer.copyBytes(from: Array("1234".utf8))
            return 4
        }
    }

    static func protectedStore(_ box: Sandbox, pin: String) throws -> (KeybayConfiguration, KeybayMethod) {
        let config = try box.configuration()
        let session = try KeybayStore.open(config, interaction: ScriptedInteraction([pin, pin]))
        try session.set("k", string: "v")
        let method = try session.auth.add(plugin: "test-ceremony")
        session.close()
        return (config, method)
    }

    /// Other suites' synchronous tests share the cooperative pool and may hold its threads for a
    /// long time (minutes under a sanitizer): the answering task may have to wait for them, but
    /// it gets a thread in the end unless the opens hold them all. The watchdog, which answers
    /// only when the task never could, therefore waits five minutes.
    @Test func moreWaitingOpensThanCoresLeaveThePoolFreeForTheTaskThatAnswers() async throws {
        let box = Sandbox()
        let (config, method) = try Self.protectedStore(box, pin: "1234")
        let answer = HeldAnswer()
        Thread.detachNewThread {
            for _ in 0..<300_000 where answer.releasedBy.load(ordering: .sequentiallyConsistent) == 0 { usleep(1000) }
            _ = answer.releasedBy.compareExchange(expected: 0, desired: 2, ordering: .sequentiallyConsistent)
        }
        let opens = ProcessInfo.processInfo.activeProcessorCount + 2
        let values = try await withThrowingTaskGroup(of: String?.self) { group in
            for _ in 0..<opens {
                group.addTask {
                    let session = try await KeybayStore.open(config, method: method.id, interaction: answer)
                    defer { session.close() }
                    return try session.getString("k")
                }
            }
            group.addTask {
                while answer.waiting.load(ordering: .sequentiallyConsistent) == 0 { try await Task.sleep(nanoseconds: 1_000_000) }
                _ = answer.releasedBy.compareExchange(expected: 0, desired: 1, ordering: .sequentiallyConsistent)
                return nil
            }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        let releasedBy = answer.releasedBy.load(ordering: .sequentiallyConsistent)
        #expect(releasedBy == 1, "the answering task never ran while the opens waited")
        #expect(values.compactMap { $0 } == Array(repeating: "v", count: opens))
    }

    /// Gives "wait-for-cancel" (the plugin then polls is_cancelled) and notes that it was asked.
    final class WaitForCancel: KeybayInteraction, Sendable {
        let asked = Atomic<Bool>(false)
        func askSecret(_ request: KeybaySecretRequest, into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
            asked.store(true, ordering: .sequentiallyConsistent)
            let bytes = Array("wait-for-cancel".utf8)
            buffer.copyBytes(from: bytes)
            return bytes.count
        }
    }

    /// Answers "1234", but only once the test has cancelled the task: like a key derivation, the
    /// plugin then finishes without looking at is_cancelled.
    final class AnswerAfterCancel: KeybayInteraction, Sendable {
        let asked = Atomic<Bool>(false)
        let released = Atomic<Bool>(false)
        func askSecret(_ request: KeybaySecretRequest, into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
            asked.store(true, ordering: .sequentiallyConsistent)
            for _ in 0..<300_000 where !released.load(ordering: .sequentiallyConsistent) { usleep(1000) }
            buffer.copyBytes(from: Array("1234".utf8))
            return 4
        }
    }

    /// A cancel that arrives while the method works without polling still ends the open with
    /// `.cancelled` once the plugin returns (it used to give a working session).
    @Test func aCancelWhileTheMethodWorksEndsTheOpenWhenItReturns() async throws {
        let box = Sandbox()
        let (config, method) = try Self.protectedStore(box, pin: "1234")
        let answer = AnswerAfterCancel()
        let task = Task { try await KeybayStore.open(config, method: method.id, interaction: answer) }
        for _ in 0..<300_000 where !answer.asked.load(ordering: .sequentiallyConsistent) { try await Task.sleep(nanoseconds: 1_000_000) }
        task.cancel()
        answer.released.store(true, ordering: .sequentiallyConsistent)
        let e = await keybayError { _ = try await task.value }
        #expect(e?.code == .cancelled, "\(String(describing: e))")
    }

    @Test func cancellingTheTaskEndsThePluginsWaitAndChangesNothing() async throws {
        let box = Sandbox()
        let (config, method) = try Self.protectedStore(box, pin: "wait-for-cancel")
        let before = readBytes(box.storePath)
        let interaction = WaitForCancel()
        let task = Task { try await KeybayStore.open(config, method: method.id, interaction: interaction) }
        for _ in 0..<300_000 where !interaction.asked.load(ordering: .sequentiallyConsistent) { try await Task.sleep(nanoseconds: 1_000_000) }
        let asked = interaction.asked.load(ordering: .sequentiallyConsistent)
        #expect(asked, "the plugin never asked for the PIN")
        task.cancel()
        let e = await keybayError { _ = try await task.value }
        #expect(e?.code == .cancelled, "\(String(describing: e))")
        let unchanged = readBytes(box.storePath) == before
        #expect(unchanged, "a cancelled open writes nothing")
    }
}
