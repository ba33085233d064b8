// SPDX-License-Identifier: Apache-2.0
import Foundation
import Glibc
import Testing
@testable import Keybay

/// The everyday method lifecycle: changing a secret in one rotation, a store created together
/// with its first method, refusals before anything is touched, labels that cannot deceive, and
/// plugins and prompts that know whose store they serve.
@Suite struct MethodLifecycleTests {
    /// Runs the CLI with each secret on its own descriptor (3, 4, …, in the order given), the
    /// option naming it added to the arguments: `["--passphrase-fd": "old", "--new-passphrase-fd": "new"]`.
    static func cli(_ box: Sandbox, _ args: [String], secrets: KeyValuePairs<String, String> = [:],
                    environment: [String: String]? = nil) throws -> RunResult {
        var redirections = "", options: [String] = []
        for (i, (option, secret)) in secrets.enumerated() {
            let file = box.root + "/secret-\(UUID().uuidString)"
            try (secret + "\n").write(toFile: file, atomically: true, encoding: .utf8)
            redirections += " \(i + 3)<\"\(file)\""
            options += [option, String(i + 3)]
        }
        return try run("/bin/sh", ["-c", "exec \"$0\" \"$@\"" + redirections, cliPath] + args + options, environment: environment ?? box.environment)
    }

    /// A store with one record and a passphrase method (fast Argon2id); returns the method id.
    static func passphraseStore(_ box: Sandbox, passphrase: String, label: String? = nil) throws -> String {
        #expect(try box.cli("set", "k", "v").status == 0)
        let labelArgs = label.map { ["--label", $0] } ?? []
        let r = try cli(box, ["enroll", "passphrase", "--json"] + labelArgs + fastPassphraseFlags, secrets: ["--passphrase-fd": passphrase])
        #expect(r.status == 0, "\(r.stderr)")
        return try methodIDs(box).first ?? ""
    }

    static func get(_ box: Sandbox, passphrase: String) throws -> RunResult {
        try cli(box, ["get", "k", "--no-input"], secrets: ["--passphrase-fd": passphrase])
    }

    // MARK: retries

    /// A command whose write finds the store key changed by another process unlocks and enrolls
    /// again, and prints only the secret its own, stored enrollment showed. `gated-show` shows
    /// "FIRST" (then "SECOND" on its next enrollment) and waits for a gate file; while the first
    /// enrollment waits, another process removes a method, so its write is refused and the
    /// command runs once more.
    @Test func aRetriedEnrollmentPrintsOnlyTheSecretOfTheOneStored() throws {
        let box = Sandbox()
        let dir = box.root + "/gated"
        try PluginLoaderTests.build("""
            #include <stdio.h>
            #include <stdlib.h>
            #include <string.h>
            #include <unistd.h>
            #include "keybay_plugin.h"
            static int enrollments;
            static void fb(keybay_buffer *b) { free(b->data); b->data = 0; b->length = 0; }
            static keybay_status probe(const keybay_host *h) { return KEYBAY_OK; }
            static keybay_status enroll(const keybay_host *h, const keybay_option *o, size_t n, keybay_buffer *p, uint8_t s[32]) {
                if (n != 1 || strcmp(o[0].name, "gate") != 0) return KEYBAY_ERR_INVALID_OPTION;
                keybay_status status = h->show_secret(h->context, KEYBAY_SECRET_RECOVERY_KEY, ++enrollments == 1 ? "FIRST" : "SECOND", 0);
                if (status != KEYBAY_OK) return status;
                char waiting[4200];
                snprintf(waiting, sizeof waiting, "%s.waiting", o[0].value);
                fclose(fopen(waiting, "w"));
                for (int i = 0; i < 600000 && access(o[0].value, F_OK) != 0; i++) usleep(1000);
                p->data = calloc(1, 1); p->length = 1; memset(s, 7, 32); return KEYBAY_OK;
            }
            static keybay_status unwrap(const keybay_host *h, const uint8_t *p, size_t n, uint8_t s[32]) { memset(s, 7, 32); return KEYBAY_OK; }
            static keybay_status describe(const uint8_t *p, size_t n, keybay_buffer *t) { return KEYBAY_ERR_UNSUPPORTED; }
            static const keybay_plugin d = { .abi_version = KEYBAY_PLUGIN_ABI_VERSION, .struct_size = sizeof(keybay_plugin),
                .id = "gated-show", .name = "t", .version = "1", .kind = KEYBAY_KIND_METHOD, .free_buffer = fb, .probe = probe,
                .enroll = enroll, .unwrap = unwrap, .describe = describe };
            const keybay_plugin *keybay_plugin_entry_v1(void) { return &d; }
            """, fileID: "gated-show", in: dir)
        var env = box.environment
        env["KEYBAY_PLUGIN_PATH"] = (env["KEYBAY_PLUGIN_PATH"] ?? "") + ":" + dir
        // In process: the plugin writes its ".waiting" file, which the sandbox would refuse.
        env["KEYBAY_PLUGIN_ISOLATION"] = "none"
        #expect(try box.cli("set", "k", "v").status == 0)
        for _ in 0..<2 { #expect(try Self.cli(box, ["enroll", "test-counting"], secrets: ["--pin-fd": "1", "--new-pin-fd": "1"], environment: env).status == 0) }
        let methods = try methodIDs(box)
        try #require(methods.count == 2)

        let gate = box.root + "/gate"
        writeBytes(box.root + "/pin", Array("1\n".utf8))
        let enrolling = spawnChild("/bin/sh", ["-c", "exec \"$0\" \"$@\" 3<\"$HOME/pin\" >\"$HOME/out\" 2>\"$HOME/err\"", cliPath,
                                              "enroll", "gated-show", "--json", "--opt", "gate=" + gate, "--method", methods[0], "--pin-fd", "3"],
                                   environment: env, stdinPath: "/dev/null")
        for _ in 0..<60_000 where !exists(gate + ".waiting") { usleep(1000) }
        #expect(exists(gate + ".waiting"), "the first enrollment never began")
        let removed = try box.cli(["remove", methods[1], "--method", methods[0]], secret: "1", option: "--pin-fd", environment: env)
        #expect(removed.status == 0, "\(removed.stderr)")
        writeBytes(gate, [])
        let outcome = waitChild(enrolling)
        let out = String(decoding: readBytes(box.root + "/out") ?? [], as: UTF8.self)
        let err = String(decoding: readBytes(box.root + "/err") ?? [], as: UTF8.self)
        #expect(outcome.succeeded, "\(err)")
        #expect(err.contains("another process changed the store's unlock methods meanwhile; trying again"), "\(err)")
        #expect(out.hasSuffix(",\"recoveryKey\":\"SECOND\"}\n") && !out.contains("FIRST"), "\(out)")
        let now = try methodIDs(box, environment: env)
        #expect(now.count == 2 && now[0] == methods[0] && !now.contains(methods[1]), "\(now)")
    }

    // MARK: change

    /// `change`: the old passphrase then fails as a wrong secret, the new one opens, the store
    /// keeps one method (with a new id) and stays protected; a passphrase allows one per store and
    /// is changed all the same.
    @Test func changeReplacesAPassphraseInOneStep() throws {
        let box = Sandbox()
        let old = try Self.passphraseStore(box, passphrase: "old secret", label: "laptop")
        let before = try KeybayStore.status(box.configuration())
        let r = try Self.cli(box, ["change", old, "--json"] + fastPassphraseFlags,
                             secrets: ["--passphrase-fd": "old secret", "--new-passphrase-fd": "new secret"])
        #expect(r.status == 0, "\(r.stderr)")
        let after = try KeybayStore.status(box.configuration())
        #expect(after.state == .protected && after.methods.count == before.methods.count)
        #expect(after.methods.map(\.label) == ["laptop"] && after.methods[0].id != old, "the label is kept, the method id is new")
        let wrong = try Self.get(box, passphrase: "old secret")
        #expect(wrong.status == 1 && wrong.stderr.contains("[wrong-secret]"), "\(wrong.stderr)")
        let right = try Self.get(box, passphrase: "new secret")
        #expect(right.status == 0 && right.out == "v")
        #expect(r.out.contains("\"changed\":\"\(old)\"") && r.out.contains("\"methodId\":\"\(after.methods[0].id)\""), "\(r.out)")
    }

    /// `change` takes only the options given: the old method's one pass (`iterations=1`) is not
    /// carried over, so the new passphrase's passes are calibrated (to 200 ms here, far more
    /// than one pass over 8 MiB).
    @Test func changeTakesOnlyTheOptionsGiven() throws {
        let box = Sandbox()
        let old = try Self.passphraseStore(box, passphrase: "old secret")
        #expect(try box.cli("list", "--describe").out.contains("t=1,"))
        let r = try Self.cli(box, ["change", old, "--opt", "memory-kib=8192", "--opt", "lanes=1", "--opt", "target-ms=200"],
                             secrets: ["--passphrase-fd": "old secret", "--new-passphrase-fd": "new secret"])
        #expect(r.status == 0, "\(r.stderr)")
        let described = try box.cli("list", "--describe").out
        #expect(described.contains("8 MiB") && described.contains("p=1") && !described.contains("t=1,"), "\(described)")
    }

    /// One rotation: the epoch rises by exactly one, and a store being changed never lists both
    /// credentials nor none.
    @Test func changeIsOneRotation() throws {
        let box = Sandbox()
        let old = try Self.passphraseStore(box, passphrase: "one")
        let epoch = { (passphrase: String) throws -> UInt64 in
            let session = try KeybayStore.open(box.configuration(), method: try methodIDs(box)[0], interaction: ScriptedInteraction([passphrase]))
            defer { session.close() }
            return try session.freshSnapshot().keys.epoch
        }
        let e0 = try epoch("one")
        #expect(try Self.cli(box, ["change", old] + fastPassphraseFlags, secrets: ["--passphrase-fd": "one", "--new-passphrase-fd": "two"]).status == 0)
        let e1 = try epoch("two")
        #expect(e1 == e0 + 1)
    }

    /// The old secret is needed, and a new one never comes from the unlock descriptor: without
    /// `--new-passphrase-fd` and without a terminal, `change` is exit 4. Either way nothing changes.
    @Test func changeChangesNothingWithoutBothSecrets() throws {
        let box = Sandbox()
        let old = try Self.passphraseStore(box, passphrase: "right")
        let bytes = readBytes(box.storePath)
        let wrong = try Self.cli(box, ["change", old, "--no-input"], secrets: ["--passphrase-fd": "wrong", "--new-passphrase-fd": "x"])
        #expect(wrong.status == 1 && wrong.stderr.contains("[wrong-secret]"), "\(wrong.stderr)")
        let noNew = try Self.cli(box, ["change", old, "--no-input"], secrets: ["--passphrase-fd": "right"])
        #expect(noNew.status == 4 && noNew.stderr.contains("--new-passphrase-fd"), "\(noNew.stderr)")
        let unchanged = readBytes(box.storePath) == bytes
        #expect(unchanged, "the store is byte-identical")
        #expect(try Self.get(box, passphrase: "right").out == "v")
    }

    /// `--method` unlocks with another method; the changed one gets its new secret.
    @Test func changeUnlocksWithAnotherMethodWhenAsked() throws {
        let box = Sandbox()
        let passphrase = try Self.passphraseStore(box, passphrase: "pp")
        #expect(try Self.cli(box, ["enroll", "test-counting", "--method", passphrase],
                             secrets: ["--passphrase-fd": "pp", "--new-pin-fd": "1111"]).status == 0)
        let pin = try methodIDs(box).last!
        let r = try Self.cli(box, ["change", pin, "--method", passphrase, "--no-input"],
                             secrets: ["--passphrase-fd": "pp", "--new-pin-fd": "2222"])
        #expect(r.status == 0, "\(r.stderr)")
        let changed = try methodIDs(box).last!
        #expect(try Self.cli(box, ["get", "k", "--method", changed, "--no-input"], secrets: ["--pin-fd": "2222"]).out == "v")
        #expect(try Self.cli(box, ["get", "k", "--method", changed, "--no-input"], secrets: ["--pin-fd": "1111"]).status == 1)
    }

    /// The library's `replace`: the old id is gone, the new credential opens (the old one does
    /// not), and a new label replaces the old one only when given.
    @Test func replaceInTheLibrary() throws {
        let box = Sandbox()
        let config = try box.configuration()
        let session = try KeybayStore.open(config, interaction: ScriptedInteraction(["1", "1", "2", "2"]))
        defer { session.close() }
        try session.set("k", string: "v")
        let first = try session.auth.add(plugin: "test-counting", label: "first")
        let second = try session.auth.replace(first.id)
        let listed = try session.auth.list()
        #expect(second.label == "first" && second.id != first.id && listed == [second])
        #expect(keybayError { _ = try session.auth.replace(first.id) }?.code == .methodNotFound)
        let reopened = try KeybayStore.open(config, method: second.id, interaction: ScriptedInteraction(["2"]))
        #expect(try reopened.getString("k") == "v")
        reopened.close()
        #expect(keybayError { _ = try KeybayStore.open(config, method: second.id, interaction: ScriptedInteraction(["1"])) }?.code == .wrongSecret)
    }

    /// `replace` from async code, with a new label.
    @Test func replaceFromAsyncCode() async throws {
        let box = Sandbox()
        let session = try await KeybayStore.open(box.configuration(), interaction: ScriptedInteraction(["1", "1", "2", "2"]))
        defer { session.close() }
        let first = try await session.auth.add(plugin: "test-counting", label: "first")
        let second = try await session.auth.replace(first.id, label: "renamed")
        let listed = try session.auth.list()
        #expect(second.label == "renamed" && listed == [second])
    }

    /// Killed at random moments, `change` leaves the old passphrase or the new one opening the
    /// store, never neither, with the record and the count of methods as they were.
    /// `KEYBAY_CRASH_RUNS` sets three times the count (default 20 runs). The kill window adapts
    /// as in ProcessTests (shorter after a completed change, longer after a kill), so both kinds
    /// of run happen.
    @Test func killedChangesLeaveTheOldOrTheNewSecret() throws {
        let runs = ProcessInfo.processInfo.environment["KEYBAY_CRASH_RUNS"].flatMap(Int.init).map { max(4, $0 / 3) } ?? 20
        let box = Sandbox()
        try Self.killedChangesLeaveTheOldOrTheNewSecret(box, environment: box.environment, method: try Self.passphraseStore(box, passphrase: "p0"),
                                                        secret: "p0", runs: runs, flags: fastPassphraseFlags) { passphrase in
            try Self.get(box, passphrase: passphrase)
        }
    }

    /// The change crash-kill run of a method enrolled as `method` with `secret` (p0): changed
    /// to p1, p2, … (`secretPrefix` then the run; `--pin-fd` for a PIN method), killed at random moments; `get` runs the
    /// CLI's `get k` with a secret (also used by Tpm2PinTests).
    static func killedChangesLeaveTheOldOrTheNewSecret(_ box: Sandbox, environment: [String: String], method: String, secret: String, runs: Int,
                                                       secretOption: String = "passphrase", secretPrefix: String = "p", flags: [String],
                                                       get: (String) throws -> RunResult) throws {
        var id = method
        var current = secret
        var rng = SystemRandomNumberGenerator()
        var completed = 0, killed = 0
        var window: UInt32 = 0
        for i in 1...runs {
            let next = "\(secretPrefix)\(i)"
            let files = [current, next].map { secret -> String in
                let file = box.root + "/s-\(UUID().uuidString)"
                try? (secret + "\n").write(toFile: file, atomically: true, encoding: .utf8)
                return file
            }
            let script = "exec \"$0\" change \(id) --no-input --\(secretOption)-fd 3 --new-\(secretOption)-fd 4 \(flags.joined(separator: " ")) 3<\(files[0]) 4<\(files[1])"
            let start = ContinuousClock.now
            let pid = spawnChild("/bin/sh", ["-c", script, cliPath], environment: environment, stdinPath: "/dev/null")
            let outcome: (succeeded: Bool, signalled: Bool)
            if window == 0 {
                // The first run is never killed: it measures how long a change takes here.
                outcome = waitChild(pid)
                #expect(outcome.succeeded)
                let took = ContinuousClock.now - start
                window = UInt32(took.components.seconds * 1_000_000 + took.components.attoseconds / 1_000_000_000_000) * 2
            } else {
                usleep(UInt32.random(in: 0...window, using: &rng))
                kill(pid, SIGKILL)
                outcome = waitChild(pid)
            }
            if outcome.succeeded { completed += 1; window -= window / 16 } else { killed += 1; window += window / 8 }
            let withOld = try get(current), withNew = try get(next)
            #expect((withOld.status == 0) != (withNew.status == 0), "run \(i): exactly one of the old and the new secret must open (old \(withOld.status), new \(withNew.status))")
            #expect([withOld, withNew].contains { $0.out == "v" }, "run \(i): the record is intact")
            let methods = try KeybayStore.status(box.configuration()).methods
            #expect(methods.count == 1, "run \(i): \(methods.count) methods")
            if withNew.status == 0 { current = next; id = methods[0].id }
        }
        print("change crash-kill: \(runs) runs, \(completed) completed, \(killed) killed; window \(window) µs")
        #expect(runs < 20 || (completed > 0 && killed > 0), "\(completed) completed, \(killed) killed: one branch never ran")
    }

    // MARK: a store made with its first method

    /// `enroll` on a fresh home runs the ceremony first: a refused, failed or cancelled one
    /// leaves nothing at all (no store, no root, no directories).
    @Test func aFailedEnrollOnAFreshHomeLeavesNothing() throws {
        let box = Sandbox()
        let attempts: [(args: [String], secrets: KeyValuePairs<String, String>, status: Int32)] = [
            (["enroll", "test-counting", "--no-input"], [:], 4),
            (["enroll", "passphrase", "--opt", "bogus=1"], ["--passphrase-fd": "pw"], 2),
            (["enroll", "test-counting", "--opt", "unknown=1"], ["--pin-fd": "1"], 2),
            (["enroll", "no-such-plugin"], [:], 1),
            // An empty secret: the host cancels the ceremony (and reports the empty input).
            (["enroll", "test-counting"], ["--pin-fd": ""], 2),
        ]
        for attempt in attempts {
            let r = try Self.cli(box, attempt.args, secrets: attempt.secrets)
            #expect(r.status == attempt.status, "\(attempt.args): \(r.status) \(r.stderr)")
            #expect(try box.cli("status", "--json").out.contains("\"state\":\"absent\""))
            #expect(!exists(box.dataHome) && !exists(box.stateHome), "\(attempt.args) created directories")
        }
    }

    /// On a fresh home the store and its method are one write: its first generation (epoch 1)
    /// is already protected.
    @Test func enrollOnAFreshHomeWritesOnce() throws {
        let box = Sandbox()
        let r = try Self.cli(box, ["enroll", "test-counting", "--label", "pin"], secrets: ["--pin-fd": "1234"])
        #expect(r.status == 0 && r.out.hasPrefix("created the store with test-counting method"), "\(r.out) \(r.stderr)")
        let id = try methodIDs(box)[0]
        let session = try KeybayStore.open(box.configuration(), method: id, interaction: ScriptedInteraction(["1234"]))
        defer { session.close() }
        #expect(try session.freshSnapshot().keys.epoch == 1 && session.isProtected)
    }

    /// The library form: `initialize(_:enrolling:)` refuses any existing state before its ceremony.
    @Test func initializeEnrollingRefusesExistingState() throws {
        let box = Sandbox()
        let config = try box.configuration()
        let asked = ScriptedInteraction(["1", "1"])
        try KeybayStore.initialize(config).close()
        #expect(keybayError { _ = try KeybayStore.initialize(config, enrolling: "test-counting", interaction: asked) }?.code == .alreadyInitialized)
        #expect(asked.askCount == 0, "no secret is asked for a store that cannot be made")
    }

    // MARK: refusals before anything is touched

    /// Invalid plugin ids and relative plugin paths are invalid input: exit 2, nothing created
    /// on a fresh home, an existing store byte-identical.
    @Test func invalidPluginIdsAreUsageErrors() throws {
        let box = Sandbox()
        for id in ["../x", "UPPER CASE", "a/b", ""] {
            let r = try box.cli("enroll", id, "--json")
            #expect(r.status == 2 && r.error?.code == "invalid-argument" && r.error?.reason == "invalid-plugin-id", "\(id): \(r.status) \(r.out)")
            #expect(!exists(box.dataHome) && !exists(box.stateHome))
        }
        #expect(try box.cli("set", "k", "v").status == 0)
        let bytes = readBytes(box.storePath)
        #expect(try box.cli("enroll", "../x").status == 2)
        let unchanged = readBytes(box.storePath) == bytes
        #expect(unchanged, "the store is byte-identical")
        var environment = box.environment
        environment["KEYBAY_PLUGIN_PATH"] = "relative/plugins"
        let relative = try run(cliPath, ["plugins", "--json"], environment: environment)
        #expect(relative.status == 2 && relative.error?.code == "invalid-argument" && relative.error?.reason == "relative-plugin-path", "\(relative.out)")
    }

    /// C0 and C1 controls and the bidirectional overrides and isolates are refused at enrollment
    /// (exit 2, store untouched); other text, symbols included, is a label.
    @Test(arguments: ["a\u{85}b", "a\u{9b}b", "a\u{202e}b", "a\u{202a}b", "a\u{2066}b", "a\u{2069}b", "a\tb", "a\u{7f}b",
                      "a\u{61c}b", "a\u{200e}b", "a\u{200f}b", "a\u{2028}b", "a\u{2029}b"])
    func deceptiveLabelsAreRefused(_ label: String) throws {
        let box = Sandbox()
        #expect(try box.cli("set", "k", "v").status == 0)
        let bytes = readBytes(box.storePath)
        let r = try Self.cli(box, ["enroll", "test-counting", "--label", label, "--json"], secrets: ["--pin-fd": "1"])
        #expect(r.status == 2 && r.error?.code == "invalid-argument" && r.error?.reason == "invalid-label", "\(r.out)")
        let unchanged = readBytes(box.storePath) == bytes
        #expect(unchanged, "the store is byte-identical")
        #expect(!KeybayMethod.isValidLabel(label) && MethodNames.isValidNewLabel("Work laptop ✓ (ä)"))
    }

    // MARK: whose store

    /// Method plugins are told the application id (a host field added after the first ABI 1
    /// host): enrolling and unlocking for two applications, the plugin sees each.
    @Test func methodPluginsSeeTheApplication() throws {
        let box = Sandbox()
        // The plugin's record is process-wide and other tests enroll at the same time: these
        // application ids are this test's own.
        let tag = UUID().uuidString.prefix(8).lowercased()
        let first = "com.example.first-\(tag)", second = "com.example.second-\(tag)"
        let seen = { () -> [String] in
            guard let handle = dlopen(testPluginDirectory + "/libkeybay-test-counting.so", RTLD_NOW | RTLD_NOLOAD),
                  let symbol = dlsym(handle, "keybay_test_counting_applications") else { return [] }
            let text = String(cString: unsafeBitCast(symbol, to: (@convention(c) () -> UnsafePointer<CChar>).self)())
            return text.split(separator: "\n").map(String.init).filter { $0.hasSuffix(tag) }
        }
        // In process: the record is read from the plugin's memory in this process
        // (PluginIsolationTests sees the application id reach an isolated plugin).
        func configuration(_ app: String) throws -> KeybayConfiguration {
            var c = try box.configuration(app: app)
            c.pluginIsolation = .inProcess
            return c
        }
        var methods: [String: String] = [:]
        for app in [first, second] {
            let session = try KeybayStore.open(configuration(app), interaction: ScriptedInteraction(["5", "5"]))
            methods[app] = try session.auth.add(plugin: "test-counting").id
            session.close()
        }
        try KeybayStore.open(configuration(first), method: methods[first], interaction: ScriptedInteraction(["5"])).close()
        #expect(seen() == ["enroll \(first)", "enroll \(second)", "unwrap \(first)"])
    }

    /// A terminal prompt says whose secret it asks for: the application and the method's label.
    @Test func promptsNameTheApplicationAndTheLabel() throws {
        let box = Sandbox()
        _ = try Self.passphraseStore(box, passphrase: "pw", label: "work laptop")
        let script = packageDirectory + "/Tests/pty/prompt_text.py"
        let r = try run("/usr/bin/python3", [script, cliPath, "get", "k"], environment: box.environment)
        #expect(r.out.contains("Passphrase for \(box.app) (work laptop): "), "\(r.out)")
    }
}
