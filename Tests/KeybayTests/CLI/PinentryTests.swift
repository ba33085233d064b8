// SPDX-License-Identifier: Apache-2.0
import Foundation
import Glibc
import Testing
@testable import Keybay

/// docs/cli.md's pinentry through the CLI as a process with no controlling terminal (`setsid`):
/// Debian's real pinentry-tty, found as `pinentry` on PATH, on a pseudo-terminal the test makes
/// (named by GPG_TTY, sent as `OPTION ttyname`); and Tests/pinentry/scripted_pinentry.py, which
/// logs what it is sent, for what a real one cannot be made to do (cancel, die, hang, copy its
/// /proc files).
@Suite struct PinentryTests {
    static let passphrase = "correct horse"

    /// A passphrase store (label "laptop") holding k = v, made with the passphrase on a descriptor.
    static func protectedStore(_ box: Sandbox) throws {
        let enrolled = try box.cli(["enroll", "passphrase", "--label", "laptop"] + fastPassphraseFlags, secret: passphrase, option: "--passphrase-fd")
        #expect(enrolled.status == 0, "\(enrolled.stderr)")
        #expect(try box.cli(["set", "k", "v"], secret: passphrase, option: "--passphrase-fd").status == 0)
    }

    /// The environment in which `pinentry` on PATH is Debian's pinentry-tty (and KEYBAY_PINENTRY unset).
    static func pinentryTTYOnPath(_ box: Sandbox) throws -> [String: String] {
        let real = "/usr/bin/pinentry-tty"
        guard access(real, X_OK) == 0 else { throw KeybayTestFailure("\(real) is missing: scripts/setup.sh installs it (Debian: pinentry-tty)") }
        let bin = box.root + "/bin"
        mkdir(bin, 0o700)
        symlink(real, bin + "/pinentry")
        var environment = box.environment
        environment["KEYBAY_PINENTRY"] = nil
        environment["PATH"] = bin + ":/usr/bin:/bin"
        return environment
    }

    /// Tests/pty/pinentry_tty.py: the CLI without a terminal, `answers` typed at the pinentry's prompts.
    static func typed(_ answers: [String], _ arguments: [String], environment: [String: String]) throws -> (status: Int, stdout: String, stderr: String, terminal: String, typed: Int) {
        let list = String(decoding: try JSONSerialization.data(withJSONObject: answers), as: UTF8.self)
        let r = try run("/usr/bin/python3", [packageDirectory + "/Tests/pty/pinentry_tty.py", list, cliPath] + arguments, environment: environment)
        let o = try #require(try JSONSerialization.jsonObject(with: Data(r.stdout)) as? [String: Any], "\(r.out) \(r.stderr)")
        return (o["status"] as? Int ?? -1, o["stdout"] as? String ?? "", o["stderr"] as? String ?? "", o["terminal"] as? String ?? "", o["typed"] as? Int ?? -1)
    }

    @Test func aStoreUnlocksThroughPinentryTTYOnATerminalOfItsOwn() throws {
        let box = Sandbox()
        try Self.protectedStore(box)
        let environment = try Self.pinentryTTYOnPath(box)
        let right = try Self.typed([Self.passphrase], ["get", "k"], environment: environment)
        #expect(right.status == 0 && right.stdout == "v" && right.typed == 1, "\(right)")
        // The dialog names the application and the method's label.
        #expect(right.terminal.contains(box.app) && right.terminal.contains("laptop"), "\(right.terminal)")
        // A wrong passphrase is asked again, with the error shown (pinentry-tty's "*** … ***"), then the right one opens.
        let retried = try Self.typed(["wrong", Self.passphrase], ["get", "k"], environment: environment)
        #expect(retried.status == 0 && retried.stdout == "v" && retried.typed == 2, "\(retried)")
        #expect(retried.terminal.components(separatedBy: "***").count == 3, "\(retried.terminal)")
        // Three wrong ones: wrong-secret.
        let wrong = try Self.typed(["one", "two", "three"], ["get", "k"], environment: environment)
        #expect(wrong.status == 1 && wrong.stderr.contains("[wrong-secret]") && wrong.typed == 3, "\(wrong)")
    }

    @Test func enrollAsksForTheNewPassphraseTwiceThroughPinentryTTY() throws {
        let box = Sandbox()
        let environment = try Self.pinentryTTYOnPath(box)
        let enroll = ["enroll", "passphrase", "--label", "laptop"] + fastPassphraseFlags
        let differ = try Self.typed(["one", "two"], enroll, environment: environment)
        #expect(differ.status == 1 && differ.stderr.contains("[wrong-secret]") && differ.typed == 2, "\(differ)")
        #expect(!exists(box.storePath), "a failed enrollment on a fresh home left a store")
        let enrolled = try Self.typed([Self.passphrase, Self.passphrase], enroll, environment: environment)
        #expect(enrolled.status == 0 && enrolled.typed == 2, "\(enrolled)")
        #expect(try box.cli(["set", "k", "v"], secret: Self.passphrase, option: "--passphrase-fd").status == 0, "the passphrase typed twice does not open the store")
    }

    @Test func aCancelIsCancelledAndLeavesTheStoreAsItWas() throws {
        let box = Sandbox()
        try Self.protectedStore(box)
        let before = try #require(readBytes(box.storePath))
        let pinentry = try ScriptedPinentry(box, mode: "cancel")
        for command in [["get", "k"], ["get", "k", "--json"], ["set", "k", "w"], ["enroll", "test-counting"]] {
            // enroll unlocks with the passphrase first: the cancel comes there, or at the new PIN.
            let r = try withoutTerminal(command, environment: pinentry.environment(box), box: box)
            #expect(r.status == 1 && r.stderr.contains("[cancelled]"), "\(command): \(r.status) \(r.stderr)")
            if command.contains("--json") { #expect(r.out.contains("{\"error\":{\"code\":\"cancelled\""), "\(r.out)") }
        }
        #expect(readBytes(box.storePath) == before, "a cancelled pinentry changed the store")
        // The new PIN of an enrollment, cancelled with the unlock answered from a descriptor.
        let pin = try withoutTerminal(["enroll", "test-counting", "--passphrase-fd", "3"], environment: pinentry.environment(box), secret: Self.passphrase, box: box)
        #expect(pin.status == 1 && pin.stderr.contains("[cancelled]"), "\(pin.stderr)")
        // That pinentry had its socket as 0 and 1, /dev/null as 2, and no other descriptor: not
        // the passphrase's descriptor 3, not the store's lock.
        let last = try #require(pinentry.runs.last?.pid)
        let descriptors = pinentry.descriptors(last)
        #expect(descriptors.keys.sorted() == [0, 1, 2] && descriptors[0] == descriptors[1] && descriptors[0]?.hasPrefix("socket:") == true
                && descriptors[2] == "/dev/null", "\(descriptors)")
        #expect(readBytes(box.storePath) == before, "a cancelled enrollment changed the store")
        #expect(pinentry.runs.count == 5, "\(pinentry.runs.count) runs")
    }

    /// What the pinentry is told: a title, a description naming the program, the application and
    /// the label, a prompt, the terminal when there is one to name, and BYE at the end.
    @Test func theDescriptionNamesTheApplicationAndTheLabel() throws {
        let box = Sandbox()
        try Self.protectedStore(box)
        let pinentry = try ScriptedPinentry(box, answers: [Self.passphrase, Self.passphrase])
        #expect(try withoutTerminal(["get", "k"], environment: pinentry.environment(box), box: box).out == "v")
        var named = pinentry.environment(box)
        named["GPG_TTY"] = "/dev/pts/keybay-test"
        named["TERM"] = "vt100"
        #expect(try withoutTerminal(["get", "k"], environment: named, box: box).out == "v")
        let runs = pinentry.runs
        try #require(runs.count == 2)
        for run in runs {
            let description = try #require(ScriptedPinentry.argument("SETDESC", in: run.lines))
            #expect(description.contains("keybay-methods") && description.contains(box.app) && description.contains("“laptop”"), "\(description)")
            #expect(ScriptedPinentry.argument("SETPROMPT", in: run.lines) == "Passphrase:")
            #expect(ScriptedPinentry.argument("SETTITLE", in: run.lines) == "Keybay")
            #expect(run.lines.last == "BYE" && run.lines.contains("GETPIN") && !run.lines.contains { $0.hasPrefix("SETERROR") }, "\(run.lines)")
        }
        // Every line arrived as one command (the description's line breaks went %-escaped).
        let commands = ["OPTION", "SETTIMEOUT", "SETTITLE", "SETDESC", "SETPROMPT", "SETERROR", "GETPIN", "BYE"]
        for line in runs.flatMap(\.lines) {
            #expect(commands.contains(String(line.prefix { $0 != " " })), "a line that is no command: \(line)")
        }
        // No terminal to name in the first run (its descriptors are pipes); GPG_TTY's in the second.
        #expect(!runs[0].lines.contains { $0.hasPrefix("OPTION ttyname") }, "\(runs[0].lines)")
        #expect(runs[1].lines.contains("OPTION ttyname=/dev/pts/keybay-test") && runs[1].lines.contains("OPTION ttytype=vt100"), "\(runs[1].lines)")
    }

    /// Neither the pinentry's arguments nor its environment hold a secret, not even the runs
    /// started once the CLI knows one (the confirming entry, the new passphrase of a change).
    @Test func theSecretIsInNoArgumentAndNoEnvironmentOfThePinentry() throws {
        let box = Sandbox()
        let old = "old-\(UUID().uuidString)", new = "new-\(UUID().uuidString)"
        let pinentry = try ScriptedPinentry(box, answers: [old, old, old, new, new])
        let environment = pinentry.environment(box)
        let enrolled = try withoutTerminal(["enroll", "passphrase"] + fastPassphraseFlags, environment: environment, box: box)
        #expect(enrolled.status == 0, "\(enrolled.stderr)")
        let id = try #require(try methodIDs(box).first)
        let changed = try withoutTerminal(["change", id] + fastPassphraseFlags, environment: environment, box: box)
        #expect(changed.status == 0, "\(changed.stderr)")
        #expect(try box.cli(["keys"], secret: new, option: "--passphrase-fd").status == 0, "the new passphrase does not open the store")
        let runs = pinentry.runs
        #expect(runs.count == 5, "\(runs.count) runs")
        for run in runs {
            let process = try #require(pinentry.process(run.pid), "run \(run.pid) copied no /proc files")
            #expect(process.cmdline.count > 0 && process.environ.count > 0)
            for secret in [old, new] {
                let bytes = Array(secret.utf8)
                for (what, haystack) in [("cmdline", process.cmdline), ("environ", process.environ)] {
                    let found = haystack.count >= bytes.count && (0...(haystack.count - bytes.count)).contains { Array(haystack[$0..<$0 + bytes.count]) == bytes }
                    #expect(!found, "run \(run.pid)'s \(what) holds a secret")
                }
            }
        }
    }

    @Test func aWrongSecretIsAskedAgainWithTheErrorShown() throws {
        let box = Sandbox()
        try Self.protectedStore(box)
        let pinentry = try ScriptedPinentry(box, answers: ["wrong", Self.passphrase])
        let r = try withoutTerminal(["get", "k"], environment: pinentry.environment(box), box: box)
        #expect(r.status == 0 && r.out == "v", "\(r.stderr)")
        let runs = pinentry.runs
        try #require(runs.count == 2)
        #expect(ScriptedPinentry.argument("SETERROR", in: runs[0].lines) == nil)
        #expect(ScriptedPinentry.argument("SETERROR", in: runs[1].lines) != nil, "\(runs[1].lines)")
        // A wrong secret from a descriptor is not asked again.
        let fromDescriptor = try withoutTerminal(["get", "k", "--passphrase-fd", "3"], environment: pinentry.environment(box), secret: "wrong", box: box)
        #expect(fromDescriptor.status == 1 && fromDescriptor.stderr.contains("[wrong-secret]") && pinentry.runs.count == 2, "\(fromDescriptor.stderr)")
    }

    /// A pinentry that dies is `interaction-required` at once; one that never answers is killed at
    /// its bound (KEYBAY_PINENTRY_TIMEOUT + 5 s for the question, 10 s for the greeting), `timed-out`,
    /// and so is one that floods `INQUIRE` and never reads the `CAN`s: every send has the same
    /// deadline as its answer (a send without one blocked the CLI for ever).
    @Test(arguments: [("die", 4, "[interaction-required]"), ("hang", 1, "[timed-out]"), ("silent", 1, "[timed-out]"), ("flood", 1, "[timed-out]")])
    func aPinentryThatDiesOrNeverAnswersFailsWithinItsBound(_ mode: String, _ status: Int32, _ code: String) throws {
        let box = Sandbox()
        try Self.protectedStore(box)
        let before = try #require(readBytes(box.storePath))
        let pinentry = try ScriptedPinentry(box, mode: mode)
        var environment = pinentry.environment(box)
        environment["KEYBAY_PINENTRY_TIMEOUT"] = "1"
        let r = try withoutTerminal(["get", "k"], environment: environment, box: box)
        #expect(r.status == status && r.stderr.contains(code), "\(mode): \(r.status) \(r.stderr)")
        #expect(readBytes(box.storePath) == before)
        // The pinentry that never answered is gone (killed and reaped), not left behind.
        let pid = try #require(pinentry.runs.first?.pid)
        #expect(kill(pid, 0) != 0, "pinentry \(pid) is still running")
    }

    @Test func noInputNeverStartsThePinentry() throws {
        let box = Sandbox()
        try Self.protectedStore(box)
        let pinentry = try ScriptedPinentry(box, answers: [Self.passphrase])
        let r = try withoutTerminal(["get", "k", "--no-input"], environment: pinentry.environment(box), box: box)
        #expect(r.status == 4 && r.stderr.contains("[interaction-required]"), "\(r.stderr)")
        #expect(pinentry.runs.isEmpty)
        // Without a terminal and with no pinentry at all: exit 4 as before.
        let none = try withoutTerminal(["get", "k"], environment: box.environment, box: box)
        #expect(none.status == 4 && none.stderr.contains("[interaction-required]"), "\(none.stderr)")
    }

    /// KEYBAY_PINENTRY is used even when the process has a terminal (a pseudo-terminal here).
    @Test func keybayPinentryIsUsedEvenWithATerminal() throws {
        let box = Sandbox()
        try Self.protectedStore(box)
        let pinentry = try ScriptedPinentry(box, answers: [Self.passphrase])
        let r = try run("/usr/bin/python3", [packageDirectory + "/Tests/pty/prompt_text.py", cliPath, "get", "k"], environment: pinentry.environment(box))
        #expect(pinentry.runs.count == 1 && r.out.contains("v") && !r.out.contains("Passphrase for"), "\(r.out) \(r.stderr)")
    }
}
