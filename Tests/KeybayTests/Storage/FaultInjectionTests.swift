// SPDX-License-Identifier: Apache-2.0
import Foundation
import Glibc
import Testing

/// Every write path of the CLI, with one system call failing at each of its calls in turn
/// (`strace -e inject`): fsync, fdatasync, the renames, linkat, pread64 and write, with EIO and
/// (for the calls that can run out of space) ENOSPC. After each run three things must hold:
/// every acknowledged record reads back; what the command printed (its result object, with
/// `--json`: printed exactly when the change took effect, even when it exits 1 with `io`) is
/// what is on disk, and the credentials it names are the ones that open; and no run leaves a
/// store that nobody can open (or a half-made one: `root-only`, `store-only`).
@Suite struct FaultInjectionTests {
    static let calls = ["fsync", "fdatasync", "rename", "renameat", "renameat2", "linkat", "pread64", "write"]
    /// ENOSPC too, where running out of space is what the call does.
    static let noSpaceCalls: Set<String> = ["fsync", "fdatasync", "write"]

    /// One command on one starting state, with the check of what it left.
    struct Scenario: Sendable {
        let name: String
        /// The command prints a secret only the new store accepts (a recovery key): when it may
        /// not have reached standard output, the change must have been taken back.
        var showsSecret = false
        /// Prepares the starting state in a sandbox and returns what the check needs to know of it.
        let setup: @Sendable (Sandbox) throws -> [String: String]
        /// The command's arguments and its standard input, given the setup's facts.
        let command: @Sendable ([String: String]) -> (arguments: [String], stdin: String?)
        let check: @Sendable (Sandbox, [String: String], Outcome) throws -> Void
    }

    /// What a run said: its exit status and the JSON object it printed, if any. `outputLost`:
    /// the failing call was the write of that object to standard output, so whether the change
    /// took effect cannot be told from it (a change that shows a secret is then taken back).
    struct Outcome {
        let status: Int32
        let printed: [String: Any]?
        let outputLost: Bool
        let description: String
    }

    static let scenarios: [Scenario] = [
        Scenario(name: "change of the only method, a recovery key", showsSecret: true, setup: { box in
            let enrolled = try json(box.cli("enroll", "recovery", "--json", "--no-input"))
            try expectStatus(box.cli("set", "a", "1", "--method", enrolled["id"] as! String, "--recovery-key-fd", "0",
                                     stdin: Array((enrolled["recoveryKey"] as! String).utf8)), 0)
            return ["id": enrolled["id"] as! String, "key": enrolled["recoveryKey"] as! String]
        }, command: { facts in
            (["change", facts["id"]!, "--recovery-key-fd", "0", "--json", "--no-input"], facts["key"])
        }, check: { box, facts, outcome in
            if let printed = outcome.printed {
                let id = printed["methodId"] as! String, key = printed["recoveryKey"] as! String
                let printedKeyOpens = try record(box, "a", method: id, key: key) == "1"
                #expect(printedKeyOpens, "\(outcome.description): the printed key must open")
                let oldKeyOpens = try record(box, "a", method: facts["id"]!, key: facts["key"]!) == nil
                #expect(oldKeyOpens, "\(outcome.description): the old key still opens")
            } else {
                #expect(outcome.status != 0, "\(outcome.description)")
                let oldKeyOpens = try record(box, "a", method: facts["id"]!, key: facts["key"]!) == "1"
                #expect(oldKeyOpens, "\(outcome.description): nothing printed, so the old key must open")
            }
        }),
        Scenario(name: "enroll of a recovery key on a platform-only store", showsSecret: true, setup: { box in
            try expectStatus(box.cli("set", "a", "1"), 0)
            return [:]
        }, command: { _ in
            (["enroll", "recovery", "--json", "--no-input"], nil)
        }, check: { box, _, outcome in
            if let printed = outcome.printed {
                let printedKeyOpens = try record(box, "a", method: printed["id"] as? String, key: printed["recoveryKey"] as? String) == "1"
                #expect(printedKeyOpens, "\(outcome.description)")
                let onlyThePrintedMethod = try methodIDs(box) == [printed["id"] as! String]
                #expect(onlyThePrintedMethod, "\(outcome.description)")
            } else {
                #expect(outcome.status != 0, "\(outcome.description)")
                let noMethod = try methodIDs(box).isEmpty
                #expect(noMethod, "\(outcome.description): a method nobody was shown")
                let recordReads = try record(box, "a") == "1"
                #expect(recordReads, "\(outcome.description)")
            }
        }),
        // A method whose enrollment writes a file grant (methods package policy 2): the plugin,
        // isolated, reads its key file through open_file, at enroll and at unlock.
        Scenario(name: "enroll of a method with a file grant", setup: { box in
            try expectStatus(box.cli("set", "a", "1"), 0)
            let dir = box.root + "/granted-plugin", key = box.root + "/granted.key"
            writeBytes(key, Array(repeating: 0x4b, count: 32))
            let read = """
                int fd = -1; keybay_status st = h->open_file(h->context, "path", &fd); if (st != KEYBAY_OK) return st;
                uint8_t k[32]; ssize_t got = read(fd, k, sizeof k); close(fd); if (got != 32) return KEYBAY_ERR_IO;
                memcpy(s, k, 32); memset(k, 0, sizeof k);
                """
            let source = "#include <unistd.h>\n" + PluginLoaderTests.source(id: "granted", enroll: read + "p->data = calloc(1, 4); p->length = 4; return KEYBAY_OK;",
                                                                              unwrap: read + "return KEYBAY_OK;")
            try PluginLoaderTests.build(source, fileID: "granted", in: dir)
            return ["dir": dir, "key": key]
        }, command: { facts in
            (["enroll", "granted", "--plugin-dir", facts["dir"]!, "--opt", "path=" + facts["key"]!, "--json"], nil)
        }, check: { box, facts, outcome in
            if outcome.outputLost {
                let now = try state(box)
                #expect(now == "platform-only" || now == "protected", "\(outcome.description): \(now)")
            } else if let printed = outcome.printed {
                // The grant was stored with the method: the isolated unlock opens the key file again.
                let grantedOpens = try record(box, "a", method: printed["id"] as? String, pluginDirectory: facts["dir"]!) == "1"
                #expect(grantedOpens, "\(outcome.description)")
            } else {
                #expect(outcome.status != 0, "\(outcome.description)")
                let noMethod = try methodIDs(box).isEmpty
                #expect(noMethod, "\(outcome.description): a method nobody was told of")
                let recordReads = try record(box, "a") == "1"
                #expect(recordReads, "\(outcome.description)")
            }
        }),
        Scenario(name: "the first enrollment, on an empty home", showsSecret: true, setup: { _ in [:] }, command: { _ in
            (["enroll", "recovery", "--json", "--no-input"], nil)
        }, check: { box, _, outcome in
            if let printed = outcome.printed {
                let isProtected = try state(box) == "protected"
                #expect(isProtected, "\(outcome.description)")
                let keys = try box.cli("keys", "--method", printed["id"] as! String, "--recovery-key-fd", "0",
                                       stdin: Array((printed["recoveryKey"] as! String).utf8))
                #expect(keys.status == 0, "\(outcome.description): \(keys.stderr)")
            } else {
                #expect(outcome.status != 0, "\(outcome.description)")
                let isAbsent = try state(box) == "absent"
                #expect(isAbsent, "\(outcome.description)")
            }
        }),
        Scenario(name: "remove of the only method, a passphrase", setup: { box in
            let enrolled = try json(run(cliPath, ["enroll", "passphrase", "--json", "--passphrase-fd", "0"] + fastPassphraseFlags,
                                        environment: box.environment, stdin: Array("pw".utf8)))
            let id = enrolled["id"] as! String
            try expectStatus(box.cli("set", "a", "1", "--method", id, "--passphrase-fd", "0", stdin: Array("pw".utf8)), 0)
            return ["id": id]
        }, command: { facts in
            (["remove", facts["id"]!, "--json", "--passphrase-fd", "0"], "pw")
        }, check: { box, facts, outcome in
            if outcome.outputLost {
                let now = try state(box)
                #expect(now == "platform-only" || now == "protected", "\(outcome.description): \(now)")
            } else if outcome.printed != nil {
                let isPlatformOnly = try state(box) == "platform-only"
                #expect(isPlatformOnly, "\(outcome.description)")
                let recordReads = try record(box, "a") == "1"
                #expect(recordReads, "\(outcome.description)")
            } else {
                #expect(outcome.status != 0, "\(outcome.description)")
                let isProtected = try state(box) == "protected"
                #expect(isProtected, "\(outcome.description)")
                let passphraseOpens = try record(box, "a", method: facts["id"]!, passphrase: "pw") == "1"
                #expect(passphraseOpens, "\(outcome.description)")
            }
        }),
        Scenario(name: "set on an existing store", setup: { box in
            try expectStatus(box.cli("set", "a", "1"), 0)
            return [:]
        }, command: { _ in (["set", "b", "2", "--json"], nil) }, check: { box, _, outcome in
            let acknowledgedReads = try record(box, "a") == "1"
            #expect(acknowledgedReads, "\(outcome.description): an acknowledged record was lost")
            let newRecordAsSaid = try outcome.outputLost || record(box, "b") == (outcome.printed != nil ? "2" : nil)
            #expect(newRecordAsSaid, "\(outcome.description)")
            if outcome.printed == nil { #expect(outcome.status != 0, "\(outcome.description)") }
        }),
        Scenario(name: "the first set, on an empty home", setup: { _ in [:] }, command: { _ in (["set", "b", "2", "--json"], nil) },
                 check: { box, _, outcome in
            let now = try state(box)
            if outcome.printed != nil {
                let value = try record(box, "b")
                #expect(now == "platform-only" && value == "2", "\(outcome.description): \(now)")
            } else {
                #expect(outcome.status != 0 && (now == "absent" || now == "platform-only"), "\(outcome.description): \(now)")
                if now == "platform-only" && !outcome.outputLost {
                    let newRecordAbsent = try record(box, "b") == nil
                    #expect(newRecordAbsent, "\(outcome.description)")
                }
            }
        }),
        // An import of an age export (keybay-export/v1 by hand, encrypted by Debian's age):
        // one write of the store, so the records change all together or not at all.
        Scenario(name: "import age with --replace", setup: { box in
            try expectStatus(box.cli("set", "a", "1"), 0)
            try expectStatus(box.cli("set", "b", "old"), 0)
            let key = box.root + "/key.txt", layout = box.root + "/layout", file = box.root + "/in.age"
            try expectStatus(run("/usr/bin/age-keygen", ["-o", key], environment: box.environment), 0)
            let recipient = try run("/usr/bin/age-keygen", ["-y", key], environment: box.environment).out.trimmingCharacters(in: .whitespacesAndNewlines)
            writeBytes(layout, Array("keybay-export/v1\nb bmV3\nc Mw==\n".utf8))
            try expectStatus(run("/usr/bin/age", ["-r", recipient, "-o", file, layout], environment: box.environment), 0)
            return ["key": key, "file": file]
        }, command: { facts in
            (["import", "age", "--identity", facts["key"]!, facts["file"]!, "--replace", "--json"], nil)
        }, check: { box, _, outcome in
            let a = try record(box, "a"), b = try record(box, "b"), c = try record(box, "c")
            #expect(a == "1", "\(outcome.description): an acknowledged record was lost")
            let whole = (b == "new" && c == "3") || (b == "old" && c == nil)
            #expect(whole, "\(outcome.description): b \(String(describing: b)), c \(String(describing: c))")
            if outcome.printed != nil && !outcome.outputLost { #expect(b == "new" && c == "3", "\(outcome.description)") }
            if outcome.printed == nil { #expect(outcome.status != 0, "\(outcome.description)") }
        }),
        Scenario(name: "init on an empty home", setup: { _ in [:] }, command: { _ in (["init", "--json"], nil) },
                 check: { box, _, outcome in
            let now = try state(box)
            if outcome.printed != nil {
                #expect(now == "platform-only", "\(outcome.description)")
            } else {
                #expect(outcome.status != 0 && (now == "absent" || now == "platform-only"), "\(outcome.description): \(now)")
            }
        }),
    ]

    @Test(arguments: scenarios.indices)
    func everyFailingCallLeavesWhatTheCommandSaid(_ index: Int) throws {
        let scenario = Self.scenarios[index]
        let template = Sandbox()
        let facts = try scenario.setup(template)
        let (arguments, stdin) = scenario.command(facts)
        try Self.failEachCall(scenario.name, of: arguments, stdin: stdin, on: template, showsSecret: scenario.showsSecret) { box, outcome in
            try scenario.check(box, facts, outcome)
        }
    }

    /// `root move` from file-root to tpm2 (a swtpm) with each call failing in turn: the store
    /// opens on the root the command's output names (on the old one when it printed nothing),
    /// and one `reset` then leaves nothing, neither root file nor NV counter.
    @Test func everyFailingCallOfARootMoveLeavesAStoreOnTheRootItSaid() throws {
        let tpm = try SoftwareTPM(), template = Sandbox()
        let tcti = ["KEYBAY_TPM2_TCTI": tpm.tcti]
        let set = try run(cliPath, ["set", "a", "1"], environment: template.environment.merging(tcti) { $1 })
        try expectStatus(set, 0)
        try Self.failEachCall("root move", of: ["root", "move", "tpm2", "--json"], stdin: nil, on: template, environment: tcti) { box, outcome in
            let env = box.environment.merging(tcti) { $1 }
            let status = FaultInjectionTests.printedObject(try run(cliPath, ["status", "--json"], environment: env))
            let root = status?["rootPlugin"] as? String
            if outcome.printed != nil {
                #expect(root == "tpm2", "\(outcome.description): \(String(describing: status))")
            } else if !outcome.outputLost {
                #expect(root == "file-root", "\(outcome.description): \(String(describing: status))")
            }
            let value = try run(cliPath, ["get", "a"], environment: env)
            #expect(value.status == 0 && value.out == "1", "\(outcome.description): \(value.stderr)")
            let reset = try run(cliPath, ["reset", "--yes"], environment: env)
            #expect(reset.status == 0, "\(outcome.description): \(reset.stderr)")
            let after = FaultInjectionTests.printedObject(try run(cliPath, ["status", "--json"], environment: env))?["state"] as? String
            let nvIndexes = try tpm.handles("handles-nv-index")
            #expect(after == "absent" && !exists(box.rootPath) && nvIndexes.isEmpty, "\(outcome.description): \(String(describing: after)), \(nvIndexes)")
        }
    }

    /// Runs `arguments` on a copy of `template` once for every call it makes of `calls`, that
    /// call failing (EIO; ENOSPC too for `noSpaceCalls`), and checks what every run must leave
    /// before `check` looks at the rest.
    static func failEachCall(_ name: String, of arguments: [String], stdin: String?, on template: Sandbox, environment: [String: String] = [:],
                             showsSecret: Bool = false, check: (Sandbox, Outcome) throws -> Void) throws {
        // How often the command makes each call when nothing fails.
        let made = try Self.calls(template, arguments, stdin: stdin, environment: environment)
        #expect(made["fsync", default: []].count > 0 && made["pread64", default: []].count + made["write", default: []].count > 0,
                "\(name): strace saw no calls (\(made))")
        var runs = 0
        for call in Self.calls {
            for errno in Self.noSpaceCalls.contains(call) ? ["EIO", "ENOSPC"] : ["EIO"] {
                // The dynamic loader's reads of shared libraries come before any of our code.
                for (n, targets) in Self.invocations(made[call, default: []]) where !targets.allSatisfy(Self.isSharedLibrary) {
                    let target = targets.first { $0.hasPrefix("1<") } ?? targets[0]
                    let box = try Self.copy(template)
                    let r = try run("/usr/bin/strace", ["-f", "-qq", "-o", "/dev/null", "-e", "trace=\(call)", "-e",
                                                        "inject=\(call):error=\(errno):when=\(n)", cliPath] + arguments,
                                    environment: box.environment.merging(environment) { $1 }, stdin: stdin.map { Array($0.utf8) } ?? [])
                    let outputLost = call == "write" && target.hasPrefix("1<")
                    let printed = outputLost && showsSecret ? nil : Self.printedObject(r)
                    let outcome = Outcome(status: r.status, printed: printed, outputLost: outputLost && !showsSecret,
                                          description: "\(name), \(call) #\(n) on \(target) failing with \(errno): exit \(r.status), \(r.stderr)")
                    #expect(!r.signalled, "\(outcome.description)")
                    #expect(r.status == 0 || r.status == 1, "\(outcome.description)")
                    // Exit 0 always says what it did.
                    if r.status == 0 { #expect(printed != nil, "\(outcome.description)") }
                    let now = try state(box, environment: environment)
                    #expect(now != "root-only" && now != "store-only", "\(outcome.description): left \(now)")
                    try check(box, outcome)
                    runs += 1
                }
            }
        }
        #expect(runs >= 5, "\(name): only \(runs) runs")
    }

    /// The calls an undisturbed run of the command on a copy of `template` makes, in order for
    /// each system call: what its first argument names (`-y`: "3</path>", "1<pipe:[…]>").
    static func calls(_ template: Sandbox, _ arguments: [String], stdin: String?, environment: [String: String]) throws -> [String: [TracedCall]] {
        let box = try copy(template)
        let trace = box.root + "/trace"
        let r = try run("/usr/bin/strace", ["-f", "-qq", "-y", "-o", trace, "-e", "trace=" + calls.joined(separator: ","), cliPath] + arguments,
                        environment: box.environment.merging(environment) { $1 }, stdin: stdin.map { Array($0.utf8) } ?? [])
        #expect(r.status == 0, "undisturbed run: \(r.stderr)")
        // What the copy made outside its homes (a TPM's counter) goes with it.
        _ = try run(cliPath, ["reset", "--yes"], environment: box.environment.merging(environment) { $1 })
        return parseTrace(readBytes(trace) ?? [])
    }

    /// One system call in a trace: the process (or thread) that made it, and what its first
    /// argument named (`-y`: "3</path>", "1<pipe:[…]>").
    struct TracedCall: CustomStringConvertible {
        let pid: Substring
        let target: String
        var description: String { "\(pid) \(target)" }
    }

    /// strace counts `when=N` per traced process (and thread): the Nth call of each. Each N, with
    /// what the Nth call named in every process that made one. (The command's helpers,
    /// keybay-plugin-host among them, make calls of their own.)
    static func invocations(_ recorded: [TracedCall]) -> [(n: Int, targets: [String])] {
        var seen: [Substring: Int] = [:], byNumber: [Int: [String]] = [:]
        for call in recorded {
            let n = seen[call.pid, default: 0] + 1
            seen[call.pid] = n
            byNumber[n, default: []].append(call.target)
        }
        return byNumber.keys.sorted().map { ($0, byNumber[$0]!) }
    }

    /// What `strace -f -y` wrote: for each system call, its calls in order.
    static func parseTrace(_ trace: [UInt8]) -> [String: [TracedCall]] {
        var made: [String: [TracedCall]] = [:]
        for line in String(decoding: trace, as: UTF8.self).split(separator: "\n") {
            // "PID name(first, ...) = result"
            let parts = line.split(separator: " ", maxSplits: 1)
            guard parts.count == 2, let call = parts.last, let open = call.firstIndex(of: "(") else { continue }
            let first = call[call.index(after: open)...].prefix { $0 != "," && $0 != ")" }
            // strace pads the pid column: the name may follow more than one space.
            made[String(call[..<open].drop { $0 == " " }), default: []].append(TracedCall(pid: parts[0], target: String(first)))
        }
        return made
    }

    static func isSharedLibrary(_ target: String) -> Bool {
        target.hasSuffix(".so>") || target.contains(".so.")
    }

    /// A sandbox holding a copy of `template`'s homes.
    static func copy(_ template: Sandbox) throws -> Sandbox {
        let box = Sandbox(app: template.app)
        for (from, to) in [(template.dataHome, box.dataHome), (template.stateHome, box.stateHome)] where exists(from) {
            try expectStatus(run("/bin/cp", ["-a", from, to], environment: box.environment), 0)
        }
        return box
    }

    /// The JSON object on the first line of standard output, if there is one.
    /// The command's result object: its first line of JSON that is not the `{"error": …}`
    /// object --json also prints for a failure.
    static func printedObject(_ r: RunResult) -> [String: Any]? {
        r.stdout.split(separator: 0x0a).lazy.compactMap { (try? JSONSerialization.jsonObject(with: Data($0))) as? [String: Any] }
            .first { $0.count != 1 || $0["error"] == nil }
    }
}

/// The object a command printed with --json (it must have succeeded).
private func json(_ r: RunResult) throws -> [String: Any] {
    try expectStatus(r, 0)
    return try #require(FaultInjectionTests.printedObject(r), "no JSON object: \(r.out)")
}

private func expectStatus(_ r: RunResult, _ status: Int32) throws {
    try #require(r.status == status, "exit \(r.status): \(r.stderr)")
}

/// `status --json`'s state.
private func state(_ box: Sandbox, environment: [String: String] = [:]) throws -> String {
    let r = try run(cliPath, ["status", "--json"], environment: box.environment.merging(environment) { $1 })
    return (FaultInjectionTests.printedObject(r)?["state"] as? String) ?? "status failed: \(r.stderr)"
}

/// The value of `key` as the store gives it with the credential given (nil when the store does
/// not open with it or has no such record).
private func record(_ box: Sandbox, _ key: String, method: String? = nil, key secret: String? = nil, passphrase: String? = nil,
                    pluginDirectory: String? = nil) throws -> String? {
    var arguments = ["get", key, "--no-input"]
    if let method { arguments += ["--method", method] }
    if let pluginDirectory { arguments += ["--plugin-dir", pluginDirectory] }
    if secret != nil { arguments += ["--recovery-key-fd", "0"] }
    if passphrase != nil { arguments += ["--passphrase-fd", "0"] }
    let r = try run(cliPath, arguments, environment: box.environment, stdin: (secret ?? passphrase).map { Array($0.utf8) })
    return r.status == 0 ? r.out : nil
}
