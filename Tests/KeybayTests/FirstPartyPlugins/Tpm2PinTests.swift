// SPDX-License-Identifier: Apache-2.0
import Foundation
import Glibc
import Testing
@testable import Keybay

/// The tpm2-pin method against a real TPM 2.0 emulator (swtpm on a loopback port, started per
/// test), through the CLI: the PIN comes from a descriptor (`--pin-fd`), the TPM from
/// KEYBAY_TPM2_TCTI, the lock file from the sandbox's XDG_STATE_HOME.
@Suite struct Tpm2PinTests {
    static let pin = "2468", otherPin = "1357"

    /// The sandbox's environment with the TPM named.
    static func environment(_ box: Sandbox, _ tpm: SoftwareTPM, _ extra: [String: String] = [:]) -> [String: String] {
        box.environment.merging(["KEYBAY_TPM2_TCTI": tpm.tcti]) { $1 }.merging(extra) { $1 }
    }

    /// The CLI with `pin` on descriptor 3 as `--pin-fd 3` (none: no descriptor).
    static func cli(_ box: Sandbox, _ tpm: SoftwareTPM, _ args: [String], pin: String?, _ extra: [String: String] = [:]) throws -> RunResult {
        try box.cli(args + ["--no-input"], secret: pin, option: "--pin-fd", environment: environment(box, tpm, extra))
    }

    /// A store with record k = v protected by tpm2-pin with `pin`; returns the method id.
    static func pinStore(_ box: Sandbox, _ tpm: SoftwareTPM, pin: String = pin, options: [String] = []) throws -> String {
        #expect(try cli(box, tpm, ["set", "k", "v"], pin: nil).status == 0)
        let enrolled = try cli(box, tpm, ["enroll", "tpm2-pin"] + options, pin: pin)
        #expect(enrolled.status == 0, "\(enrolled.stderr)")
        return try methodIDs(box, environment: environment(box, tpm)).first ?? ""
    }

    /// `get k`; with `json`, `--json` too, for the error object's fields (`RunResult.error`).
    static func get(_ box: Sandbox, _ tpm: SoftwareTPM, pin: String?, json: Bool = false, _ extra: [String: String] = [:]) throws -> RunResult {
        try cli(box, tpm, ["get", "k"] + (json ? ["--json"] : []), pin: pin, extra)
    }

    /// What `get k --json` prints for the value v.
    static let jsonValue = "{\"key\":\"k\",\"value\":\"v\"}\n"

    /// TPM_PT_LOCKOUT_COUNTER as tpm2_getcap reads it.
    static func lockoutCounter(_ tpm: SoftwareTPM) throws -> Int { try variableProperty(tpm, "TPM2_PT_LOCKOUT_COUNTER") }

    /// A property of `tpm2_getcap properties-variable` (TPM2_PT_LOCKOUT_COUNTER, TPM2_PT_MAX_AUTH_FAIL).
    static func variableProperty(_ tpm: SoftwareTPM, _ name: String) throws -> Int {
        let r = try tpm.tools("tpm2_getcap", "properties-variable")
        guard r.status == 0, let line = r.out.split(separator: "\n").first(where: { $0.hasPrefix(name + ":") }),
              let value = Int(line.split(separator: " ").last?.dropFirst(2) ?? "", radix: 16) else {
            throw KeybayTestFailure("tpm2_getcap properties-variable, \(name): \(r.stderr)")
        }
        return value
    }

    /// Enroll, unlock with the PIN (M the TPM unseals opens the store), a wrong PIN (wrong-secret,
    /// counted by the TPM), no PIN without input, one method per store, a PIN too short.
    @Test func enrollThenUnlockWithThePIN() throws {
        let tpm = try SoftwareTPM(), box = Sandbox()
        let id = try Self.pinStore(box, tpm)
        let got = try Self.get(box, tpm, pin: Self.pin)
        #expect(got.status == 0 && got.out == "v", "\(got.stderr)")
        #expect(try tpm.handles("handles-transient").isEmpty, "every transient object was flushed")
        let status = try KeybayStore.status(box.configuration())
        #expect(status.methods.map(\.id) == [id] && status.methods.first?.plugin == "tpm2-pin")

        let wrong = try Self.get(box, tpm, pin: Self.otherPin, json: true)
        #expect(wrong.status == 1 && wrong.error?.code == "wrong-secret" && wrong.error?.reason == "wrong-pin" && wrong.error?.methodID == id,
                "\(wrong.out)")
        #expect(try Self.lockoutCounter(tpm) == 1, "the TPM counted the wrong PIN")
        #expect(wrong.error?.triesLeft != nil, "the tries left are given: \(wrong.out)")
        let none = try Self.get(box, tpm, pin: nil, json: true)
        #expect(none.status == 4 && none.error?.code == "interaction-required", "\(none.out)")
        let second = try Self.cli(box, tpm, ["enroll", "tpm2-pin", "--json"], pin: Self.pin)
        #expect(second.status == 2 && second.error?.code == "invalid-argument", "one tpm2-pin method per store: \(second.out)")
        let short = try Self.cli(Sandbox(), tpm, ["enroll", "tpm2-pin", "--json"], pin: "123")
        #expect(short.status == 2 && short.error?.code == "invalid-argument", "a 3-byte PIN is refused: \(short.out)")
        // tss2 is opened on first use: listing the methods needs none.
        var env = Self.environment(box, tpm)
        env["LD_DEBUG"] = "files"
        #expect(try !run(cliPath, ["list"], environment: env).stderr.contains("libtss2-esys.so.0"))
    }

    /// The TPM's lockout, set small by the test (3 tries, one forgiven every 2 s): each wrong PIN
    /// says how many tries are left (2, 1, 0), the next try is `locked` before any PIN is sent,
    /// and after the interval the right PIN opens the store again.
    @Test func wrongPINsUntilLockoutThenRecovery() throws {
        let tpm = try SoftwareTPM(), box = Sandbox()
        #expect(try tpm.tools("tpm2_dictionarylockout", "-s", "-n", "3", "-t", "2", "-l", "2").status == 0)
        _ = try Self.pinStore(box, tpm)
        for left in [2, 1, 0] {
            let wrong = try Self.get(box, tpm, pin: Self.otherPin, json: true)
            #expect(wrong.status == 1 && wrong.error?.code == "wrong-secret" && wrong.error?.reason == "wrong-pin" && wrong.error?.triesLeft == left,
                    "\(left): \(wrong.out)")
        }
        #expect(try Self.lockoutCounter(tpm) == 3)
        let locked = try Self.get(box, tpm, pin: Self.pin, json: true)
        #expect(locked.status == 1 && locked.error?.code == "locked" && locked.error?.reason == "lockout" && locked.error?.triesLeft == 0,
                "\(locked.out)")
        #expect(try Self.lockoutCounter(tpm) == 3, "a locked try sends no PIN to the TPM")
        var opened: RunResult?
        for _ in 0..<20 where opened?.status != 0 {
            usleep(500_000)
            opened = try Self.get(box, tpm, pin: Self.pin, json: true)
            #expect(opened?.status == 0 || opened?.error?.reason == "lockout", "\(opened?.out ?? "")")
        }
        #expect(opened?.status == 0 && opened?.out == Self.jsonValue, "the right PIN works after the interval: \(opened?.out ?? "")")
    }

    /// The tries left the PIN request tells (the `retries_left` of tpm2-pin's `ask_secret`, which
    /// the pinentry's description shows as "N tries left.") are the TPM's own before each ask:
    /// TPM_PT_MAX_AUTH_FAIL less TPM_PT_LOCKOUT_COUNTER, read with tpm2_getcap. After one wrong PIN
    /// (5 tries allowed, none forgiven during the test), a run whose pinentry answers a wrong PIN,
    /// then the right one, is told 4, then 3; the counter is then 2.
    @Test func thePINRequestTellsTheTriesTheTPMHasLeft() throws {
        let tpm = try SoftwareTPM(), box = Sandbox()
        #expect(try tpm.tools("tpm2_dictionarylockout", "-s", "-n", "5", "-t", "1000", "-l", "1000").status == 0)
        _ = try Self.pinStore(box, tpm)
        let wrong = try Self.get(box, tpm, pin: Self.otherPin, json: true)
        #expect(wrong.status == 1 && wrong.error?.reason == "wrong-pin", "\(wrong.out)")
        let allowed = try Self.variableProperty(tpm, "TPM2_PT_MAX_AUTH_FAIL"), before = try Self.lockoutCounter(tpm)
        #expect(allowed == 5 && before == 1)
        let pinentry = try ScriptedPinentry(box, answers: [Self.otherPin, Self.pin])
        let got = try withoutTerminal(["get", "k", "--json"], environment: Self.environment(box, tpm, ["KEYBAY_PINENTRY": pinentry.program]), box: box)
        #expect(got.status == 0 && got.out == Self.jsonValue, "\(got.out) \(got.stderr)")
        let after = try Self.lockoutCounter(tpm)
        #expect(after == before + 1, "the TPM counted the second wrong PIN")
        // The description's last line is the figure the request carried.
        let told = pinentry.runs.map { run in
            ScriptedPinentry.argument("SETDESC", in: run.lines)?.split(separator: "\n").last.flatMap { line in
                line.hasSuffix(" tries left.") ? Int(line.dropLast(" tries left.".count)) : nil
            }
        }
        #expect(told == [allowed - before, allowed - after], "told \(told), the TPM had \(allowed - before), then \(allowed - after) left")
    }

    /// `change` replaces the PIN in one step: the new one opens, the old one is a wrong secret.
    @Test func changeReplacesThePIN() throws {
        let tpm = try SoftwareTPM(), box = Sandbox()
        let id = try Self.pinStore(box, tpm)
        let changed = try MethodLifecycleTests.cli(box, ["change", id, "--no-input"], secrets: ["--pin-fd": Self.pin, "--new-pin-fd": "86420"],
                                                   environment: Self.environment(box, tpm))
        #expect(changed.status == 0, "\(changed.stderr)")
        #expect(try Self.get(box, tpm, pin: "86420").out == "v")
        let old = try Self.get(box, tpm, pin: Self.pin, json: true)
        #expect(old.status == 1 && old.error?.code == "wrong-secret" && old.error?.reason == "wrong-pin", "\(old.out)")
        #expect(try methodIDs(box).count == 1 && methodIDs(box) != [id])
    }

    /// The TPM state replaced (another machine's TPM: a fresh swtpm state) or cleared (a new
    /// storage seed): the method is unavailable, saying so, and the store is left as it was.
    @Test func anotherOrAClearedTPMCannotUnseal() throws {
        let tpm = try SoftwareTPM(), box = Sandbox()
        _ = try Self.pinStore(box, tpm)
        let store = readBytes(box.storePath)
        let other = try SoftwareTPM()
        let elsewhere = try Self.get(box, other, pin: Self.pin, json: true)
        #expect(elsewhere.status == 1 && elsewhere.error?.code == "method-unavailable" && elsewhere.error?.reason == "foreign-object",
                "\(elsewhere.out)")
        #expect(try Self.lockoutCounter(other) == 0, "no PIN was tried on a TPM that cannot load the object")
        #expect(readBytes(box.storePath) == store)
        #expect(try tpm.tools("tpm2_clear", "-c", "p").status == 0)
        let cleared = try Self.get(box, tpm, pin: Self.pin, json: true)
        #expect(cleared.status == 1 && cleared.error?.code == "method-unavailable" && cleared.error?.reason == "foreign-object", "\(cleared.out)")
    }

    /// `--opt pcrs=7`: extending PCR 7 makes the method unavailable; a bad value is refused.
    @Test func aPCRBoundPINIsUnusableWhenThePCRChanges() throws {
        let tpm = try SoftwareTPM(), box = Sandbox()
        _ = try Self.pinStore(box, tpm, options: ["--opt", "pcrs=7"])
        #expect(try Self.get(box, tpm, pin: Self.pin).out == "v")
        #expect(try tpm.tools("tpm2_pcrextend", "7:sha256=" + String(repeating: "ab", count: 32)).status == 0)
        let r = try Self.get(box, tpm, pin: Self.pin, json: true)
        #expect(r.status == 1 && r.error?.code == "method-unavailable" && r.error?.reason == "pcr-mismatch", "\(r.out)")
        let bad = try Self.cli(Sandbox(), tpm, ["enroll", "tpm2-pin", "--opt", "pcrs=24", "--json"], pin: Self.pin)
        #expect(bad.status == 2 && bad.error?.code == "invalid-argument" && bad.error?.reason == "invalid-pcrs", "\(bad.out)")
    }

    /// The root's TPM rules: a KEYBAY_TPM2_TCTI that is not a TCTI is a usage error; a TPM that
    /// does not answer is unavailable within KEYBAY_TPM2_TIMEOUT_MS; without the variable only
    /// the device is used (a simulator where tss2's default would look is never reached).
    @Test func theRootsTCTIRulesAndBoundsApply() throws {
        let tpm = try SoftwareTPM(), box = Sandbox()
        _ = try Self.pinStore(box, tpm)
        let library = try Self.get(box, tpm, pin: Self.pin, json: true, ["KEYBAY_TPM2_TCTI": "/tmp/libtss2-tcti-evil.so"])
        #expect(library.status == 2 && library.error?.code == "invalid-argument", "\(library.out)")
        let nowhere = try Self.get(box, tpm, pin: Self.pin, json: true, ["KEYBAY_TPM2_TCTI": "swtpm:host=127.0.0.1,port=1"])
        #expect(nowhere.status == 1 && nowhere.error?.code == "method-unavailable" && nowhere.error?.reason == "tpm-unreachable", "\(nowhere.out)")
        tpm.stop()
        defer { tpm.resume() }
        var env = Self.environment(box, tpm, ["KEYBAY_TPM2_TIMEOUT_MS": "1000"])
        let file = box.root + "/pin"
        try (Self.pin + "\n").write(toFile: file, atomically: true, encoding: .utf8)
        let (stopped, seconds) = try Tpm2BoundsTests.runWithin(20, "/bin/sh", ["-c", "exec \"$0\" get k --no-input --json --pin-fd 3 3<\"\(file)\"", cliPath],
                                                                environment: env)
        #expect(!stopped.signalled && stopped.status == 1 && stopped.error?.code == "method-unavailable" && stopped.error?.reason == "tpm-timeout"
                && seconds < 10, "\(seconds) s: \(stopped.out)")
        tpm.resume()
        if !exists("/dev/tpmrm0") && !exists("/dev/tpm0") {
            env["KEYBAY_TPM2_TCTI"] = nil
            let d = try Tpm2BoundsTests.holdingTheSimulatorPorts {
                try run("/bin/sh", ["-c", "exec \"$0\" get k --no-input --json --pin-fd 3 3<\"\(file)\"", cliPath], environment: env)
            }
            #expect(d.status == 1 && d.error?.code == "method-unavailable" && d.error?.reason == "no-tpm" && d.error?.path == "/dev/tpmrm0", "\(d.out)")
        }
    }

    @Test func pluginCheckPasses() throws {
        let tpm = try SoftwareTPM(), box = Sandbox()
        let r = try run(cliPath, ["plugin-check", pluginDirectory + "/libkeybay-tpm2-pin.so"], environment: Self.environment(box, tpm))
        #expect(r.status == 0 && r.out.contains(" 0 failed") && !r.out.contains("FAIL") && !r.out.contains("SKIP"), "\(r.out)\(r.stderr)")
        #expect(try tpm.handles("handles-transient").isEmpty)
    }

    /// Killed at random moments, `change` of a tpm2-pin method leaves the old or the new PIN
    /// opening the store (MethodLifecycleTests' run; the TPM allows the wrong PIN each check
    /// tries). `KEYBAY_CRASH_RUNS` sets three times the count (default 8 runs).
    @Test func killedChangesLeaveTheOldOrTheNewPIN() throws {
        let runs = ProcessInfo.processInfo.environment["KEYBAY_CRASH_RUNS"].flatMap(Int.init).map { max(4, $0 / 3) } ?? 8
        let tpm = try SoftwareTPM(), box = Sandbox()
        #expect(try tpm.tools("tpm2_dictionarylockout", "-s", "-n", "1000", "-t", "1", "-l", "1").status == 0)
        let id = try Self.pinStore(box, tpm, pin: "pin-0")
        try MethodLifecycleTests.killedChangesLeaveTheOldOrTheNewSecret(box, environment: Self.environment(box, tpm), method: id, secret: "pin-0",
                                                                        runs: runs, secretOption: "pin", secretPrefix: "pin-", flags: []) { pin in
            try Self.get(box, tpm, pin: pin)
        }
    }

    /// Bytes of a tpm2-pin-protected store flipped and the file truncated give a typed failure,
    /// never the value: every ninth byte and every 50th length (each run reaches the TPM, ~45 ms);
    /// with `KEYBAY_TAMPER_ALL=1`, every byte with TamperTests' three masks and every length.
    @Test func everyByteFlipOfATpm2PinProtectedStoreIsATypedFailure() throws {
        let tpm = try SoftwareTPM(), box = Sandbox()
        #expect(try tpm.tools("tpm2_dictionarylockout", "-s", "-n", "100000", "-t", "1", "-l", "1").status == 0)
        _ = try Self.pinStore(box, tpm)
        let original = try #require(readBytes(box.storePath))
        let all = ProcessInfo.processInfo.environment["KEYBAY_TAMPER_ALL"] == "1"
        let masks: [UInt8] = all ? [0x01, 0x80, 0xff] : [0x01]
        let acceptable: Set<String> = ["malformed", "integrity", "unsupported", "platform-key-invalidated"]
        var variants: [(String, [UInt8])] = []
        for i in stride(from: 0, to: original.count, by: all ? 1 : 9) {
            for mask in masks { var b = original; b[i] ^= mask; variants.append(("flip \(mask) at \(i)", b)) }
        }
        for length in stride(from: 0, to: original.count, by: all ? 1 : 50) { variants.append(("truncation to \(length)", Array(original[0..<length]))) }
        for (name, bytes) in variants {
            writeBytes(box.storePath, bytes)
            let r = try Self.get(box, tpm, pin: Self.pin, json: true)
            #expect(r.status == 1 && r.error.map { acceptable.contains($0.code) } == true, "\(name): \(r.status) \(r.out)")
        }
        writeBytes(box.storePath, original)
        #expect(try Self.get(box, tpm, pin: Self.pin).out == "v", "the untouched store still opens")
    }
}
