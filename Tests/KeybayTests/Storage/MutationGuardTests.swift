// SPDX-License-Identifier: Apache-2.0
import CKeybayPlugin
import Foundation
import Glibc
import Testing
@testable import Keybay

/// Tests written against breaks made on purpose (docs/testing.md, "How each can fail"): each
/// fails when one promise of the code is taken out, where no other test did. They run the real
/// CLI and plugins, and look at what the kernel was asked (strace, /proc/locks, an LD_PRELOAD
/// shim) where the promise is about the order or the locking of system calls.
@Suite struct MutationGuardTests {
    // MARK: Durable writes

    /// One system call strace printed (`-f -y`): its name, the paths its descriptors name
    /// (`3</path>`) and its quoted arguments, in order, and whether it returned 0.
    struct Call {
        let name: String
        let descriptorPaths: [String]
        let strings: [String]
        let succeeded: Bool
    }

    static func parse(_ trace: String) -> [Call] {
        trace.split(separator: "\n").compactMap { line in
            // "PID name(args) = rc"; lines of other kinds (+++ exited, --- SIG, unfinished) are skipped.
            let fields = line.split(separator: " ", maxSplits: 1)
            guard fields.count == 2 else { return nil }
            let text = String(fields[1].drop { $0 == " " })
            guard let open = text.firstIndex(of: "("), !text.contains("unfinished"), !text.contains("resumed>") else { return nil }
            let name = String(text[..<open])
            func captures(_ pattern: String) -> [String] {
                let regex = try! NSRegularExpression(pattern: pattern)
                return regex.matches(in: text, range: NSRange(text.startIndex..., in: text)).compactMap {
                    Range($0.range(at: 1), in: text).map { String(text[$0]) }
                }
            }
            let succeeded = text.range(of: #"\) += 0$"#, options: .regularExpression) != nil
            return Call(name: name, descriptorPaths: captures(#"\d+<([^>]*)>"#), strings: captures(#""([^"]*)""#), succeeded: succeeded)
        }
    }

    /// Runs the CLI under `strace -f -y` for the calls that make a file durable and put it in place.
    static func traced(_ box: Sandbox, _ arguments: [String]) throws -> (result: RunResult, calls: [Call]) {
        let log = box.root + "/strace-\(UUID().uuidString)"
        defer { unlink(log) }
        let r = try run("/usr/bin/strace", ["-f", "-y", "-s", "256", "-o", log, "-e", "trace=fsync,fdatasync,write,pwrite64,rename,renameat,renameat2,linkat",
                                            cliPath] + arguments, environment: box.environment)
        let trace = String(decoding: readBytes(log) ?? [], as: UTF8.self)
        return (r, parse(trace))
    }

    /// Every rename or link that puts a file in place under the sandbox is preceded by an fsync
    /// of the file it moves (after its last write) and followed by an fsync of its directory, before the next rename or
    /// link and before the process ends: a crash right after the command acknowledged cannot
    /// take the new name back. Catches `sync()` taken out of `PrivateDirectory` (store writes,
    /// create and replace) and of the file-root plugin's root-file writes.
    @Test func everyFileMovedIntoPlaceIsFollowedByAnFsyncOfItsDirectory() throws {
        let box = Sandbox()
        let commands = [["set", "a", "1"], ["set", "a", "2"], ["enroll", "recovery", "--json"], ["rm", "a", "--recovery-key-fd", "0"]]
        var moves = 0
        var recoveryKey = ""
        for command in commands {
            var (r, calls): (RunResult, [Call])
            if command.contains("--recovery-key-fd") {
                let file = box.root + "/recovery-key"
                try (recoveryKey + "\n").write(toFile: file, atomically: true, encoding: .utf8)
                (r, calls) = try Self.tracedWithStdin(box, command, file)
            } else {
                (r, calls) = try Self.traced(box, command)
            }
            #expect(r.status == 0, "\(command): \(r.status) \(r.stderr)")
            if command[0] == "enroll" {
                let object = try JSONSerialization.jsonObject(with: Data(r.stdout)) as? [String: Any]
                recoveryKey = try #require(object?["recoveryKey"] as? String, "\(r.out)")
            }
            var pending: (directory: String, what: String)?
            var synced: Set<String> = []
            for call in calls where call.succeeded || call.name.hasSuffix("write") || call.name == "pwrite64" {
                switch call.name {
                case "fsync", "fdatasync":
                    guard let path = call.descriptorPaths.first else { continue }
                    synced.insert(path)
                    if pending?.directory == path { pending = nil }
                case "write", "pwrite64":
                    // A write after the fsync is not durable until the next one.
                    if let path = call.descriptorPaths.first { synced.remove(path) }
                case "rename", "renameat", "renameat2", "linkat":
                    // renameat/linkat(olddirfd<dir>, "old", newdirfd<dir>, "new"): the directories come from -y.
                    let directory = call.descriptorPaths.count == 2 ? call.descriptorPaths[1]
                        : (call.strings.last.map { ($0 as NSString).deletingLastPathComponent } ?? "")
                    guard directory.hasPrefix(box.root) else { continue }
                    #expect(pending == nil, "\(command): \(call.name) into \(directory) before \(pending!.what) was made durable (no fsync of \(pending!.directory))")
                    let source = call.descriptorPaths.count == 2 ? call.descriptorPaths[0] + "/" + call.strings[0] : call.strings.first ?? ""
                    #expect(synced.contains(source), "\(command): \(source) was not fsynced (after its last write) before \(call.name)")
                    synced.remove(source)
                    pending = (directory, "\(call.name) to \(directory)/\(call.strings.last ?? "")")
                    moves += 1
                default: break
                }
            }
            #expect(pending == nil, "\(command): \(pending?.what ?? "") was never followed by an fsync of \(pending?.directory ?? "")")
        }
        // set (create: the root file and the store linked in), set (replace), enroll (store and
        // root file: the floor), rm (replace): the trace saw them all.
        #expect(moves >= 6, "only \(moves) renames or links were traced")
    }

    static func tracedWithStdin(_ box: Sandbox, _ arguments: [String], _ stdinFile: String) throws -> (result: RunResult, calls: [Call]) {
        let log = box.root + "/strace-\(UUID().uuidString)"
        defer { unlink(log) }
        let r = try run("/bin/sh", ["-c", "exec /usr/bin/strace -f -y -s 256 -o \"$0\" -e trace=fsync,fdatasync,write,pwrite64,rename,renameat,renameat2,linkat \"$@\" < \"\(stdinFile)\"",
                                    log, cliPath] + arguments, environment: withoutLeakChecks(box.environment))
        return (r, parse(String(decoding: readBytes(log) ?? [], as: UTF8.self)))
    }

    /// The shim of Tests/TestTools/readback-shim, built for this test.
    static func readBackShim(_ box: Sandbox) throws -> String {
        let out = box.root + "/readback_shim.so"
        let r = try run("/usr/bin/cc", ["-std=c11", "-O1", "-shared", "-fPIC", "-o", out,
                                        packageDirectory + "/Tests/TestTools/readback-shim/readback_shim.c", "-ldl"],
                        environment: ["PATH": "/usr/bin:/bin"])
        #expect(r.status == 0, "cc: \(r.stderr)")
        return out
    }

    /// A disk that does not give back what was written (the shim flips the last byte of every
    /// read of the store once a new one is in place) makes every write fail with `io`: the
    /// create, a record write and a rotation each read the new file back and compare it. The
    /// rename has happened by then, so the change took effect: a recovery key is still shown.
    /// Catches the read-back after a write skipped (`StoreLifecycle.verifyWritten`).
    @Test(.enabled(if: sanitizer != "thread", "ThreadSanitizer's runtime must be the first library loaded"))
    func aWriteThatDoesNotReadBackIsAnIOFailure() throws {
        let box = Sandbox()
        let shim = try Self.readBackShim(box)
        let log = box.root + "/shim.log"
        var env = box.environment
        env["LD_PRELOAD"] = shim
        env["KEYBAY_READBACK_SHIM_LOG"] = log
        if let asan = env["ASAN_OPTIONS"] { env["ASAN_OPTIONS"] = asan + ":verify_asan_link_order=0" }
        func shimmed(_ arguments: [String]) throws -> (RunResult, Int) {
            unlink(log)
            let r = try run(cliPath, arguments, environment: env)
            let reads = String(decoding: readBytes(log) ?? [], as: UTF8.self).split(separator: "\n").count
            return (r, reads)
        }
        // The create (nothing there yet), then a record write and a rotation on a good store.
        let (created, createReads) = try shimmed(["set", "a", "1", "--json"])
        #expect(created.status == 1 && created.error?.code == "io" && created.error?.reason == "read-back-mismatch" && created.error?.path == box.storePath,
                "\(created.status) \(created.out)")
        #expect(createReads > 0, "the store was never read after it was put in place")
        #expect(try box.cli("reset", "--yes").status == 0)
        #expect(try box.cli("set", "a", "1").status == 0)
        for command in [["set", "a", "2", "--json"], ["enroll", "recovery", "--json"]] {
            let (r, reads) = try shimmed(command)
            if command[0] == "set" {
                // The result, then the error object (docs/cli.md, "A failure after the change took effect").
                let error = jsonError(r, afterAResult: true)
                #expect(r.status == 1 && error?.code == "io" && error?.reason == "read-back-mismatch" && error?.path == box.storePath,
                        "\(command): \(r.status) \(r.out)")
            } else {
                // A shown secret closes standard output once printed: the error is on standard error only.
                #expect(r.status == 1 && r.stderr.hasSuffix("[io]\n"), "\(command): \(r.status) \(r.stderr)")
            }
            #expect(reads > 0, "\(command): the store was never read after it was put in place")
            if command[0] == "enroll" {
                // The rename happened: the enrollment took effect, so its key must be shown, and
                // it opens the store (read without the shim).
                let object = (try? JSONSerialization.jsonObject(with: Data(r.stdout.split(separator: 0x0a).first ?? []))) as? [String: Any]
                let id = object?["id"] as? String, key = object?["recoveryKey"] as? String
                #expect(id != nil && key != nil, "\(command): the key of an enrollment that took effect was not shown: \(r.out)")
                if let id, let key {
                    let keys = try run(cliPath, ["keys", "--method", id, "--recovery-key-fd", "0"], environment: box.environment, stdin: Array(key.utf8))
                    #expect(keys.status == 0, "\(keys.stderr)")
                }
            }
            if command[0] == "set" {
                // The disk itself holds the write (only the shim's reads differ): without it, it reads.
                #expect(try box.cli("get", "a").out == "2")
            }
        }
    }

    // MARK: Locking

    /// Whether /proc/locks shows `pid` waiting (`->`) for an exclusive (WRITE) flock.
    static func waitsForExclusiveFlock(_ pid: pid_t) -> Bool {
        let locks = String(decoding: readBytes("/proc/locks") ?? [], as: UTF8.self)
        return locks.split(separator: "\n").contains { line in
            let fields = line.split(separator: " ")
            guard let arrow = fields.firstIndex(of: "->"), fields.count > arrow + 4 else { return false }
            return fields[arrow + 1] == "FLOCK" && fields[arrow + 3] == "WRITE" && fields[arrow + 4] == Substring(String(pid))
        }
    }

    /// A rotation (`enroll`) waits while another process holds the lock shared (a reader):
    /// /proc/locks shows it waiting for the exclusive lock, the store is untouched meanwhile, and
    /// it completes once the reader lets go. Catches a rotation taken under a shared lock.
    @Test func aRotationWaitsForReadersToLetGo() throws {
        let box = Sandbox()
        #expect(try box.cli("set", "a", "1").status == 0)
        let before = readBytes(box.storePath)
        let lock = open(box.lockPath, O_RDONLY | O_CLOEXEC)
        try #require(lock >= 0, "the lock file \(box.lockPath)")
        defer { close(lock) }
        #expect(flock(lock, LOCK_SH) == 0)
        var fds: [Int32] = [0, 0]
        try #require(closeOnExecPipe(&fds))
        let pid = spawnChild(cliPath, ["enroll", "recovery", "--json"], environment: box.environment, stdinPath: "/dev/null", stdout: fds[1])
        close(fds[1])
        defer { close(fds[0]) }
        var waiting = false, exited = false
        var status: Int32 = 0
        let deadline = Date().addingTimeInterval(20) // a hang guard: the child normally waits within milliseconds
        while Date() < deadline {
            if waitpid(pid, &status, WNOHANG) == pid { exited = true; break }
            if Self.waitsForExclusiveFlock(pid) { waiting = true; break }
            usleep(5_000)
        }
        #expect(!exited, "the rotation finished (status \(status)) while another process held the lock shared")
        #expect(waiting, "the rotation was not seen waiting for the exclusive lock")
        let unchanged = readBytes(box.storePath) == before
        #expect(unchanged, "the store changed while a reader held the lock")
        flock(lock, LOCK_UN)
        if !exited { _ = waitChild(pid) }
        #expect(try methodIDs(box).count == 1, "the rotation completed once the reader let go")
    }

    // MARK: Plugin loading

    /// A plugin directory writable by its group (0775, 0770) or by others (0757, 0777) is
    /// refused, naming it (`path`), and is left as it was; 0755 loads.
    @Test func aPluginDirectoryWritableByGroupOrOthersIsRefused() throws {
        let box = Sandbox()
        let dir = box.root + "/plugins"
        try PluginLoaderTests.build(PluginLoaderTests.source(), in: dir)
        #expect(PluginLoaderTests.loadError(dir: dir) == nil, "0755 loads")
        for m: mode_t in [0o775, 0o770, 0o757, 0o777, 0o765] {
            chmod(dir, m)
            let e = PluginLoaderTests.loadError(dir: dir)
            #expect(e?.code == .pluginRefused && e?.path == dir,
                    "mode \(String(m, radix: 8)): \(String(describing: e))")
            #expect(mode(dir) == m, "the directory's mode was changed")
        }
        chmod(dir, 0o755)
    }

    // MARK: Passphrase

    /// Argon2id above 64 MiB is computed with the memory the parameters say: the plugin's M for
    /// 128 MiB equals the `argon2` reference CLI's, an enrollment with memory-kib=131072 records
    /// 131072 and unwraps to its own M, and the CLI describes it as 128 MiB. Catches a cap on
    /// the memory inside the plugin.
    @Test func passphraseMemoryAbove64MiBIsUsedAsGiven() throws {
        let box = Sandbox()
        let plugin = try PluginLoader.load(id: "passphrase", kind: KEYBAY_KIND_METHOD,
                                           search: KeybayPluginSearch(directories: [pluginDirectory], environmentPath: nil))
        let (kib, salt, passphrase) = (UInt32(131072), "keybay-salt-128m", "correct horse battery staple")
        func u32(_ v: UInt32) -> [UInt8] { [UInt8(v >> 24), UInt8(v >> 16 & 0xff), UInt8(v >> 8 & 0xff), UInt8(v & 0xff)] }
        let params = [1] + u32(0x13) + u32(kib) + u32(1) + u32(1) + Array(salt.utf8)
        let m = try plugin.unwrap(params: params, interaction: ScriptedInteraction([passphrase]))
        let reference = try run("/bin/sh", ["-c", "printf '%s' '\(passphrase)' | argon2 '\(salt)' -id -v 13 -t 1 -k \(kib) -p 1 -l 32 -r"],
                                environment: ["PATH": "/usr/bin:/bin"])
        #expect(reference.status == 0, "the argon2 reference CLI (apt-get install argon2): \(reference.stderr)")
        let hexM = m.withUnsafeBytes { hexString($0) }
        #expect(hexM == reference.out.trimmingCharacters(in: .whitespacesAndNewlines), "plugin \(hexM), argon2 CLI \(reference.out)")

        let options = [("memory-kib", "131072"), ("iterations", "1"), ("lanes", "1")]
        let enrolled = try plugin.enroll(options: options, interaction: ScriptedInteraction([passphrase, passphrase]))
        #expect(Array(enrolled.params[5..<9]) == u32(kib), "the parameters record \(enrolled.params[5..<9].map { $0 })")
        #expect(try plugin.unwrap(params: enrolled.params, interaction: ScriptedInteraction([passphrase])).equals(enrolled.secret))
        #expect(try plugin.describe(params: enrolled.params) == "Argon2id v1.3, 128 MiB, t=1, p=1")

        let cli = try PassphraseTests.cli(box, ["enroll", "passphrase", "--opt", "memory-kib=131072", "--opt", "iterations=1", "--opt", "lanes=1"],
                                          passphrase: passphrase)
        #expect(cli.status == 0, "\(cli.stderr)")
        let listed = try box.cli("list", "--describe")
        #expect(listed.out.contains("Argon2id v1.3, 128 MiB, t=1, p=1"), "\(listed.out)")
        #expect(try PassphraseTests.cli(box, ["verify"], passphrase: passphrase).status == 0)
    }

    // MARK: Secrets never quoted

    /// A token no message of Keybay's contains; the secrets below repeat it, so a quote of 15
    /// bytes or more of any of them shows it.
    static let marker = "kbM4rk3r"

    static func repeated(_ count: Int) -> String {
        String(String(repeating: marker, count: count / marker.count + 1).prefix(count))
    }

    /// The plugins' error paths for a secret they refuse (too long, empty, not a key, a wrong
    /// one) run with secrets made of a marker: each fails as documented and none quotes it, on
    /// standard output or standard error. Catches a plugin that quotes the passphrase (or the
    /// recovery key, or the PIN) in its error.
    @Test func errorPathsForRefusedSecretsNeverQuoteThem() throws {
        var runs: [(String, RunResult)] = []
        func record(_ what: String, _ r: RunResult, status: Int32, code: String) {
            #expect(r.status == status && r.stderr.contains("[\(code)]"), "\(what): \(r.status) \(r.stderr)")
            runs.append((what, r))
        }
        // passphrase: 1025 bytes (one over its limit) at enrollment and at unlock.
        let box = Sandbox()
        record("enroll passphrase, 1025 bytes", try PassphraseTests.cli(box, ["enroll", "passphrase"] + PassphraseTests.fast, passphrase: Self.repeated(1025)),
               status: 2, code: "invalid-argument")
        #expect(try PassphraseTests.cli(box, ["enroll", "passphrase"] + PassphraseTests.fast, passphrase: "right one").status == 0)
        record("get, a 1025-byte passphrase", try PassphraseTests.cli(box, ["get", "a"], passphrase: Self.repeated(1025)), status: 2, code: "invalid-argument")
        record("get, a wrong passphrase", try PassphraseTests.cli(box, ["get", "a"], passphrase: Self.repeated(40)), status: 1, code: "wrong-secret")

        // recovery: too long, one character too many, a letter outside the alphabet, a bad checksum.
        let recovery = Sandbox()
        _ = try RecoveryTests.enroll(recovery)
        for (what, key, code) in [("257 bytes", Self.repeated(257), "wrong-secret"), ("57 characters", Self.repeated(57), "wrong-secret"),
                                  ("a U", Self.repeated(30) + "U" + Self.repeated(25), "wrong-secret"), ("56 characters", Self.repeated(56), "wrong-secret")] {
            record("recovery key, \(what)", try RecoveryTests.get(recovery, key: key), status: 1, code: code)
        }

        // fido2 (the virtual key, PIN 1234): a PIN of 64 bytes (over the 63 CTAP2 allows), a wrong one.
        let fido = Sandbox()
        var env = fido.environment
        env["KEYBAY_TEST_FIDO2"] = "0:pin=1234;0:seed=marker"
        #expect(try fido.cli(["set", "a", "1"], secret: nil, option: nil, environment: env).status == 0)
        let enrolled = try fido.cli(["enroll", "test-fido2", "--opt", "pin=required"], secret: "1234", option: "--pin-fd", environment: env)
        #expect(enrolled.status == 0, "\(enrolled.stderr)")
        record("fido2 PIN, 64 bytes", try fido.cli(["get", "a"], secret: Self.repeated(64), option: "--pin-fd", environment: env), status: 2, code: "invalid-argument")
        record("fido2 PIN, wrong", try fido.cli(["get", "a"], secret: Self.repeated(8), option: "--pin-fd", environment: env), status: 1, code: "wrong-secret")

        for (what, r) in runs {
            #expect(!r.out.contains(Self.marker) && !r.stderr.contains(Self.marker), "\(what) quoted the secret: \(r.out) \(r.stderr)")
        }
    }

    // MARK: Recovery key

    /// One wrong character anywhere is a typo, never an open store: the first and the last
    /// character of each of the seven groups, the key's last character included (it lies in the
    /// checksum's third byte alone). Catches a checksum compared over fewer than its 3 bytes.
    @Test func aRecoveryKeyTypoInAnyGroupIsATypo() throws {
        let box = Sandbox()
        let (_, key, _) = try RecoveryTests.enroll(box)
        let alphabet = Array("0123456789ABCDEFGHJKMNPQRSTVWXYZ")
        let groups = key.split(separator: "-").map(Array.init)
        try #require(groups.count == 7 && groups.allSatisfy { $0.count == 8 }, "\(key)")
        #expect(try RecoveryTests.get(box, key: key).out == "v")
        for g in 0..<7 {
            for i in [0, 7] {
                var typed = groups
                let at = try #require(alphabet.firstIndex(of: typed[g][i]))
                typed[g][i] = alphabet[(at + 1) % alphabet.count]
                let r = try RecoveryTests.get(box, key: typed.map { String($0) }.joined(separator: "-"), json: true)
                #expect(RecoveryTests.isRefused(r, reason: "typo-checksum"), "group \(g + 1), character \(i + 1): \(r.status) \(r.out)")
            }
        }
    }

    // MARK: FIDO2

    /// A key that answers a presence-requiring unlock without the UP flag (the virtual key's
    /// `skip-up`: no touch, the answer signed all the same) is refused as `unsupported`; the same
    /// key opens a store enrolled with presence=no, and with the touch the first store opens.
    /// Catches the user-presence flag left unchecked.
    @Test func anAnswerWithoutTheUserPresenceFlagIsRefused() throws {
        func environment(_ box: Sandbox, _ keys: String) -> [String: String] {
            var env = box.environment
            env["KEYBAY_TEST_FIDO2"] = keys
            return env
        }
        for presence in ["required", "no"] {
            let box = Sandbox()
            #expect(try box.cli("set", "a", "1").status == 0)
            let enrolled = try run(cliPath, ["enroll", "test-fido2", "--opt", "pin=no", "--opt", "presence=\(presence)"],
                                   environment: environment(box, "0:seed=presence"))
            #expect(enrolled.status == 0, "\(enrolled.stderr)")
            let skipped = try run(cliPath, ["get", "a", "--json"], environment: environment(box, "0:seed=presence;0:skip-up=1"))
            if presence == "required" {
                #expect(skipped.status == 1 && skipped.error?.code == "unsupported" && skipped.error?.reason == "touch-not-confirmed",
                        "\(skipped.status) \(skipped.out)")
                let touched = try run(cliPath, ["get", "a"], environment: environment(box, "0:seed=presence"))
                #expect(touched.status == 0 && touched.out == "1", "\(touched.stderr)")
            } else {
                #expect(skipped.status == 0 && skipped.out == "{\"key\":\"a\",\"value\":\"1\"}\n", "presence=no: \(skipped.stderr)")
            }
        }
    }
}
