// SPDX-License-Identifier: Apache-2.0
import CKeybayPlugin
import Foundation
import Glibc
import Synchronization
import Testing
@testable import Keybay

/// The `recovery` method (docs/recovery.md) through the built plugin and the real CLI: a key
/// shown once, typed back forgivingly, a typo told from a foreign key, and never printed again.
@Suite struct RecoveryTests {
    /// Runs the CLI with `key` (and a newline) on descriptor 3 as `--recovery-key-fd 3`.
    static func cli(_ box: Sandbox, _ args: [String], key: String) throws -> RunResult {
        try MethodLifecycleTests.cli(box, args, secrets: ["--recovery-key-fd": key])
    }

    /// `enroll recovery --json` on a store with one record: the method id and the key.
    static func enroll(_ box: Sandbox) throws -> (id: String, key: String, output: RunResult) {
        #expect(try box.cli("set", "k", "v").status == 0)
        let r = try box.cli("enroll", "recovery", "--json")
        #expect(r.status == 0, "\(r.stderr)")
        let object = try #require(try JSONSerialization.jsonObject(with: Data(r.stdout)) as? [String: Any], "\(r.out)")
        let id = try #require(object["methodId"] as? String, "\(r.out)")
        let key = try #require(object["recoveryKey"] as? String, "\(r.out)")
        #expect(object["id"] as? String == id && object["plugin"] as? String == "recovery")
        return (id, key, r)
    }

    /// `get k` with `key`; with `json`, `--json` too, for the error object's fields (`RunResult.error`).
    static func get(_ box: Sandbox, key: String, json: Bool = false) throws -> RunResult {
        try cli(box, ["get", "k", "--no-input"] + (json ? ["--json"] : []), key: key)
    }

    /// A `get` the recovery plugin refused as a wrong secret, with `reason`.
    static func isRefused(_ r: RunResult, reason: String) -> Bool {
        r.status == 1 && r.error?.code == "wrong-secret" && r.error?.reason == reason && r.error?.pluginID == "recovery"
    }

    /// 56 characters of Crockford's base32 in 7 dash-joined groups of 8.
    static func isWellFormed(_ key: String) -> Bool {
        let groups = key.split(separator: "-", omittingEmptySubsequences: false)
        return groups.count == 7 && groups.allSatisfy { $0.count == 8 && $0.allSatisfy { "0123456789ABCDEFGHJKMNPQRSTVWXYZ".contains($0) } }
    }

    // MARK: CLI

    /// The key `enroll --json` prints opens the store, however it is typed: other grouping,
    /// lower case, spaces, Crockford's o/l for 0/1.
    @Test func theEnrolledKeyOpensTheStoreTypedAnyWay() throws {
        let box = Sandbox()
        let (_, key, _) = try Self.enroll(box)
        #expect(Self.isWellFormed(key), "\(key)")
        let bare = key.replacingOccurrences(of: "-", with: "")
        var fours = ""
        for (i, c) in bare.lowercased().enumerated() { fours += (i > 0 && i % 4 == 0 ? " " : "") + String(c) }
        let crockford = bare.replacingOccurrences(of: "0", with: "o").replacingOccurrences(of: "1", with: "l")
        for typed in [key, bare.lowercased(), fours, " " + key.replacingOccurrences(of: "-", with: " - ") + " ", crockford] {
            let r = try Self.get(box, key: typed)
            #expect(r.status == 0 && r.out == "v", "typed as '\(typed)': \(r.stderr)")
        }
    }

    /// One wrong character is a typo (exit 1, the message says so and names no character), and
    /// so is a character outside the alphabet; a valid key of another enrollment is told apart.
    @Test func aTypoIsToldFromAnotherStoresKey() throws {
        let box = Sandbox()
        let (_, key, _) = try Self.enroll(box)
        var chars = Array(key)
        let i = chars.firstIndex { $0 != "-" }!
        chars[i] = chars[i] == "7" ? "8" : "7"
        let typo = try Self.get(box, key: String(chars), json: true)
        #expect(Self.isRefused(typo, reason: "typo-checksum"), "\(typo.out)")
        chars = Array(key)
        chars[i] = "U"
        let outside = try Self.get(box, key: String(chars), json: true)
        #expect(Self.isRefused(outside, reason: "typo-character"), "\(outside.out)")
        let short = try Self.get(box, key: String(key.dropLast()), json: true)
        #expect(Self.isRefused(short, reason: "typo-length"), "\(short.out)")
        let extra = try Self.get(box, key: key + "0", json: true)
        #expect(Self.isRefused(extra, reason: "typo-length"), "\(extra.out)")
        // The plugin takes 256 bytes, separators included; one more is refused as too long, and
        // more than its buffer holds is the CLI's usage error.
        let padded = { (count: Int) in key + String(repeating: " ", count: count - key.utf8.count) }
        #expect(try Self.get(box, key: padded(256)).out == "v")
        let long = try Self.get(box, key: padded(257), json: true)
        #expect(Self.isRefused(long, reason: "too-long"), "\(long.out)")
        #expect(try Self.get(box, key: padded(258)).status == 2)

        let other = Sandbox()
        let (_, foreign, _) = try Self.enroll(other)
        let r = try Self.get(box, key: foreign, json: true)
        #expect(Self.isRefused(r, reason: "other-store"), "\(r.out)")
    }

    /// With every other method removed (unlocked by the recovery key itself), the recovery key
    /// still opens the store, which stays protected.
    @Test func theKeyAloneKeepsTheStoreOpen() throws {
        let box = Sandbox()
        let passphrase = try MethodLifecycleTests.passphraseStore(box, passphrase: "pw")
        let enrolled = try MethodLifecycleTests.cli(box, ["enroll", "recovery", "--json"], secrets: ["--passphrase-fd": "pw"])
        #expect(enrolled.status == 0, "\(enrolled.stderr)")
        let object = try #require(try JSONSerialization.jsonObject(with: Data(enrolled.stdout)) as? [String: Any], "\(enrolled.out)")
        let id = try #require(object["methodId"] as? String), key = try #require(object["recoveryKey"] as? String)
        let removed = try Self.cli(box, ["remove", passphrase, "--method", id], key: key)
        #expect(removed.status == 0, "\(removed.stderr)")
        let status = try KeybayStore.status(box.configuration())
        #expect(status.state == .protected && status.methods.map(\.plugin) == ["recovery"])
        let r = try Self.get(box, key: key)
        #expect(r.status == 0 && r.out == "v", "\(r.stderr)")
    }

    /// `change` on a recovery method, unlocked with its key, makes a new key: the old one is then
    /// another store's key, the new one opens.
    @Test func changeMakesANewKey() throws {
        let box = Sandbox()
        let (id, old, _) = try Self.enroll(box)
        let r = try Self.cli(box, ["change", id, "--json"], key: old)
        #expect(r.status == 0, "\(r.stderr)")
        let object = try #require(try JSONSerialization.jsonObject(with: Data(r.stdout)) as? [String: Any], "\(r.out)")
        let new = try #require(object["recoveryKey"] as? String)
        #expect(Self.isWellFormed(new) && new != old && object["changed"] as? String == id && object["methodId"] as? String != id)
        let stale = try Self.get(box, key: old, json: true)
        #expect(Self.isRefused(stale, reason: "other-store"), "\(stale.out)")
        let fresh = try Self.get(box, key: new)
        #expect(fresh.status == 0 && fresh.out == "v", "\(fresh.stderr)")
    }

    /// A key that may not have been printed (standard output is /dev/full, or closed) is never
    /// left as a way in: `enroll` fails with `io` and removes the method it stored (on a fresh
    /// home, the store it created), and `change` puts the old method back, so the old key opens
    /// the store as before, even where it is the only method. (With standard output closed, the
    /// store's own files must not take its descriptor.)
    @Test func aKeyThatCannotBePrintedLeavesNoMethodBehind() throws {
        func cli(_ box: Sandbox, _ redirect: String, _ args: [String], key: String? = nil) throws -> RunResult {
            let file = box.root + "/key"
            writeBytes(file, Array(((key ?? "") + "\n").utf8))
            return try run("/bin/sh", ["-c", "exec \"$0\" \"$@\" 3<\"\(file)\" \(redirect)", cliPath] + args + (key == nil ? [] : ["--recovery-key-fd", "3"]),
                           environment: box.environment)
        }
        let fresh = Sandbox()
        let created = try cli(fresh, ">/dev/full", ["enroll", "recovery"])
        #expect(created.status == 1 && created.stderr.contains("the store it created was removed again"), "\(created.stderr)")
        #expect(try fresh.cli("status", "--json").out.contains("\"state\":\"absent\""))

        let box = Sandbox()
        #expect(try box.cli("set", "k", "v").status == 0)
        for (redirect, json) in [(">/dev/full", []), (">/dev/full", ["--json"]), (">&-", []), (">&-", ["--json"])] {
            let r = try cli(box, redirect, ["enroll", "recovery"] + json)
            #expect(r.status == 1 && r.stderr.contains("[io]") && r.stderr.contains("may not have been shown in full, so the recovery method")
                    && r.stderr.contains("was removed again"), "\(redirect) \(json): \(r.stderr)")
            #expect(try methodIDs(box).isEmpty && box.cli("get", "k").out == "v")
        }
        // change of the only method: the old one is put back and its key still opens the store.
        let (id, key, _) = try Self.enroll(box)
        for redirect in [">/dev/full", ">&-"] {
            let changed = try cli(box, redirect, ["change", id], key: key)
            #expect(changed.status == 1 && changed.stderr.contains("the change was taken back: method \(id) opens the store as before"),
                    "\(redirect): \(changed.stderr)")
            #expect(try methodIDs(box) == [id])
            let opened = try Self.get(box, key: key)
            #expect(opened.status == 0 && opened.out == "v", "\(opened.stderr)")
        }
    }

    /// Text output: the key line always; the QR code only on a terminal, and that drawing read
    /// back by a QR decoder (zbar) is the key.
    @Test func theQRCodeIsDrawnOnlyOnATerminalAndReadsAsTheKey() throws {
        let box = Sandbox()
        let piped = try box.cli("enroll", "recovery")
        #expect(piped.status == 0, "\(piped.stderr)")
        let lines = piped.out.split(separator: "\n").map(String.init)
        #expect(lines.contains { Self.isWellFormed($0.trimmingCharacters(in: .whitespaces)) }, "\(piped.out)")
        #expect(piped.out.contains("recovery key (shown only this once"), "\(piped.out)")
        #expect(!piped.out.contains("█") && !piped.out.contains("▀") && !piped.out.contains("▄"), "no QR code without a terminal: \(piped.out)")
        #expect(lines.count == 3, "the result line, the heading and the key: \(piped.out)")

        let other = Sandbox()
        let script = packageDirectory + "/Tests/pty/prompt_text.py"
        let tty = try run("/usr/bin/python3", [script, cliPath, "enroll", "recovery"], environment: other.environment)
        let screen = tty.out.replacingOccurrences(of: "\r", with: "")
        let key = try #require(screen.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }.first(where: Self.isWellFormed), "\(screen)")
        let drawing = screen.split(separator: "\n").filter { !$0.isEmpty && $0.allSatisfy { " ▀▄█".contains($0) } }.joined(separator: "\n")
        #expect(drawing.count > 100, "a QR code on the terminal: \(screen)")
        #expect(try Self.readQR(drawing, box: other) == key)
    }

    /// The key is printed by `enroll` and by nothing else: not by status, list, verify, get, a
    /// typo's error line, or `plugins`.
    @Test func nothingElsePrintsTheKey() throws {
        let box = Sandbox()
        let (id, key, _) = try Self.enroll(box)
        let bare = key.replacingOccurrences(of: "-", with: "")
        var typo = Array(key)
        typo[0] = typo[0] == "7" ? "8" : "7"
        let runs = [try box.cli("status"), try box.cli("status", "--json"), try box.cli("list"), try box.cli("list", "--json"),
                    try box.cli("plugins"), try Self.cli(box, ["verify", id], key: key), try Self.cli(box, ["verify", id, "--json"], key: key),
                    try Self.get(box, key: key), try Self.get(box, key: String(typo), json: true), try Self.cli(box, ["keys"], key: key)]
        // Every run did what it was asked (an empty output would hide nothing), the typo's get fails.
        let expected: [Int32] = [0, 0, 0, 0, 0, 0, 0, 0, 1, 0]
        #expect(runs.map(\.status) == expected, "\(runs.map(\.stderr))")
        #expect(runs[7].out == "v" && runs[8].error?.reason.map { $0.hasPrefix("typo-") } == true, "\(runs[8].out)")
        for r in runs {
            for needle in [key, bare, String(bare.prefix(8)) + String(bare.dropFirst(8).prefix(8)), String(key.split(separator: "-")[1])] {
                #expect(!r.out.contains(needle) && !r.stderr.contains(needle), "\(r.out)\(r.stderr)")
            }
        }
        #expect(try box.cli("list").out.contains("recovery"))
    }

    /// Without libqrencode (a library of that name lacking its functions, found first through
    /// LD_LIBRARY_PATH) enrollment works all the same; the plugin only says there is no QR code.
    @Test func withoutLibqrencodeThereIsNoQRCodeAndNoError() throws {
        let box = Sandbox()
        let fake = box.root + "/fake-libqrencode"
        mkdir(fake, 0o755)
        try "int QRcode_APIVersion(void) { return 0; }\n".write(toFile: fake + "/fake.c", atomically: true, encoding: .utf8)
        let cc = try run("/usr/bin/cc", ["-shared", "-fPIC", "-o", fake + "/libqrencode.so.4", fake + "/fake.c"], environment: ["PATH": "/usr/bin:/bin"])
        try #require(cc.status == 0, "\(cc.stderr)")
        var environment = box.environment
        environment["LD_LIBRARY_PATH"] = fake
        environment["KEYBAY_LOG"] = "info"
        #expect(try box.cli("set", "k", "v").status == 0)
        let r = try run(cliPath, ["enroll", "recovery", "--json"], environment: environment)
        #expect(r.status == 0, "\(r.stderr)")
        #expect(r.stderr.contains("no QR code: cannot load libqrencode.so.4") && r.stderr.contains("QRcode_encodeString"), "\(r.stderr)")
        let object = try #require(try JSONSerialization.jsonObject(with: Data(r.stdout)) as? [String: Any], "\(r.out)")
        let key = try #require(object["recoveryKey"] as? String)
        #expect(try Self.get(box, key: key).out == "v")
    }

    // MARK: library and plugin

    /// Keeps what a plugin shows.
    final class RecordingInteraction: KeybayInteraction, @unchecked Sendable {
        let shown = Mutex<[(text: [UInt8], picture: [UInt8]?)]>([])
        func askSecret(_ request: KeybaySecretRequest, into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
            throw KeybayError(.interactionRequired, "nothing to ask")
        }
        func showSecret(_ secret: KeybayShownSecret) throws {
            let text = secret.text.withUnsafeBytes { Array($0) }
            let picture = secret.picture.map { p in p.withUnsafeBytes { Array($0) } }
            shown.withLock { $0.append((text, picture)) }
        }
    }

    /// Through the library: the plugin shows the key once, with a picture made of half blocks
    /// (libqrencode is installed by scripts/setup.sh: its absence fails this test) that a QR
    /// decoder reads as the key.
    @Test func theLibraryIsShownTheKeyAndItsPicture() throws {
        let handle = try #require(dlopen("libqrencode.so.4", RTLD_NOW), "libqrencode.so.4 is not installed (scripts/setup.sh installs libqrencode4)")
        dlclose(handle)
        let box = Sandbox()
        let interaction = RecordingInteraction()
        let session = try KeybayStore.open(box.configuration(), interaction: interaction)
        defer { session.close() }
        let method = try session.auth.add(plugin: "recovery")
        #expect(method.plugin == "recovery" && method.label == "recovery")
        let shown = interaction.shown.withLock { $0 }
        try #require(shown.count == 1)
        let text = String(decoding: shown[0].text, as: UTF8.self)
        #expect(Self.isWellFormed(text), "\(text)")
        let picture = String(decoding: try #require(shown[0].picture, "no picture although libqrencode is installed"), as: UTF8.self)
        #expect(picture.allSatisfy { " ▀▄█\n".contains($0) } && picture.contains("█"), "\(picture)")
        let rows = picture.split(separator: "\n")
        #expect(rows.count == 21 && rows.allSatisfy { $0.count == 41 }, "version 4 (33 modules) and a 4-module quiet zone: \(rows.count) lines")
        #expect(try Self.readQR(picture, box: box) == text)
    }

    /// A host that cannot show a secret gets no recovery method: the library's one order stores
    /// it, finds the key cannot be shown and takes it back, so the enrollment fails with
    /// interaction-required, no method is left and the records are as they were.
    @Test func aHostThatCannotShowTheKeyGetsNoMethod() throws {
        let box = Sandbox()
        let session = try KeybayStore.open(box.configuration())
        defer { session.close() }
        try session.set("k", string: "v")
        let e = keybayError { _ = try session.auth.add(plugin: "recovery") }
        #expect(e?.code == .interactionRequired, "\(String(describing: e))")
        #expect(try session.auth.list().isEmpty)
        #expect(try session.getString("k") == "v")
        let reopened = try KeybayStore.open(box.configuration(), createIfAbsent: false)
        defer { reopened.close() }
        #expect(try !reopened.isProtected && reopened.getString("k") == "v")
    }

    /// The one order (`PreparedEnrollment.commit(showingSecretWith:)`): the key is shown only once
    /// the method is stored, so at the moment it is shown it already opens the store; a show that
    /// fails takes the method back.
    @Test func theKeyIsShownOnlyOnceItOpensTheStore() throws {
        let box = Sandbox()
        let configuration = try box.configuration()
        let session = try KeybayStore.open(configuration)
        defer { session.close() }
        try session.set("k", string: "v")
        let prepared = try session.auth.prepare(plugin: "recovery")
        var methodsWhenShown: [KeybayMethod] = []
        try prepared.commit(showingSecretWith: { _ in methodsWhenShown = try KeybayStore.status(configuration).methods })
        #expect(methodsWhenShown.map(\.id) == [prepared.method.id])
        let failing = try session.auth.prepare(plugin: "recovery")
        struct Unshown: Error {}
        #expect(throws: Unshown.self) { try failing.commit(showingSecretWith: { _ in throw Unshown() }) }
        #expect(try session.auth.list().map(\.id) == [prepared.method.id])
    }

    /// docs/recovery.md's worked example, through the built plugin: the text of K = 00…1f opens
    /// the params `01 | check` and gives M, typed as shown and in lower case without dashes.
    @Test func theDerivationMatchesTheWorkedExample() throws {
        let plugin = try PluginLoader.load(id: "recovery", kind: KEYBAY_KIND_METHOD,
                                           search: KeybayPluginSearch(directories: [pluginDirectory], environmentPath: nil))
        let text = "000G40R4-0M30E209-185GR38E-1W8124GK-2GAHC5RR-34D1P70X-3RFZN2SB"
        let params = hex("019aba3f37d0743a74282f6a45f986791e")
        let m = hex("aef47cb77ec8cb8d21a16d6eab9295d072e496946cb30a8b670cdb78df129346")
        for typed in [text, text.lowercased().replacingOccurrences(of: "-", with: "")] {
            let secret = try plugin.unwrap(params: params, interaction: ScriptedInteraction([typed]))
            #expect(secret.withUnsafeBytes { Array($0) } == m, "typed as \(typed)")
        }
        #expect(try plugin.describe(params: params) == "recovery key (256-bit)")
        var wrongCheck = params
        wrongCheck[1] ^= 1
        let foreign = keybayError { _ = try plugin.unwrap(params: wrongCheck, interaction: ScriptedInteraction([text])) }
        #expect(foreign?.code == .wrongSecret && foreign?.reason == "other-store", "\(String(describing: foreign))")
        #expect(plugin.isInteractive && !plugin.needsDevice && !plugin.isOnePerStore)
    }

    /// What zbar reads from a half-block drawing (Tests/qr/read_terminal_qr.py).
    static func readQR(_ drawing: String, box: Sandbox) throws -> String {
        let file = box.root + "/qr-\(UUID().uuidString).txt"
        try drawing.write(toFile: file, atomically: true, encoding: .utf8)
        let r = try run("/usr/bin/python3", [packageDirectory + "/Tests/qr/read_terminal_qr.py", file], environment: ["PATH": "/usr/bin:/bin"])
        #expect(r.status == 0, "zbar found no QR code (scripts/setup.sh installs libzbar0): \(r.stderr)")
        return r.out
    }
}
