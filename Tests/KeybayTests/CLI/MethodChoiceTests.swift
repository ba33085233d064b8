// SPDX-License-Identifier: Apache-2.0
import Foundation
import Glibc
import Testing

/// The CLI on the library's open policy: a store with a passphrase ("laptop") and a recovery key
/// ("Paper key") opens with the one chosen on the terminal, and the question for its secret names
/// that method's label and id; without a way to choose, the error lists both methods.
@Suite struct MethodChoiceTests {
    /// The store, and the ids of its passphrase and recovery key, and the key.
    static func twoMethods(_ box: Sandbox) throws -> (passphrase: String, recovery: String, key: String) {
        try PinentryTests.protectedStore(box)
        let enrolled = try box.cli(["enroll", "recovery", "--label", "Paper key", "--json"], secret: PinentryTests.passphrase, option: "--passphrase-fd")
        try #require(enrolled.status == 0, "\(enrolled.stderr)")
        let object = try #require(try JSONSerialization.jsonObject(with: Data(enrolled.stdout)) as? [String: Any])
        let key = try #require(object["recoveryKey"] as? String)
        let ids = try methodIDs(box)
        try #require(ids.count == 2)
        return (ids[0], ids[1], key)
    }

    @Test func theMethodChosenOnTheTerminalOpensAndItsQuestionNamesIt() throws {
        let box = Sandbox(app: "com.example.choice")
        let (passphrase, recovery, key) = try Self.twoMethods(box)
        let pinentry = try ScriptedPinentry(box, answers: [key])
        let r = try run("/usr/bin/python3", [packageDirectory + "/Tests/pty/choose_method.py", "2", cliPath, "get", "k"],
                        environment: pinentry.environment(box))
        let lines = r.out.split(separator: "\n", omittingEmptySubsequences: false)
        #expect(lines.first == "0", "\(r.out) \(r.stderr)")
        #expect(r.out.contains("laptop") && r.out.contains("Paper key") && r.out.contains("v"), "\(r.out)")
        let runs = pinentry.runs
        try #require(runs.count == 1, "\(runs)")
        let description = try #require(ScriptedPinentry.argument("SETDESC", in: runs[0].lines))
        #expect(description.contains("“Paper key” (\(recovery.prefix(8)))") && description.contains(box.app), "\(description)")
        #expect(!description.contains(String(passphrase.prefix(8))), "\(description)")
    }

    @Test func withoutAWayToChooseTheErrorListsTheMethods() throws {
        let box = Sandbox(app: "com.example.no-choice")
        let (passphrase, recovery, _) = try Self.twoMethods(box)
        let r = try box.cli("get", "k", "--no-input", "--json")
        #expect(r.status == 4, "\(r.stderr)")
        let object = try #require(try JSONSerialization.jsonObject(with: Data(r.stdout)) as? [String: Any])
        let error = try #require(object["error"] as? [String: Any])
        let methods = try #require(error["methods"] as? [[String: Any]])
        #expect(error["code"] as? String == "interaction-required")
        #expect(methods.compactMap { $0["id"] as? String } == [passphrase, recovery])
        #expect(methods.compactMap { $0["label"] as? String } == ["laptop", "Paper key"])
    }
}
