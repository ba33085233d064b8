// SPDX-License-Identifier: Apache-2.0
import Foundation
import Glibc
import Testing

/// The pkcs11 method through the CLI on SoftHSM2 tokens the tests make (SoftHSMTokens): enroll
/// and unlock with RSA-2048 and P-256 keys, a wrong PIN, the token's configuration gone, two
/// tokens, an explicit module, and plugin-check with the real PIN.
@Suite struct Pkcs11Tests {
    static let keyTypes = ["rsa:2048", "EC:prime256v1"]
    static let plugin = pluginDirectory + "/libkeybay-pkcs11.so"

    /// A sandbox with a record, one token "kb" holding one key of `keyType` (id 01), and its environment.
    static func store(keyType: String) throws -> (box: Sandbox, tokens: SoftHSMTokens, env: [String: String]) {
        let box = Sandbox()
        let tokens = try SoftHSMTokens(under: box.root)
        try tokens.initToken("kb")
        try tokens.generate(on: "kb", keyType: keyType, id: "01")
        let env = tokens.environment(box.environment, root: box.root)
        let set = try run(cliPath, ["set", "service/token", "s3cret"], environment: env)
        #expect(set.status == 0, "\(set.stderr)")
        return (box, tokens, env)
    }

    static func cli(_ box: Sandbox, _ env: [String: String], _ arguments: [String], pin: String?) throws -> RunResult {
        try box.cli(arguments, secret: pin, option: pin == nil ? nil : "--pin-fd", environment: env)
    }

    /// `enroll pkcs11 ARGUMENTS` on a store a pkcs11 method protects: `--pin-fd` is that method's,
    /// so the new method's token PIN is asked for, here by a scripted pinentry (asked once).
    static func enrollBeside(_ box: Sandbox, _ env: [String: String], _ arguments: [String], name: String) throws -> RunResult {
        let pinentry = try ScriptedPinentry(box, answers: [SoftHSMTokens.pin], name: name)
        let r = try cli(box, env.merging(["KEYBAY_PINENTRY": pinentry.program]) { $1 }, ["enroll", "pkcs11"] + arguments, pin: SoftHSMTokens.pin)
        #expect(pinentry.runs.count == 1, "\(pinentry.runs.count) pinentry runs")
        return r
    }

    @Test(arguments: keyTypes)
    func enrollThenGetWithThePinAndAWrongPinIsWrongSecret(_ keyType: String) throws {
        let (box, _, env) = try Self.store(keyType: keyType)
        let enrolled = try Self.cli(box, env, ["enroll", "pkcs11", "--opt", "token=pkcs11:token=kb;id=%01"], pin: SoftHSMTokens.pin)
        #expect(enrolled.status == 0, "\(enrolled.stderr)")
        let got = try Self.cli(box, env, ["get", "service/token"], pin: SoftHSMTokens.pin)
        #expect(got.status == 0 && got.stdout == Array("s3cret".utf8), "\(got.stderr)")
        let marker = "wrong-pin-marker-7731"
        let wrong = try Self.cli(box, env, ["get", "service/token"], pin: marker)
        #expect(wrong.status == 1 && wrong.stdout.isEmpty && wrong.stderr.contains("[wrong-secret]"), "\(wrong.stderr)")
        #expect(!wrong.stderr.contains(marker), "the refused PIN is never shown")
        let noPIN = try Self.cli(box, env, ["get", "service/token", "--no-input"], pin: nil)
        #expect(noPIN.status == 4, "\(noPIN.stderr)")
        // The right PIN still opens it afterwards.
        let again = try Self.cli(box, env, ["get", "service/token"], pin: SoftHSMTokens.pin)
        #expect(again.status == 0 && again.stdout == Array("s3cret".utf8), "\(again.stderr)")
    }

    /// SOFTHSM2_CONF names a configuration with no tokens (the token's own configuration gone):
    /// the method is not available, never a wrong secret.
    @Test(arguments: keyTypes)
    func theTokenGoneIsNotAvailable(_ keyType: String) throws {
        let (box, _, env) = try Self.store(keyType: keyType)
        let enrolled = try Self.cli(box, env, ["enroll", "pkcs11", "--opt", "token=pkcs11:token=kb;id=%01"], pin: SoftHSMTokens.pin)
        #expect(enrolled.status == 0, "\(enrolled.stderr)")
        mkdir(box.root + "/elsewhere", 0o700)
        let elsewhere = try SoftHSMTokens(under: box.root + "/elsewhere")
        var gone = env
        gone["SOFTHSM2_CONF"] = elsewhere.configuration
        let r = try Self.cli(box, gone, ["get", "service/token"], pin: SoftHSMTokens.pin)
        #expect(r.status == 1 && r.stdout.isEmpty && r.stderr.contains("[method-unavailable]"), "\(r.stderr)")
        // An enrollment against the empty configuration finds no token either.
        let none = try Self.cli(box, gone, ["enroll", "pkcs11", "--opt", "token=pkcs11:token=kb;id=%01"], pin: SoftHSMTokens.pin)
        #expect(none.status == 1 && none.stderr.contains("[method-unavailable]"), "\(none.stderr)")
    }

    /// Two tokens holding keys of the same id, one method on each (one through p11-kit's list,
    /// one through the module named): each unlocks with its own token; a URI matching both is
    /// refused; deleting one token leaves its method unavailable and the other working.
    @Test func twoTokensEachUnlockTheirOwnMethod() throws {
        let (box, tokens, env) = try Self.store(keyType: "rsa:2048")
        try tokens.initToken("kb2")
        try tokens.generate(on: "kb2", keyType: "EC:prime256v1", id: "01")
        let ambiguous = try Self.cli(box, env, ["enroll", "pkcs11", "--opt", "token=pkcs11:id=%01"], pin: SoftHSMTokens.pin)
        #expect(ambiguous.status == 2 && ambiguous.stderr.contains("[invalid-argument]"), "\(ambiguous.stderr)")
        let first = try Self.cli(box, env, ["enroll", "pkcs11", "--label", "kb", "--opt", "token=pkcs11:token=kb;id=%01"], pin: SoftHSMTokens.pin)
        #expect(first.status == 0, "\(first.stderr)")
        let second = try Self.enrollBeside(box, env, ["--label", "kb2", "--opt", "token=pkcs11:token=kb2;id=%01",
                                                      "--opt", "module=" + SoftHSMTokens.module], name: "kb2")
        #expect(second.status == 0, "\(second.stderr)")
        let ids = try methodIDs(box, environment: env)
        try #require(ids.count == 2)
        for id in ids {
            let r = try Self.cli(box, env, ["get", "service/token", "--method", id], pin: SoftHSMTokens.pin)
            #expect(r.status == 0 && r.stdout == Array("s3cret".utf8), "\(id): \(r.stderr)")
        }
        try tokens.deleteToken("kb2")
        let kept = try Self.cli(box, env, ["get", "service/token", "--method", ids[0]], pin: SoftHSMTokens.pin)
        #expect(kept.status == 0, "\(kept.stderr)")
        let lost = try Self.cli(box, env, ["get", "service/token", "--method", ids[1]], pin: SoftHSMTokens.pin)
        #expect(lost.status == 1 && lost.stderr.contains("[method-unavailable]"), "\(lost.stderr)")
    }

    /// A PIN of a length the token refuses (`CKR_PIN_LEN_RANGE`) is a wrong secret with the reason
    /// `wrong-pin`, as docs/pkcs11.md maps it. SoftHSM answers any wrong PIN with
    /// `CKR_PIN_INCORRECT`, so the token is reached through Tests/TestTools/pin-length-module
    /// (SoftHSM's module whose C_Login refuses a PIN outside the token's own ulMinPinLen..ulMaxPinLen,
    /// 4..255 here); its log shows that the 3-byte PIN reached C_Login and was answered 0xa2.
    @Test func aPinOfALengthTheTokenRefusesIsAWrongSecret() throws {
        let (box, _, env) = try Self.store(keyType: "EC:prime256v1")
        let module = box.root + "/pin_length_module.so", log = box.root + "/pin-length.log"
        let cc = try run("/usr/bin/cc", ["-std=c11", "-shared", "-fPIC", "-I/usr/include/p11-kit-1", "-DSOFTHSM_MODULE=\"\(SoftHSMTokens.module)\"",
                                         "-DPIN_LENGTH_LOG=\"\(log)\"", "-o", module,
                                         packageDirectory + "/Tests/TestTools/pin-length-module/pin_length_module.c", "-ldl"],
                         environment: ["PATH": "/usr/bin:/bin"])
        try #require(cc.status == 0, "cc: \(cc.stderr)")
        let enrolled = try Self.cli(box, env, ["enroll", "pkcs11", "--opt", "token=pkcs11:token=kb;id=%01", "--opt", "module=" + module],
                                    pin: SoftHSMTokens.pin)
        try #require(enrolled.status == 0, "\(enrolled.stderr)")
        let short = try Self.cli(box, env, ["get", "service/token", "--json"], pin: "123")
        #expect(short.status == 1 && short.error?.code == "wrong-secret" && short.error?.reason == "wrong-pin", "\(short.out)")
        let logins = String(decoding: readBytes(log) ?? [], as: UTF8.self).split(separator: "\n")
        #expect(logins.last == "C_Login 3 0xa2", "the 3-byte PIN reached C_Login and was out of range: \(logins)")
        let got = try Self.cli(box, env, ["get", "service/token"], pin: SoftHSMTokens.pin)
        #expect(got.status == 0 && got.stdout == Array("s3cret".utf8), "\(got.stderr)")
    }

    @Test func badOptionsAreInvalidArguments() throws {
        let (box, _, env) = try Self.store(keyType: "rsa:2048")
        for options in [[String](), ["--opt", "token=https://example.com"], ["--opt", "token=pkcs11:token=kb;pin-value=1234"],
                        ["--opt", "token=pkcs11:token=kb;id=%01", "--opt", "module=relative.so"],
                        ["--opt", "token=pkcs11:token=kb;id=%01", "--opt", "module=" + box.root + "/missing.so"],
                        ["--opt", "token=pkcs11:token=kb;id=%09"]] {
            let r = try Self.cli(box, env, ["enroll", "pkcs11"] + options, pin: SoftHSMTokens.pin)
            #expect(r.status == 2 && r.stderr.contains("[invalid-argument]"), "\(options): \(r.stderr)")
        }
    }

    /// plugin-check passes the plugin with the token's real PIN (--pin-fd), RSA and EC; without
    /// it the scripted answer is no PIN of the token and enroll fails.
    @Test(arguments: keyTypes)
    func pluginCheckPassesWithTheRealPin(_ keyType: String) throws {
        let (box, _, env) = try Self.store(keyType: keyType)
        let check = ["plugin-check", Self.plugin, "--opt", "token=pkcs11:token=kb;id=%01"]
        let passed = try Self.cli(box, env, check, pin: SoftHSMTokens.pin)
        #expect(passed.status == 0 && passed.out.contains("18 passed, 0 failed, 0 skipped, 0 not run"), "\(passed.out)\(passed.stderr)")
        let scripted = try Self.cli(box, env, check, pin: nil)
        #expect(scripted.status == 1 && scripted.out.contains("FAIL  enroll") && scripted.out.contains("[wrong-secret]"), "\(scripted.out)")
    }

    /// ProcessTests' crash-kill harness on a store a pkcs11 method (RSA) protects: the writers
    /// unlock with it (the token's PIN) and enroll and remove test-counting methods beside it.
    /// A quarter of KEYBAY_CRASH_RUNS (default 12 runs).
    @Test func killedWritersNeverTearAPkcs11ProtectedStore() async throws {
        let runs = ProcessInfo.processInfo.environment["KEYBAY_CRASH_RUNS"].flatMap(Int.init).map { max(4, $0 / 4) } ?? 12
        let (box, _, tokenEnv) = try Self.store(keyType: "rsa:2048")
        var env = tokenEnv
        env["KEYBAY_TEST_WRITER_PIN"] = SoftHSMTokens.pin
        let enrolled = try Self.cli(box, env, ["enroll", "pkcs11", "--opt", "token=pkcs11:token=kb;id=%01"], pin: SoftHSMTokens.pin)
        try #require(enrolled.status == 0, "\(enrolled.stderr)")
        let id = try #require(try methodIDs(box, environment: env).first)
        // Kills land once the store is open: the unlock's token work is done by then (a kill
        // inside SoftHSM's own token writes is SoftHSM's crash safety, not the store's).
        try await ProcessTests.killWriters(box, runs: runs, environment: env, keeping: id, killAfterOpen: true)
        #expect(try methodIDs(box, environment: env).contains(id))
    }

    /// The plugin links libc and libsodium only; p11-kit is opened on first use, and an unlock
    /// through a module named at enrollment never maps it (the module is all it needs), while
    /// one through p11-kit's list does. A platform-only `get` maps neither the plugin nor p11-kit.
    @Test func p11KitIsOpenedOnlyWhenItIsNeeded() throws {
        let needed = try run("/usr/bin/readelf", ["-d", Self.plugin], environment: ["PATH": "/usr/bin:/bin"]).out
            .split(separator: "\n").filter { $0.contains("(NEEDED)") }
            .compactMap { $0.split(separator: "[").last?.split(separator: "]").first.map(String.init) }
        #expect(!needed.isEmpty && Set(needed).isSubset(of: ["libsodium.so.23", "libc.so.6", "libm.so.6"]), "\(needed)")
        let (box, _, env) = try Self.store(keyType: "EC:prime256v1")
        var traced = env
        traced["LD_DEBUG"] = "files"
        let plain = try Self.cli(box, traced, ["get", "service/token"], pin: nil)
        #expect(plain.status == 0 && !plain.stderr.contains("libkeybay-pkcs11.so") && !plain.stderr.contains("libp11-kit.so.0"))
        let named = try Self.cli(box, env, ["enroll", "pkcs11", "--label", "named", "--opt", "token=pkcs11:token=kb;id=%01",
                                            "--opt", "module=" + SoftHSMTokens.module], pin: SoftHSMTokens.pin)
        #expect(named.status == 0, "\(named.stderr)")
        let listed = try Self.enrollBeside(box, env, ["--label", "listed", "--opt", "token=pkcs11:token=kb;id=%01"], name: "listed")
        #expect(listed.status == 0, "\(listed.stderr)")
        let ids = try methodIDs(box, environment: env)
        try #require(ids.count == 2)
        for (id, mapsP11Kit) in zip(ids, [false, true]) {
            let r = try Self.cli(box, traced, ["get", "service/token", "--method", id], pin: SoftHSMTokens.pin)
            #expect(r.status == 0 && r.stdout == Array("s3cret".utf8))
            #expect(r.stderr.contains("libkeybay-pkcs11.so") && r.stderr.contains("libp11-kit.so.0") == mapsP11Kit,
                    "method \(id) (p11-kit \(mapsP11Kit ? "expected" : "not expected"))")
        }
    }
}
