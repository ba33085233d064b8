// SPDX-License-Identifier: Apache-2.0
import Foundation
import Glibc
import Keybay
import Testing

/// Two-phase enrollment through the public API: `prepare` runs the ceremony and stores nothing;
/// `commit` stores, `discard` drops, `takeBack` undoes a commit whose shown secret could not be
/// handed over (an added method removed, a replaced one put back, a created store removed).
@Suite struct PreparedEnrollmentTests {
    static func text(_ secret: KeybayShownSecret?) -> String {
        secret.map { $0.text.withUnsafeBytes { String(decoding: $0, as: UTF8.self) } } ?? ""
    }

    @Test func aPreparedRecoveryKeyIsStoredOnlyByCommitAndOpensTheStore() throws {
        let box = Sandbox()
        let config = try box.configuration()
        let session = try KeybayStore.open(config)
        try session.set("k", string: "v")
        let before = readBytes(box.storePath)
        let prepared = try session.auth.prepare(plugin: "recovery")
        let key = Self.text(prepared.shownSecret)
        #expect(prepared.shownSecret?.kind == .recoveryKey && key.count == 62, "\(key.count)")
        #expect(readBytes(box.storePath) == before, "prepare wrote to the store")
        #expect(try session.auth.list().isEmpty)
        try prepared.commit()
        #expect(try session.auth.list().map(\.id) == [prepared.method.id])
        let again = try KeybayStore.open(config, method: prepared.method.id, interaction: ScriptedInteraction([key]))
        #expect(try again.getString("k") == "v")
        #expect(keybayError { try prepared.commit() }?.code == .invalidArgument, "a second commit")
    }

    @Test func aDiscardedEnrollmentStoresNothing() throws {
        let box = Sandbox()
        let session = try KeybayStore.open(try box.configuration())
        try session.set("k", string: "v")
        let before = readBytes(box.storePath)
        let prepared = try session.auth.prepare(plugin: "recovery")
        prepared.discard()
        #expect(keybayError { try prepared.commit() }?.code == .closed)
        let methods = try session.auth.list()
        #expect(readBytes(box.storePath) == before && methods.isEmpty)
    }

    /// What a host does when it cannot hand the shown secret over: each kind of enrollment is
    /// taken back to what was there before.
    @Test func aSecretThatCouldNotBeHandedOverIsTakenBack() throws {
        let box = Sandbox()
        let config = try box.configuration()
        // Added, then taken back: platform-only again.
        let session = try KeybayStore.open(config)
        try session.set("k", string: "v")
        let added = try session.auth.prepare(plugin: "recovery")
        try added.commit()
        try added.takeBack()
        let afterAdd = try (session.auth.list(), KeybayStore.status(config).state)
        #expect(afterAdd.0.isEmpty && afterAdd.1 == .platformOnly)
        // Replaced, then taken back: the old key opens again.
        let first = try session.auth.prepare(plugin: "recovery")
        try first.commit()
        let replacement = try session.auth.prepare(replacing: first.method.id)
        try replacement.commit()
        try replacement.takeBack()
        #expect(try session.auth.list().map(\.id) == [first.method.id])
        let reopened = try KeybayStore.open(config, method: first.method.id, interaction: ScriptedInteraction([Self.text(first.shownSecret)]))
        #expect(try reopened.getString("k") == "v")
        // Created on a fresh home, then taken back: nothing there.
        let fresh = Sandbox()
        let freshConfig = try fresh.configuration()
        let created = try KeybayStore.prepare(freshConfig, enrolling: "recovery")
        #expect(try KeybayStore.status(freshConfig).state == .absent, "prepare created something")
        let store = try created.commit()
        #expect(try store.auth.list().map(\.id) == [created.method.id])
        try created.takeBack()
        #expect(try KeybayStore.status(freshConfig).state == .absent)
    }

    /// The one-phase `add` commits, then hands the shown secret to the host: a host that cannot
    /// show one gets no method (it is taken back), and its records stay.
    @Test func aHostThatCannotShowASecretGetsNoMethod() throws {
        let box = Sandbox()
        let session = try KeybayStore.open(try box.configuration())
        try session.set("k", string: "v")
        #expect(keybayError { try session.auth.add(plugin: "recovery") }?.code == .interactionRequired)
        #expect(try session.auth.list().isEmpty && session.getString("k") == "v")
        #expect(try KeybayStore.status(box.configuration()).state == .platformOnly)
    }

    /// A commit through the library with each of its fsyncs failing in turn (strace's inject, in
    /// a process of its own: `keybay-test-writer prepare-recovery`). What `commit` said must be
    /// what is on disk: committed, or unconfirmed (`tookEffect`: the directory's fsync after the
    /// rename failed), and the shown key opens the store; failed, and the store is as it was.
    /// At least one run must be unconfirmed, or the path after the rename went untested.
    @Test func aCommitWithAFailingFsyncSaysWhatIsOnDisk() throws {
        let template = Sandbox()
        try KeybayStore.open(template.configuration()).set("a", string: "1")
        let writer = buildDirectory + "/keybay-test-writer"
        let undisturbed = try FaultInjectionTests.copy(template)
        let trace = template.root + "/trace"
        let counted = try run("/usr/bin/strace", ["-f", "-qq", "-o", trace, "-e", "trace=fsync", writer, undisturbed.app, "prepare-recovery"],
                              environment: undisturbed.environment)
        #expect(counted.status == 0 && counted.out.hasPrefix("wcommitted "), "undisturbed: \(counted.out) \(counted.stderr)")
        let fsyncs = String(decoding: readBytes(trace) ?? [], as: UTF8.self).split(separator: "\n").filter { $0.contains("fsync(") }.count
        #expect(fsyncs >= 2, "\(fsyncs) fsyncs")
        var outcomes: [String] = []
        for n in 1...fsyncs {
            let box = try FaultInjectionTests.copy(template)
            let r = try run("/usr/bin/strace", ["-f", "-qq", "-o", "/dev/null", "-e", "trace=fsync", "-e", "inject=fsync:error=EIO:when=\(n)",
                                                writer, box.app, "prepare-recovery"], environment: box.environment)
            // After the "w" the writer prints as the write begins.
            let said = r.out.dropFirst().split(separator: " ").map(String.init)
            outcomes.append(said.first ?? "")
            let config = try box.configuration()
            switch said.first {
            case "committed", "unconfirmed":
                let opened = try KeybayStore.open(config, method: said[1], interaction: ScriptedInteraction([said[2].trimmingCharacters(in: .newlines)]))
                #expect(try opened.getString("a") == "1", "fsync \(n): \(r.out)")
            case "failed":
                let status = try KeybayStore.status(config)
                #expect(status.state == .platformOnly && status.methods.isEmpty, "fsync \(n): \(r.out) left \(status.state)")
                #expect(try KeybayStore.open(config).getString("a") == "1", "fsync \(n)")
            default:
                Issue.record("fsync \(n): exit \(r.status), \(r.out) \(r.stderr)")
            }
        }
        #expect(outcomes.contains("unconfirmed") && outcomes.contains("failed"), "\(outcomes)")
    }
}
