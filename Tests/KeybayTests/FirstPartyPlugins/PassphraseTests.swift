// SPDX-License-Identifier: Apache-2.0
import Foundation
import Glibc
import Testing
@testable import Keybay

/// The passphrase plugin through the real loader, libargon2 and the CLI.
@Suite struct PassphraseTests {
    /// Small explicit Argon2id parameters keep the tests fast; calibration has its own test.
    static let fast = fastPassphraseFlags

    /// Runs the CLI with `secret` on descriptor 3 as `--passphrase-fd 3`.
    static func cli(_ box: Sandbox, _ args: [String], passphrase: String? = nil) throws -> RunResult {
        try box.cli(args, secret: passphrase, option: "--passphrase-fd")
    }

    @Test func enrollUnlockWrongPassphraseAndRemoveThroughTheCLI() throws {
        let box = Sandbox()
        #expect(try box.cli("set", "service/token", "correct horse").status == 0)
        let enrolled = try Self.cli(box, ["enroll", "passphrase", "--label", "main", "--json"] + Self.fast, passphrase: "hunter2 is long")
        #expect(enrolled.status == 0, "\(enrolled.stderr)")
        #expect(enrolled.out.contains("\"plugin\":\"passphrase\"") && enrolled.out.contains("\"label\":\"main\""))
        #expect(try box.cli("status", "--json").out.contains("\"state\":\"protected\""))

        let noInput = try box.cli("get", "service/token", "--no-input")
        #expect(noInput.status == 4 && noInput.stdout.isEmpty, "\(noInput.stderr)")

        let right = try Self.cli(box, ["get", "service/token"], passphrase: "hunter2 is long")
        #expect(right.status == 0 && right.out == "correct horse", "\(right.stderr)")

        let before = readBytes(box.storePath)
        let wrong = try Self.cli(box, ["get", "service/token"], passphrase: "hunter3 is long")
        #expect(wrong.status == 1 && wrong.stdout.isEmpty && wrong.stderr.contains("wrong-secret"))
        #expect(readBytes(box.storePath) == before, "a wrong passphrase changed the store")
        #expect(!wrong.stderr.contains("hunter"), "a secret leaked into an error")

        #expect(try Self.cli(box, ["verify"], passphrase: "hunter2 is long").status == 0)
        #expect(try Self.cli(box, ["verify"], passphrase: "nope").status == 1)

        // A second passphrase is refused.
        let first = try #require(try methodIDs(box).first, "list shows no method")
        let second = try Self.cli(box, ["enroll", "passphrase", "--json"] + Self.fast, passphrase: "hunter2 is long")
        #expect(second.status == 2 && second.error?.code == "invalid-argument" && second.error?.reason == "one-per-store"
                && second.error?.methodID == first && second.error?.pluginID == "passphrase", "\(second.out)")

        let copyBefore = readBytes(box.storePath)!
        let id = try #require(try methodIDs(box).first, "list shows no method")
        let removed = try Self.cli(box, ["remove", id], passphrase: "hunter2 is long")
        #expect(removed.status == 0, "\(removed.stderr)")
        #expect(try box.cli("status", "--json").out.contains("\"state\":\"platform-only\""))
        #expect(try box.cli("get", "service/token").out == "correct horse")

        // Put the old, protected copy back: the root's rollback floor refuses it before any
        // passphrase is asked for (with the old root file back too, it would still need one).
        let newFile = readBytes(box.storePath)!
        writeBytes(box.storePath, copyBefore)
        let rolledBack = try box.cli("get", "service/token", "--no-input")
        #expect(rolledBack.status == 1 && rolledBack.stderr.contains("[rolled-back]"), "\(rolledBack.stderr)")
        writeBytes(box.storePath, newFile)
        #expect(try box.cli("get", "service/token").status == 0)
    }

    @Test func parametersAreCheckedBeforeAnyWork() throws {
        let box = Sandbox()
        for bad in [["--opt", "memory-kib=99999999"], ["--opt", "iterations=17"], ["--opt", "lanes=9"], ["--opt", "bogus=1"]] {
            let r = try Self.cli(box, ["enroll", "passphrase"] + bad, passphrase: "pw")
            #expect(r.status == 2, "\(bad): \(r.status) \(r.stderr)")
        }
        // Refused before the store was created: nothing on a fresh home.
        #expect(try box.cli("status", "--json").out.contains("\"state\":\"absent\""))
    }

    /// The plugin takes 1 to 1024 bytes; outside that it returns INVALID_OPTION (.invalidArgument).
    @Test func emptyAndOverlongPassphrasesAreRefused() async throws {
        for passphrase in ["", String(repeating: "x", count: 1025)] {
            let box = Sandbox()
            let s = try await KeybayStore.open(box.configuration(), interaction: ScriptedInteraction([passphrase, passphrase]))
            #expect(await keybayCode { try await s.auth.add(plugin: "passphrase", options: fastPassphraseOptions) } == .invalidArgument,
                    "a \(passphrase.utf8.count)-byte passphrase")
        }
    }

    @Test func calibrationReportsProgressAndNeverGoesBelowTheRFC9106Floor() async throws {
        let box = Sandbox()
        let interaction = ScriptedInteraction(["calibrated", "calibrated"])
        let s = try await KeybayStore.open(box.configuration(), interaction: interaction)
        let method = try await s.auth.add(plugin: "passphrase", options: [("target-ms", "200")])
        let messages = interaction.messages.withLock { $0 }
        #expect(messages.contains { $0.contains("calibrating") }, "\(messages)")
        let description = try s.auth.describe(method.id)
        #expect(description.contains("Argon2id"), "\(description)")
        // Never below RFC 9106's 64 MiB / t=3 when calibrating, whatever the target.
        let mib = description.split(separator: ",").first { $0.hasSuffix("MiB") }.flatMap { Int($0.split(separator: " ").first ?? "") }
        let t = description.split(separator: ",").first { $0.hasPrefix(" t=") }.flatMap { Int($0.dropFirst(3)) }
        #expect((mib ?? 0) >= 64 && (t ?? 0) >= 3, "\(description)")
        let reopened = try await KeybayStore.open(box.configuration(), method: method.id, interaction: ScriptedInteraction(["calibrated"]))
        #expect(try reopened.keys() == [])
    }
}

extension PassphraseTests {
    /// Examples/HostApp, built out of tree against the package: enrolls a passphrase on first
    /// run, then opens only with it.
    @Test func theHostExampleEnrollsAndReadsBack() throws {
        let box = Sandbox()
        let example = packageDirectory + "/Examples/HostApp"
        let build = try run("/bin/sh", ["-c", "exec swift build --package-path \"$0\" --scratch-path \"$1\" 2>&1", example, packageDirectory + "/.build/example-host"],
                            environment: ["PATH": ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin", "HOME": box.root])
        try #require(build.status == 0, "\(build.out)")
        let host = packageDirectory + "/.build/example-host/debug/keybay-example-host"
        var env = box.environment
        env["KEYBAY_PLUGIN_PATH"] = unsanitizedPluginDirectory
        let first = try run(host, ["--passphrase-stdin"], environment: env, stdin: Array("pw\npw\npw\n".utf8))
        #expect(first.status == 0 && first.out.contains("enrolled passphrase method"), "\(first.out) \(first.stderr)")
        let again = try run(host, ["--passphrase-stdin"], environment: env, stdin: Array("pw\n".utf8))
        #expect(again.status == 0 && again.out.contains("api/token is 17 characters long"))
        let wrong = try run(host, ["--passphrase-stdin"], environment: env, stdin: Array("nope\n".utf8))
        #expect(wrong.status == 1 && wrong.out.contains("wrong-secret"))

        // $KEYBAY_ROOT is the library's default root too, not only the CLI's. (The root used,
        // test-floor-crash, is built with the sanitizer under scripts/sanitizers.sh, and the
        // example host, built without one, cannot load it: that part runs without a sanitizer.)
        if sanitizer == nil { try Self.theHostTakesItsRootFromTheEnvironment(host) }

        // The second example: a recovery key in two phases, and the fields of KeybayError.
        let recoveryBox = Sandbox(app: "com.example.recoveryhost")
        var recoveryEnv = recoveryBox.environment
        recoveryEnv["KEYBAY_PLUGIN_PATH"] = unsanitizedPluginDirectory
        let recovery = try run(packageDirectory + "/.build/example-host/debug/keybay-example-recovery", [], environment: recoveryEnv)
        let lines = recovery.out.split(separator: "\n").map(String.init)
        #expect(recovery.status == 0 && lines.count == 4, "\(recovery.out) \(recovery.stderr)")
        if recovery.status == 0 && lines.count == 4 {
            let id = String(lines[0].dropFirst("stored method ".count).prefix(32))
            let key = lines[1]
            #expect(lines[2] == "wrong key: wrong-secret for method \(id)", "\(lines[2])")
            #expect(lines[3] == "missing: store-not-found at \(recoveryBox.dataHome)/keybay/com.example.recoveryhost.missing/keybay.v2.store", "\(lines[3])")
            // The key it showed opens the store.
            let get = try run(cliPath, ["get", "api/token", "--method", id, "--recovery-key-fd", "0"], environment: recoveryEnv.merging(["KEYBAY_APP_ID": "com.example.recoveryhost"]) { $1 },
                              stdin: Array(key.utf8))
            #expect(get.status == 0 && get.out == "example-token-123", "\(get.stderr)")
        }
    }

    /// The example host, run with `KEYBAY_ROOT=test-floor-crash`, makes its store on that root.
    static func theHostTakesItsRootFromTheEnvironment(_ host: String) throws {
        let other = Sandbox(app: "com.example.hostapp")
        var rooted = other.environment
        rooted["KEYBAY_PLUGIN_PATH"] = unsanitizedPluginDirectory + ":" + testPluginDirectory
        rooted["KEYBAY_ROOT"] = "test-floor-crash"
        rooted["KEYBAY_TEST_WRAPPED_ROOT"] = unsanitizedPluginDirectory + "/libkeybay-file-root.so"
        let created = try run(host, ["--passphrase-stdin"], environment: rooted, stdin: Array("pw\npw\npw\n".utf8))
        #expect(created.status == 0, "\(created.out) \(created.stderr)")
        let status = try run(cliPath, ["status", "--json"], environment: rooted)
        #expect(status.out.contains("\"rootPlugin\":\"test-floor-crash\""), "\(status.out)")
    }

    /// The core and the CLI link libsodium only; libargon2 comes with the passphrase plugin.
    @Test func onlyThePluginLinksLibargon2() throws {
        let cli = try run("/usr/bin/ldd", [cliPath], environment: ["PATH": "/usr/bin:/bin"]).out
        #expect(cli.contains("libsodium") && !cli.contains("libargon2") && !cli.contains("libfido2") && !cli.contains("libFoundation"))
        let plugin = try run("/usr/bin/ldd", [buildDirectory + "/libkeybay-passphrase.so"], environment: ["PATH": "/usr/bin:/bin"]).out
        #expect(plugin.contains("libargon2"))
    }
}

extension PassphraseTests {
    /// Only the plugins a store needs are loaded: the dynamic loader's own log of a CLI `get`.
    @Test func aCommandLoadsOnlyThePluginsItsStoreNeeds() throws {
        func loaded(_ box: Sandbox, _ args: [String], passphrase: String? = nil, environment: [String: String]? = nil) throws -> Set<String> {
            var env = environment ?? box.environment
            env["LD_DEBUG"] = "files"
            let r = try box.cli(args, secret: passphrase, option: nil, environment: env)
            return Set(r.stderr.split(separator: "\n").compactMap { line in
                line.range(of: "libkeybay-[a-z0-9._-]+\\.so", options: .regularExpression).map { String(line[$0]) }
            })
        }
        let box = Sandbox()
        #expect(try box.cli("set", "k", "v").status == 0)
        #expect(try loaded(box, ["get", "k"]) == ["libkeybay-file-root.so"])
        #expect(try Self.cli(box, ["enroll", "passphrase"] + Self.fast, passphrase: "pw").status == 0)
        #expect(try loaded(box, ["status"]) == ["libkeybay-file-root.so"], "status never loads a method plugin")
        // The method runs in its helper, whose loader says nothing on the CLI's stderr; in process the CLI loads it.
        #expect(try loaded(box, ["get", "k", "--passphrase-fd", "3"], passphrase: "pw") == ["libkeybay-file-root.so"])
        var inProcess = box.environment
        inProcess["KEYBAY_PLUGIN_ISOLATION"] = "none"
        #expect(try loaded(box, ["get", "k", "--passphrase-fd", "3"], passphrase: "pw", environment: inProcess) == ["libkeybay-file-root.so", "libkeybay-passphrase.so"])
    }
}
