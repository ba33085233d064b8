// SPDX-License-Identifier: Apache-2.0
import Testing
@testable import Keybay

/// Answers from a script, and before question number `at` runs `meanwhile`: what another
/// session does while this one's user is in the middle of a ceremony.
final class InterruptedInteraction: KeybayInteraction, @unchecked Sendable {
    private let script: ScriptedInteraction
    private let at: Int
    private let meanwhile: () throws -> Void

    init(_ answers: [String], at: Int, meanwhile: @escaping () throws -> Void) {
        script = ScriptedInteraction(answers)
        self.at = at
        self.meanwhile = meanwhile
    }

    func askSecret(_ request: KeybaySecretRequest, into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
        if script.askCount + 1 == at { try meanwhile() }
        return try script.askSecret(request, into: buffer)
    }
}

// In the serialized MethodTests suite: the counting plugin's counters are process-wide.
@Suite struct MethodRaceTests {
    /// A method removed by another session while this one enrolls is not written back: the
    /// enrollment fails with a conflict and the other session's change stands.
    @Test func aMethodRemovedDuringAnEnrollmentIsNotBroughtBack() throws {
        let box = Sandbox()
        let config = try MethodTests.config(box)
        let setup = try KeybayStore.open(config, interaction: ScriptedInteraction(["1234", "1234"]))
        try setup.set("k", string: "v")
        let first = try setup.auth.add(plugin: "test-counting", label: "first")
        setup.close()

        let other = try KeybayStore.open(config, method: first.id, interaction: ScriptedInteraction(["1234"]))
        // Question 1 unlocks this session; question 2 is the new method's first PIN entry.
        let removeFirst = InterruptedInteraction(["1234", "5678", "5678"], at: 2) { try other.auth.remove(first.id) }
        let s = try KeybayStore.open(config, method: first.id, interaction: removeFirst)
        let e = keybayError { _ = try s.auth.add(plugin: "test-counting", label: "second") }
        #expect(e?.code == .stateConflict, "\(String(describing: e))")
        let status = try KeybayStore.status(config)
        #expect(status.state == .platformOnly && status.methods.isEmpty, "the removed method came back: \(status.methods)")
        #expect(try KeybayStore.open(config).getString("k") == "v")
    }
}
