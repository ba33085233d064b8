// SPDX-License-Identifier: Apache-2.0
import Foundation
import Glibc
import Testing
@testable import Keybay

/// docs/cli.md's CLI for scripts: `get KEY...` reads several keys from one unlock, `--json` maps
/// them (text or `valueHex`), a missing key exits 3 naming it, and with `--json` every error is
/// also an object on standard output.
@Suite struct ScriptOutputTests {
    static func object(_ r: RunResult) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: Data(r.stdout)) as? [String: Any], "not one JSON object: \(r.out)")
    }

    @Test func severalKeysComeFromOneUnlock() throws {
        let box = Sandbox()
        try PinentryTests.protectedStore(box)
        for (key, value) in [("a", "1"), ("b", "two words"), ("c", "ü\n")] {
            #expect(try box.cli(["set", key, value], secret: PinentryTests.passphrase, option: "--passphrase-fd").status == 0)
        }
        // The passphrase on a descriptor.
        let r = try box.cli(["get", "a", "b", "c", "--json"], secret: PinentryTests.passphrase, option: "--passphrase-fd")
        #expect(r.status == 0, "\(r.stderr)")
        let o = try Self.object(r)
        #expect(o.count == 3 && o["a"] as? String == "1" && o["b"] as? String == "two words" && o["c"] as? String == "ü\n", "\(r.out)")
        #expect(r.out.hasPrefix("{\"a\":") && r.out.hasSuffix("}\n"), "not in argument order, or not one line: \(r.out)")
        // Through a pinentry: one unlock, so one question for the three keys.
        let pinentry = try ScriptedPinentry(box, answers: [PinentryTests.passphrase, PinentryTests.passphrase])
        let asked = try withoutTerminal(["get", "c", "a", "b", "--json"], environment: pinentry.environment(box), box: box)
        #expect(asked.status == 0, "\(asked.stderr)")
        #expect(try Self.object(asked).count == 3, "\(asked.out)")
        #expect(pinentry.runs.count == 1, "\(pinentry.runs.count) questions for one get")
        // Without --json: each value and a newline, in argument order.
        let text = try box.cli(["get", "b", "a"], secret: PinentryTests.passphrase, option: "--passphrase-fd")
        #expect(text.status == 0 && text.out == "two words\n1\n", "\(text.out)")
        // One key keeps its output: the value as it is, and {"key", "value"}.
        #expect(try box.cli(["get", "a"], secret: PinentryTests.passphrase, option: "--passphrase-fd").out == "1")
        #expect(try box.cli(["get", "a", "--json"], secret: PinentryTests.passphrase, option: "--passphrase-fd").out == "{\"key\":\"a\",\"value\":\"1\"}\n")
    }

    @Test func aMissingKeyExitsThreeNamingIt() throws {
        let box = Sandbox()
        #expect(try box.cli("set", "a", "1").status == 0)
        let r = try box.cli("get", "a", "missing", "--json")
        #expect(r.status == 3 && r.stderr.contains("'missing'") && !r.stderr.contains("'a'") && r.stderr.contains("[not-found]"), "\(r.stderr)")
        let error = try #require(try Self.object(r)["error"] as? [String: Any], "\(r.out)")
        #expect(error["code"] as? String == "not-found" && error["missing"] as? [String] == ["missing"], "\(r.out)")
        #expect((error["message"] as? String)?.contains("missing") == true)
        #expect(r.out.split(separator: "\n").count == 1, "a value was printed beside the error: \(r.out)")
        // Several missing are all named; text output prints nothing on standard output.
        let two = try box.cli("get", "x", "a", "y")
        #expect(two.status == 3 && two.stdout.isEmpty && two.stderr.contains("'x'") && two.stderr.contains("'y'"), "\(two.stderr)")
        // One missing key without --json: as before.
        let one = try box.cli("get", "nothing")
        #expect(one.status == 3 && one.stdout.isEmpty && one.stderr.contains("[not-found]"))
    }

    @Test func aValueThatIsNotUTF8IsGivenInHex() throws {
        let box = Sandbox()
        #expect(try box.cli("set", "text", "plain").status == 0)
        #expect(try run(cliPath, ["set", "bin", "--stdin"], environment: box.environment, stdin: [0xff, 0x00, 0x61]).status == 0)
        let r = try box.cli("get", "text", "bin", "--json")
        #expect(r.status == 0 && r.out == "{\"text\":\"plain\",\"bin\":{\"valueHex\":\"ff0061\"}}\n", "\(r.out)")
    }

    /// With --json each error is also `{"error": {"code", "message"}}` on standard output, and
    /// standard error still says it; the exit status is the error's.
    @Test(arguments: [(["get", "k", "--json"], "store-not-found", Int32(1)), (["get", "a b", "--json"], "invalid-key", 2),
                      (["get", "--json"], "usage", 2), (["--json", "frobnicate"], "usage", 2), (["--json", "get", "--nope"], "usage", 2),
                      (["rm", "nothing", "--json"], "not-found", 3), (["keys", "--json", "--method", "ABC"], "invalid-argument", 2)])
    func errorsWithJSONAreAlsoObjectsOnStandardOutput(_ arguments: [String], _ code: String, _ status: Int32) throws {
        let box = Sandbox()
        if code != "store-not-found" { #expect(try box.cli("set", "a", "1").status == 0) }
        let r = try run(cliPath, arguments, environment: box.environment)
        #expect(r.status == status, "\(arguments): \(r.status) \(r.stderr)")
        let error = try #require(try Self.object(r)["error"] as? [String: Any], "\(arguments): \(r.out)")
        #expect(error["code"] as? String == code && (error["message"] as? String)?.isEmpty == false, "\(arguments): \(r.out)")
        #expect(r.stderr.hasPrefix("keybay-methods: ") && (code == "usage" || r.stderr.contains("[\(code)]")), "\(r.stderr)")
        // Without --json standard output stays empty.
        let plain = try run(cliPath, arguments.filter { $0 != "--json" }, environment: box.environment)
        #expect(plain.stdout.isEmpty, "\(arguments) without --json: \(plain.out)")
    }

    /// The error object carries the error's fields (docs/cli.md, "JSON output"), each only when
    /// set: `reason` and `path` for an insecure directory, `methodId` for a wrong passphrase,
    /// `path` and no `reason` for a store that is not there.
    @Test func errorObjectsCarryTheErrorsFields() throws {
        let box = Sandbox()
        let missing = try box.cli("get", "k", "--json")
        let none = try #require(missing.error, "\(missing.out)")
        #expect(missing.status == 1 && none.code == "store-not-found" && none.path == box.storePath, "\(none)")
        #expect(none.members == ["code", "message", "path"], "a field that is not set is absent: \(none)")

        let enrolled = try box.cli(["enroll", "passphrase"] + PassphraseTests.fast, secret: "right", option: "--passphrase-fd")
        #expect(enrolled.status == 0, "\(enrolled.stderr)")
        let id = try #require(try methodIDs(box).first)
        let wrong = try box.cli(["get", "k", "--json"], secret: "wrong", option: "--passphrase-fd")
        let refused = try #require(wrong.error, "\(wrong.out)")
        #expect(wrong.status == 1 && refused.code == "wrong-secret" && refused.methodID == id && refused.reason == nil && refused.triesLeft == nil,
                "\(refused)")

        chmod(box.storeDirectory, 0o777)
        defer { chmod(box.storeDirectory, 0o700) }
        let open = try box.cli(["get", "k", "--json"], secret: "right", option: "--passphrase-fd")
        let insecure = try #require(open.error, "\(open.out)")
        #expect(open.status == 1 && insecure.code == "insecure-permissions" && insecure.reason == "mode" && insecure.path == box.storeDirectory,
                "\(insecure)")
        #expect(insecure.methodID == nil && insecure.triesLeft == nil, "\(insecure)")
    }

    @Test func interactionRequiredWithJSONIsAnObjectToo() throws {
        let box = Sandbox()
        try PinentryTests.protectedStore(box)
        let r = try box.cli("get", "k", "--json", "--no-input")
        let error = try Self.object(r)["error"] as? [String: Any]
        #expect(r.status == 4 && error?["code"] as? String == "interaction-required", "\(r.out)")
    }
}
