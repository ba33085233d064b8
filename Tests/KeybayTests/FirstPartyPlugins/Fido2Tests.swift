// SPDX-License-Identifier: Apache-2.0
import CKeybayPlugin
import Foundation
import Glibc
import Synchronization
import Testing
@testable import Keybay

/// The virtual security keys of libkeybay-test-fido2.so (Tests/VirtualAuthenticator), configured
/// through the plugin's exported test functions. The library is the same one the plugin loader
/// opens, so the settings reach the devices the plugin talks to through libfido2.
enum VirtualKeys {
    nonisolated(unsafe) private static let handle: UnsafeMutableRawPointer? = dlopen(testPluginDirectory + "/libkeybay-test-fido2.so", RTLD_NOW | RTLD_LOCAL)

    private static func symbol<T>(_ name: String, as type: T.Type) -> T {
        guard let handle, let s = dlsym(handle, name) else { fatalError("libkeybay-test-fido2.so lacks \(name)") }
        return unsafeBitCast(s, to: type)
    }

    static func reset() {
        symbol("keybay_test_fido2_reset", as: (@convention(c) () -> Void).self)()
    }

    static func set(_ name: String, _ value: String) { set(0, name, value) }
    static func get(_ name: String) -> Int { get(0, name) }

    static func set(_ device: Int32, _ name: String, _ value: String) {
        let f = symbol("keybay_test_fido2_set", as: (@convention(c) (Int32, UnsafePointer<CChar>, UnsafePointer<CChar>) -> Int32).self)
        precondition(f(device, name, value) == 0, "virtual key setting \(name)=\(value) refused")
    }

    static func get(_ device: Int32, _ name: String) -> Int {
        let f = symbol("keybay_test_fido2_get", as: (@convention(c) (Int32, UnsafePointer<CChar>) -> Int).self)
        return f(device, name)
    }
}

/// The fido2 method through the whole stack: KeybayStore/auth → plugin loader → host bridge →
/// libkeybay-test-fido2.so (the fido2 core) → the real libfido2 → a virtual CTAP2 key. The
/// virtual keys are process-wide, hence a serialized suite that resets them in every test.
@Suite(.serialized) struct Fido2Tests {
    /// The virtual key lives in the test plugin's memory, which the tests read and set (its PIN,
    /// its counters): the plugin runs in this process. The fido2 method's code through the helper
    /// is PluginIsolationTests' (the shipped fido2 plugin's probe, isolated).
    static func configuration(_ box: Sandbox, app: String? = nil) throws -> KeybayConfiguration {
        var c = try box.configuration(app: app)
        c.pluginIsolation = .inProcess
        return c
    }

    static let plugin = "test-fido2"

    /// A store with a record and a FIDO2 method enrolled with `options` (PIN answers first).
    static func enrolledStore(_ box: Sandbox, options: [(String, String)] = [("pin", "required")], answers: [String] = ["1234"])
        async throws -> (config: KeybayConfiguration, method: KeybayMethod) {
        let config = try Self.configuration(box)
        let s = try await KeybayStore.open(config, interaction: ScriptedInteraction(answers))
        try s.set("service/token", string: "correct horse")
        let method = try await s.auth.add(plugin: plugin, options: options, label: "yubikey")
        s.close()
        return (config, method)
    }

    static func open(_ config: KeybayConfiguration, _ method: KeybayMethod, _ interaction: ScriptedInteraction) async throws -> KeybaySession {
        try await KeybayStore.open(config, method: method.id, interaction: interaction)
    }

    @Test func aPassphraseAndAKeyEachOpenTheStoreAndRemovingTheKeyAsksForNothing() async throws {
        VirtualKeys.reset()
        VirtualKeys.set("pin", "1234")
        let box = Sandbox()
        let config = try Self.configuration(box)
        let enroll = ScriptedInteraction(["pass phrase", "pass phrase", "1234"])
        let s = try await KeybayStore.open(config, interaction: enroll)
        try s.set("service/token", string: "correct horse")
        let passphrase = try await s.auth.add(plugin: "passphrase", options: fastPassphraseOptions, label: "passphrase")
        let key = try await s.auth.add(plugin: Self.plugin, options: [("pin", "required")], label: "yubikey")
        #expect(try s.auth.list() == [passphrase, key])
        // The PIN was asked once, with the key's retry count; one credential, three touches
        // (the credential and two checking assertions that must agree).
        #expect(enroll.requests.withLock { $0.filter { $0.kind == .pin }.map(\.retries) } == [8])
        #expect(VirtualKeys.get("credentials") == 1 && VirtualKeys.get("touches") == 3 && VirtualKeys.get("assertions") == 2)
        #expect(enroll.messages.withLock { $0.contains { $0.contains("Touch your security key") } })
        let description = try s.auth.describe(key.id)
        #expect(description.hasPrefix("FIDO2 hmac-secret, rp com.example.test.keybay.local, PIN and touch, credential "), "\(description)")
        s.close()

        // Either method opens it.
        let byKey = ScriptedInteraction(["1234"])
        let k = try await Self.open(config, key, byKey)
        #expect(try k.getString("service/token") == "correct horse")
        #expect(byKey.askCount == 1 && byKey.lastRetries == 8)
        k.close()
        let byPassphrase = try await Self.open(config, passphrase, ScriptedInteraction(["pass phrase"]))
        #expect(try byPassphrase.getString("service/token") == "correct horse")
        byPassphrase.close()
        try await KeybayStore.open(config, method: key.id, interaction: ScriptedInteraction(["1234", "1234"])).auth.verify(key.id)

        // Opened with the key, removing the key re-seals the passphrase without asking for it
        // (and without talking to the key again).
        let opener = ScriptedInteraction(["1234"])
        let session = try await Self.open(config, key, opener)
        let assertionsAfterUnlock = VirtualKeys.get("assertions")
        try await session.auth.remove(key.id)
        #expect(opener.askCount == 1, "removal asked for a credential")
        #expect(VirtualKeys.get("assertions") == assertionsAfterUnlock, "removal talked to the key")
        #expect(try session.auth.list() == [passphrase])
        #expect(try session.getString("service/token") == "correct horse")
        let after = try await Self.open(config, passphrase, ScriptedInteraction(["pass phrase"]))
        #expect(try after.getString("service/token") == "correct horse")
        #expect(await keybayCode { _ = try await Self.open(config, key, ScriptedInteraction(["1234"])) } == .methodNotFound)
    }

    @Test func wrongPinsCountDownAndThreeInARowNeedTheKeyReplugged() async throws {
        VirtualKeys.reset()
        VirtualKeys.set("pin", "1234")
        let box = Sandbox()
        let (config, method) = try await Self.enrolledStore(box)
        let before = readBytes(box.storePath)

        let first = ScriptedInteraction(["0000"])
        let e1 = await keybayError { _ = try await Self.open(config, method, first) }
        #expect(e1?.code == .wrongSecret && e1?.reason == "wrong-pin" && e1?.triesLeft == 7, "\(String(describing: e1))")
        #expect(first.lastRetries == 8)
        let second = ScriptedInteraction(["0000"])
        let e2 = await keybayError { _ = try await Self.open(config, method, second) }
        #expect(e2?.code == .wrongSecret && e2?.reason == "wrong-pin" && e2?.triesLeft == 6, "\(String(describing: e2))")
        #expect(second.lastRetries == 7)
        // The third wrong PIN in a row: the key refuses PIN entry until it is re-plugged.
        let e3 = await keybayError { _ = try await Self.open(config, method, ScriptedInteraction(["0000"])) }
        #expect(e3?.code == .locked && e3?.reason == "pin-auth-blocked" && e3?.triesLeft == nil, "\(String(describing: e3))")
        #expect(await keybayCode { _ = try await Self.open(config, method, ScriptedInteraction(["1234"])) } == .locked)
        #expect(VirtualKeys.get("retries") == 5)
        #expect(readBytes(box.storePath) == before, "a failed unlock changed the store")

        VirtualKeys.set("replug", "1")
        let right = ScriptedInteraction(["1234"])
        let s = try await Self.open(config, method, right)
        #expect(try s.getString("service/token") == "correct horse")
        #expect(right.lastRetries == 5 && VirtualKeys.get("retries") == 8)
    }

    @Test func aBlockedPinIsLockedAndNotAskedFor() async throws {
        VirtualKeys.reset()
        VirtualKeys.set("pin", "1234")
        let box = Sandbox()
        let (config, method) = try await Self.enrolledStore(box)
        VirtualKeys.set("retries", "1")
        let e = await keybayError { _ = try await Self.open(config, method, ScriptedInteraction(["0000"])) }
        #expect(e?.code == .locked && e?.reason == "pin-blocked" && e?.triesLeft == 0, "\(String(describing: e))")
        let again = ScriptedInteraction(["1234"])
        let e2 = await keybayError { _ = try await Self.open(config, method, again) }
        #expect(e2?.code == .locked && e2?.reason == "pin-blocked" && e2?.triesLeft == 0, "\(String(describing: e2))")
        #expect(again.askCount == 0, "the PIN of a blocked key was asked for")
    }

    /// The default relying party comes from the application id, so two applications' credentials
    /// are for different parties; a credential made for the old fixed default (`keybay.local`,
    /// what stores enrolled before carry in their params) still opens.
    @Test func theDefaultRelyingPartyIsTheApplications() async throws {
        VirtualKeys.reset()
        let box = Sandbox()
        var described: [String] = []
        for app in ["com.example.Notes_App", "org.other"] {
            let config = try Self.configuration(box, app: app)
            let s = try await KeybayStore.open(config, interaction: ScriptedInteraction([]))
            let method = try await s.auth.add(plugin: Self.plugin)
            described.append(try s.auth.describe(method.id))
            s.close()
        }
        #expect(described[0].contains("rp com.example.notes-app.keybay.local,") && described[1].contains("rp org.other.keybay.local,"), "\(described)")
        let config = try Self.configuration(box, app: "com.example.old")
        let s = try await KeybayStore.open(config, interaction: ScriptedInteraction([]))
        try s.set("k", string: "v")
        let old = try await s.auth.add(plugin: Self.plugin, options: [("rp", "keybay.local")])
        s.close()
        let reopened = try await Self.open(config, old, ScriptedInteraction([]))
        #expect(try reopened.getString("k") == "v" && reopened.auth.describe(old.id).contains("rp keybay.local,"))
        reopened.close()
    }

    @Test func aRefusedTouchCancelsATimeoutTimesOutAndTheHostCanCancel() async throws {
        VirtualKeys.reset()
        let box = Sandbox()
        // No PIN on the key: the default mode is touch only.
        let (config, method) = try await Self.enrolledStore(box, options: [], answers: [])
        let described = try await Self.open(config, method, ScriptedInteraction([])).auth.describe(method.id)
        #expect(described.contains("rp com.example.test.keybay.local, touch,"), "\(described)")

        VirtualKeys.set("deny", "1")
        let denied = await keybayError { _ = try await Self.open(config, method, ScriptedInteraction([])) }
        #expect(denied?.code == .cancelled && denied?.reason == "touch-refused", "\(String(describing: denied))")
        VirtualKeys.set("deny", "0")
        VirtualKeys.set("timeout", "1")
        #expect(await keybayCode { _ = try await Self.open(config, method, ScriptedInteraction([])) } == .timedOut)
        VirtualKeys.set("timeout", "0")

        // The touch never comes in time (two minutes: a hang guard, not a race); the host cancels
        // once the key waits for it: the plugin sends a CTAPHID_CANCEL and the key gives up.
        VirtualKeys.set("touch-delay-ms", "120000")
        let (touchesBefore, cancelsBefore) = (VirtualKeys.get("touches"), VirtualKeys.get("cancels"))
        let cancelling = ScriptedInteraction([], cancelAfter: "Touch your security key", when: { VirtualKeys.get("waiting-for-touch") == 1 })
        #expect(await keybayCode { _ = try await Self.open(config, method, cancelling) } == .cancelled)
        // Had the cancel not reached the key, it would have been touched in the end and the open
        // would have succeeded.
        #expect(VirtualKeys.get("cancels") > cancelsBefore && VirtualKeys.get("touches") == touchesBefore)
        VirtualKeys.set("touch-delay-ms", "0")

        // An enrollment refused at the touch changes nothing.
        let session = try await Self.open(config, method, ScriptedInteraction([]))
        VirtualKeys.set("deny", "1")
        let before = readBytes(box.storePath)
        #expect(await keybayCode { try await session.auth.add(plugin: Self.plugin, options: [("pin", "no")]) } == .cancelled)
        #expect(readBytes(box.storePath) == before)
        #expect(try session.auth.list() == [method])
    }

    @Test func aMissingKeyOrOneWithoutTheCredentialIsUnavailable() async throws {
        VirtualKeys.reset()
        // Enroll on key 1 (key 0 unplugged).
        VirtualKeys.set(0, "present", "0")
        VirtualKeys.set(1, "present", "1")
        let box = Sandbox()
        let (config, method) = try await Self.enrolledStore(box, options: [("pin", "no")], answers: [])

        VirtualKeys.set(1, "present", "0")
        let none = await keybayError { _ = try await Self.open(config, method, ScriptedInteraction([])) }
        #expect(none?.code == .methodUnavailable && none?.reason == "no-device", "\(String(describing: none))")

        // Only another key (another master secret): it does not hold the credential.
        VirtualKeys.set(0, "present", "1")
        let other = await keybayError { _ = try await Self.open(config, method, ScriptedInteraction([])) }
        #expect(other?.code == .methodUnavailable && other?.reason == "credential-not-held", "\(String(describing: other))")
        #expect(VirtualKeys.get(0, "touches") == 0, "the wrong key was asked for a touch")

        // Both plugged in: the one holding the credential is found without touching the other.
        VirtualKeys.set(1, "present", "1")
        let s = try await Self.open(config, method, ScriptedInteraction([]))
        #expect(try s.getString("service/token") == "correct horse")
        #expect(VirtualKeys.get(0, "touches") == 0 && VirtualKeys.get(1, "touches") == 4)

        // Enrollment with two keys plugged in needs device=PATH and names them.
        let twoKeys = await keybayError { try await s.auth.add(plugin: Self.plugin, options: [("pin", "no")]) }
        #expect(twoKeys?.code == .invalidArgument && twoKeys?.reason == "several-devices" && twoKeys?.message.contains("virtual:0, virtual:1") == true, "\(String(describing: twoKeys))")
        let picked = try await s.auth.add(plugin: Self.plugin, options: [("pin", "no"), ("device", "virtual:0")], label: "second key")
        #expect(VirtualKeys.get(0, "credentials") == 1)
        VirtualKeys.set(1, "present", "0")
        #expect(try await Self.open(config, picked, ScriptedInteraction([])).getString("service/token") == "correct horse")
        #expect(await keybayCode { try await s.auth.add(plugin: Self.plugin, options: [("device", "virtual:3")]) } == .methodUnavailable)
        // No key at all: probe says unavailable (without prompting). (Only this plugin is
        // probed: KeybayPlugins.list() would also probe the counting plugin other suites count.)
        let loaded = try PluginLoader.load(id: Self.plugin, kind: KEYBAY_KIND_METHOD, search: config.pluginSearch)
        #expect(loaded.probe() == nil)
        VirtualKeys.set(0, "present", "0")
        let reason = loaded.probe()
        #expect(reason?.contains("no FIDO2 security key") == true, "\(String(describing: reason))")
    }

    @Test func theUnlockModeMustMatchTheEnrollment() async throws {
        VirtualKeys.reset()
        let box = Sandbox()
        let (config, method) = try await Self.enrolledStore(box, options: [("pin", "no"), ("presence", "required")], answers: [])
        // A key that now verifies the user on every request would derive the other hmac-secret.
        VirtualKeys.set("force-uv", "1")
        let e = await keybayError { _ = try await Self.open(config, method, ScriptedInteraction([])) }
        #expect(e?.code == .unsupported && e?.reason == "uv-mismatch", "\(String(describing: e))")
        VirtualKeys.set("force-uv", "0")

        // uv=required without a PIN uses the key's built-in verification...
        VirtualKeys.set("uv", "1")
        let s = try await Self.open(config, method, ScriptedInteraction([]))
        let uvMethod = try await s.auth.add(plugin: Self.plugin, options: [("uv", "required"), ("pin", "no")], label: "fingerprint")
        #expect(try s.auth.describe(uvMethod.id).contains("built-in verification and touch"))
        let byUV = ScriptedInteraction([])
        #expect(try await Self.open(config, uvMethod, byUV).getString("service/token") == "correct horse")
        #expect(byUV.askCount == 0)
        // ...and is refused once the key no longer offers it.
        VirtualKeys.set("uv", "0")
        let noUV = await keybayError { _ = try await Self.open(config, uvMethod, ScriptedInteraction([])) }
        #expect(noUV?.code == .unsupported && noUV?.reason == "no-builtin-uv", "\(String(describing: noUV))")
        // Options the key cannot honour are refused at enrollment.
        #expect(await keybayCode { try await s.auth.add(plugin: Self.plugin, options: [("uv", "required"), ("pin", "no")]) } == .unsupported)
        #expect(await keybayCode { try await s.auth.add(plugin: Self.plugin, options: [("pin", "required")]) } == .unsupported)
        for bad in [[("pin", "maybe")], [("bogus", "1")], [("rp", "Not A Domain")], [("pin", "no"), ("pin", "no")]] {
            #expect(await keybayCode { try await s.auth.add(plugin: Self.plugin, options: bad) } == .invalidArgument, "\(bad)")
        }
    }

    @Test func presenceNoAndBothPinProtocolsGiveTheSameSecret() async throws {
        VirtualKeys.reset()
        VirtualKeys.set("pin", "1234")
        VirtualKeys.set("protocols", "1")
        VirtualKeys.set("permissions", "0")
        let box = Sandbox()
        // Enrolled with PIN protocol 1 and CTAP 2.0 PIN tokens, no touch needed at unlock.
        let (config, method) = try await Self.enrolledStore(box, options: [("pin", "required"), ("presence", "no"), ("rp", "example.org")])
        let touches = VirtualKeys.get("touches")
        #expect(touches == 1, "only the credential needed a touch")
        // The same key now offering protocol 2 and permission tokens derives the same secret.
        VirtualKeys.set("protocols", "2,1")
        VirtualKeys.set("permissions", "1")
        let s = try await Self.open(config, method, ScriptedInteraction(["1234"]))
        #expect(try s.getString("service/token") == "correct horse")
        #expect(VirtualKeys.get("touches") == touches)
        #expect(try s.auth.describe(method.id).contains("rp example.org, PIN, no touch"))
    }

    @Test func malformedOrTamperedParametersAreRefusedBeforeAnyWork() async throws {
        VirtualKeys.reset()
        VirtualKeys.set("pin", "1234")
        let box = Sandbox()
        let (config, method) = try await Self.enrolledStore(box)
        let session = try await Self.open(config, method, ScriptedInteraction(["1234"]))
        let params = try session.freshSnapshot().methods[0].params
        let rpLength = Int(params[98])
        #expect(params.count == 101 + rpLength + 32 && params[0] == 1 && params[1] == 0x03)
        let plugin = try session.loadMethodPlugin(Self.plugin)

        func tampered(_ change: (inout [UInt8]) -> Void) -> [UInt8] {
            var p = params
            change(&p)
            return p
        }
        let malformed: [[UInt8]] = [
            [], Array(params.dropLast()), params + [0],
            tampered { $0[0] = 2 },                  // format
            tampered { $0[1] |= 0x08 },              // unknown mode bit
            tampered { $0[98] = 0 },                 // rp length
            tampered { $0[98] = 254 },               // rp length
            tampered { $0[99] = UInt8(ascii: "-") }, // rp id characters
            tampered { $0[99 + rpLength] = 0xff },   // credential id length
        ]
        let opens = VirtualKeys.get("opens")
        for p in malformed {
            let interaction = ScriptedInteraction(["1234"])
            #expect(keybayCode { _ = try plugin.unwrap(params: p, interaction: interaction, about: .none) } == .malformed, "\(p.count) bytes")
            #expect(interaction.askCount == 0)
        }
        #expect(VirtualKeys.get("opens") == opens, "malformed parameters reached a device")

        // Well-formed but wrong: a changed credential id is not on the key; a changed public
        // key does not verify the answer; a changed PRF input gives another secret, which the
        // store refuses.
        let foreignID = tampered { $0[$0.count - 1] ^= 1 }
        #expect(keybayCode { _ = try plugin.unwrap(params: foreignID, interaction: ScriptedInteraction(["1234"]), about: .none) } == .methodUnavailable)
        let otherKey = tampered { $0[40] ^= 1 }
        #expect(keybayCode { _ = try plugin.unwrap(params: otherKey, interaction: ScriptedInteraction(["1234"]), about: .none) } == .wrongSecret)
        let right = try plugin.unwrap(params: params, interaction: ScriptedInteraction(["1234"]), about: .none)
        let otherInput = try plugin.unwrap(params: tampered { $0[2] ^= 1 }, interaction: ScriptedInteraction(["1234"]), about: .none)
        #expect(!right.equals(otherInput))
        #expect(try plugin.describe(params: params).contains("PIN and touch"))
        #expect(keybayCode { _ = try plugin.describe(params: Array(params.prefix(50))) } == .malformed)
    }

    /// The CLI in separate processes: each process gets fresh virtual keys from
    /// KEYBAY_TEST_FIDO2, and the same seed makes the same key, so a credential made by `enroll`
    /// is found again by `get`.
    @Test func theCLIEnrollsAndUnlocksWithPinFd() throws {
        let box = Sandbox()
        func environment(keys: String = "0:pin=1234;0:seed=cli") -> [String: String] {
            var env = box.environment
            env["KEYBAY_TEST_FIDO2"] = keys
            return env
        }
        func cli(_ args: [String], keys: String = "0:pin=1234;0:seed=cli", pin: String? = nil) throws -> RunResult {
            try box.cli(args, secret: pin, option: "--pin-fd", environment: environment(keys: keys))
        }
        #expect(try cli(["set", "service/token", "correct horse"]).status == 0)
        let enrolled = try cli(["enroll", "test-fido2", "--opt", "pin=required", "--label", "key", "--json"], pin: "1234")
        #expect(enrolled.status == 0 && enrolled.out.contains("\"plugin\":\"test-fido2\""), "\(enrolled.stderr)")
        #expect(enrolled.stderr.contains("Touch your security key"))
        #expect(try cli(["status", "--json"]).out.contains("\"state\":\"protected\""))

        let right = try cli(["get", "service/token"], pin: "1234")
        #expect(right.status == 0 && right.out == "correct horse", "\(right.stderr)")
        let noInput = try cli(["get", "service/token", "--no-input", "--json"])
        #expect(noInput.status == 4 && noInput.error?.code == "interaction-required", "\(noInput.out)")
        let wrong = try cli(["get", "service/token", "--json"], pin: "9999")
        #expect(wrong.status == 1 && wrong.error?.code == "wrong-secret" && wrong.error?.reason == "wrong-pin" && wrong.error?.triesLeft == 7,
                "\(wrong.out)")
        #expect(!wrong.stderr.contains("9999") && !wrong.out.contains("9999"))
        let absent = try cli(["get", "service/token", "--json"], keys: "0:present=0", pin: "1234")
        #expect(absent.status == 1 && absent.error?.code == "method-unavailable" && absent.error?.reason == "no-device", "\(absent.out)")
        let otherKey = try cli(["get", "service/token", "--json"], keys: "0:pin=1234;0:seed=other", pin: "1234")
        #expect(otherKey.status == 1 && otherKey.error?.code == "method-unavailable" && otherKey.error?.reason == "credential-not-held",
                "\(otherKey.out)")
        #expect(try cli(["verify"], pin: "1234").status == 0)
        let badOption = try cli(["enroll", "test-fido2", "--opt", "presence=sometimes"], pin: "1234")
        #expect(badOption.status == 2, "\(badOption.stderr)")

        let id = try #require(try methodIDs(box, environment: environment()).first, "list shows no method")
        let removed = try cli(["remove", id], pin: "1234")
        #expect(removed.status == 0, "\(removed.stderr)")
        #expect(try cli(["get", "service/token"]).out == "correct horse")
    }

    /// Nothing links libfido2: the fido2 plugin opens libfido2.so.1 on its first probe, enroll or
    /// unwrap, so loading it maps none of libfido2's dependencies. No first-party C plugin drags
    /// the Swift runtime or libstdc++ into its host. Listing plugins probes the real fido2 plugin
    /// (which opens the real libfido2) without prompting: stdin is empty and --no-input is given,
    /// so a prompt would fail the command.
    @Test func pluginsLinkOnlyTheirCLibrariesAndListingNeverPrompts() throws {
        let env = ["PATH": "/usr/bin:/bin"]
        // ldd must have listed something: an empty answer would pass every "does not link".
        func needed(_ path: String) throws -> String {
            let r = try run("/usr/bin/ldd", [path], environment: env)
            #expect(r.status == 0 && r.out.contains("libc.so") && r.out.contains("libsodium"), "ldd \(path): \(r.stderr)")
            return r.out
        }
        let cli = try needed(cliPath)
        #expect(!cli.contains("libfido2") && !cli.contains("libcrypto"))
        for plugin in ["file-root", "passphrase", "fido2", "tpm2"] {
            let needed = try needed(pluginDirectory + "/libkeybay-\(plugin).so")
            #expect(!needed.contains("libfido2") && !needed.contains("libcrypto") && !needed.contains("libtss2"),
                    "libkeybay-\(plugin).so links libfido2, libcrypto or tss2:\n\(needed)")
            // (Sanitized builds link the runtimes dynamically on purpose: see Package.swift.)
            if sanitizer == nil || sanitizerPluginDirectory != nil {
                #expect(!needed.contains("libswift") && !needed.contains("libstdc++"), "libkeybay-\(plugin).so links a runtime:\n\(needed)")
            }
        }

        let box = Sandbox()
        let listed = try run(cliPath, ["plugins", "--json", "--no-input"], environment: box.environment, stdin: [])
        #expect(listed.status == 0, "\(listed.stderr)")
        let entry = listed.out.components(separatedBy: "},{").first { $0.contains("\"id\":\"fido2\"") }
        #expect(entry?.contains("\"available\":") == true, "\(entry ?? "")")
    }

    static let hidrawPresent = ((try? FileManager.default.contentsOfDirectory(atPath: "/dev"))?.contains { $0.hasPrefix("hidraw") }) ?? false

    /// Without any HID device the real fido2 plugin's probe says no key is there. (Where
    /// /dev/hidraw* exists a real key may answer: recorded as skipped.)
    @Test(.enabled(if: !Fido2Tests.hidrawPresent, "a /dev/hidraw* device is present, so a real security key may answer the probe"))
    func withoutADeviceTheRealPluginSaysNoKeyIsThere() throws {
        let box = Sandbox()
        let listed = try run(cliPath, ["plugins", "--json", "--no-input"], environment: box.environment, stdin: [])
        let entry = listed.out.components(separatedBy: "},{").first { $0.contains("\"id\":\"fido2\"") }
        #expect(entry?.contains("\"available\":false") == true && entry?.contains("no FIDO2 security key") == true, "\(entry ?? "")")
    }

    /// A libfido2.so.1 that lacks functions the plugin needs (found first through
    /// LD_LIBRARY_PATH) leaves the method unavailable, with a reason naming the library and the
    /// missing function: no crash and no half-filled function table.
    @Test func anIncompleteLibfido2LeavesTheMethodUnavailable() throws {
        let box = Sandbox()
        let fake = box.root + "/fake-libfido2"
        mkdir(fake, 0o755)
        let source = fake + "/fake.c"
        try "void fido_init(int flags) { (void)flags; }\n".write(toFile: source, atomically: true, encoding: .utf8)
        let cc = try run("/usr/bin/cc", ["-shared", "-fPIC", "-o", fake + "/libfido2.so.1", source], environment: ["PATH": "/usr/bin:/bin"])
        try #require(cc.status == 0, "\(cc.stderr)")
        var environment = box.environment
        environment["LD_LIBRARY_PATH"] = fake
        let listed = try run(cliPath, ["plugins", "--json", "--no-input"], environment: environment, stdin: [])
        #expect(listed.status == 0, "\(listed.stderr)")
        let entry = try #require(listed.out.components(separatedBy: "},{").first { $0.contains("\"id\":\"fido2\"") })
        #expect(entry.contains("\"available\":false"), "\(entry)")
        #expect(entry.contains("cannot load libfido2.so.1") && entry.contains("undefined symbol"), "\(entry)")
    }
}
