// SPDX-License-Identifier: Apache-2.0
import Foundation
import Glibc
import Testing
@testable import Keybay

/// docs/cli.md's promises that no other suite exercises, each through the CLI as a process:
/// choosing the method, secrets from descriptors, reset without --yes, a full store, the
/// option syntax, the plugin search order, SIGPIPE, status on a foreign root.
@Suite struct CLIPromiseTests {
    static let pin = "1234"

    /// A protected store with two test-counting methods (labels "one" and "two"), their ids. The
    /// second's new PIN is given as new: the unlock descriptor is the first method's.
    static func twoMethods(_ box: Sandbox) throws -> [String] {
        #expect(try box.cli("set", "k", "v").status == 0)
        for label in ["one", "two"] {
            let r = try MethodLifecycleTests.cli(box, ["enroll", "test-counting", "--label", label], secrets: ["--pin-fd": pin, "--new-pin-fd": pin])
            #expect(r.status == 0, "\(r.stderr)")
        }
        return try methodIDs(box)
    }

    @Test func theMethodIsChosenAsDocumented() throws {
        let box = Sandbox()
        let ids = try Self.twoMethods(box)
        try #require(ids.count == 2)
        // Several methods, --no-input: exit 4, the message lists the ids, plugins and labels.
        let none = try box.cli("get", "k", "--no-input")
        #expect(none.status == 4 && none.stderr.contains("[interaction-required]"), "\(none.stderr)")
        for id in ids { #expect(none.stderr.contains(id), "the choice does not name \(id): \(none.stderr)") }
        #expect(none.stderr.contains("one") && none.stderr.contains("two") && none.stderr.contains("test-counting"))
        // Several methods, no terminal (the tests have none) and no --no-input: exit 4 as well.
        #expect(try box.cli(["get", "k"], secret: Self.pin, option: "--pin-fd").status == 4)
        // --method picks one, either of them.
        for id in ids {
            let got = try box.cli(["get", "k", "--method", id], secret: Self.pin, option: "--pin-fd")
            #expect(got.status == 0 && got.out == "v", "\(got.stderr)")
        }
        let unknown = try box.cli(["get", "k", "--method", String(repeating: "0", count: 32)], secret: Self.pin, option: "--pin-fd")
        #expect(unknown.status == 1 && unknown.stderr.contains("[method-not-found]"), "\(unknown.stderr)")
        let malformed = try box.cli("get", "k", "--method", "ABC")
        #expect(malformed.status == 2, "\(malformed.stderr)")
    }

    @Test func aMethodOnAPlatformOnlyStoreOrNoStore() throws {
        let box = Sandbox()
        let id = String(repeating: "a", count: 32)
        // No store: store-not-found, and nothing is created, not even by set (which otherwise creates).
        for command in [["get", "k"], ["set", "k", "v"], ["keys"]] {
            let r = try box.cli(command + ["--method", id], secret: Self.pin, option: "--pin-fd")
            #expect(r.status == 1 && r.stderr.contains("[store-not-found]"), "\(command): \(r.status) \(r.stderr)")
        }
        #expect(!exists(box.dataHome + "/keybay") && !exists(box.stateHome + "/keybay"), "a --method run created something")
        // A platform-only store: protection-mismatch.
        #expect(try box.cli("set", "k", "v").status == 0)
        let before = readBytes(box.storePath)
        let r = try box.cli(["get", "k", "--method", id], secret: Self.pin, option: "--pin-fd")
        #expect(r.status == 1 && r.stderr.contains("[protection-mismatch]"), "\(r.stderr)")
        #expect(readBytes(box.storePath) == before)
    }

    /// `--passphrase-fd N`: read to EOF, at most 64 KiB, one trailing newline removed; an empty
    /// or unreadable descriptor exits 2.
    @Test func secretsFromADescriptor() throws {
        let box = Sandbox()
        let fast = PassphraseTests.fast
        // "pw\n\n" is the passphrase "pw\n": only one newline goes.
        let enrolled = try box.cli(["enroll", "passphrase"] + fast, secret: "pw\n", option: "--passphrase-fd")
        #expect(enrolled.status == 0, "\(enrolled.stderr)")
        #expect(try box.cli(["keys"], secret: "pw\n", option: "--passphrase-fd").status == 0)
        let one = try box.cli(["keys"], secret: "pw", option: "--passphrase-fd")
        #expect(one.status == 1 && one.stderr.contains("[wrong-secret]"), "\"pw\" opened a store whose passphrase is \"pw\\n\": \(one.stderr)")
        // Any descriptor, standard input too.
        let piped = try run("/bin/sh", ["-c", "printf 'pw\\n\\n' | exec \"$0\" keys --passphrase-fd 0", cliPath], environment: box.environment)
        #expect(piped.status == 0, "\(piped.stderr)")
        // Empty, or nothing but the newline: exit 2.
        for script in ["exec \"$0\" keys --passphrase-fd 3 3</dev/null", "printf '\\n' | exec \"$0\" keys --passphrase-fd 0"] {
            let r = try run("/bin/sh", ["-c", script, cliPath], environment: box.environment)
            #expect(r.status == 2 && r.stderr.contains("empty") && r.stderr.contains("[invalid-argument]"), "\(script): \(r.stderr)")
        }
        // Unreadable: open for writing only.
        let writeOnly = try run("/bin/sh", ["-c", "exec \"$0\" keys --passphrase-fd 3 3>>\"$HOME/w\"", cliPath], environment: box.environment)
        #expect(writeOnly.status == 2 && writeOnly.stderr.contains("[invalid-argument]"), "\(writeOnly.stderr)")
        // Not open: refused before anything is opened (a closed number would be taken by the
        // CLI's own directory and read as the secret), so not even a store is created.
        let notOpen = try run("/bin/sh", ["-c", "exec \"$0\" keys --passphrase-fd 7", cliPath], environment: box.environment)
        #expect(notOpen.status == 2 && notOpen.stderr.contains("[invalid-argument]"), "\(notOpen.stderr)")
        let fresh = Sandbox()
        for fd in ["3", "7"] {
            let r = try run("/bin/sh", ["-c", "exec \"$0\" set k v --passphrase-fd \(fd)", cliPath], environment: fresh.environment)
            #expect(r.status == 2 && r.stderr.contains("[invalid-argument]") && !exists(fresh.storeDirectory), "fd \(fd): \(r.stderr)")
        }
        // An endless descriptor is read up to 64 KiB, not to its end (timeout: a hang guard);
        // 64 KiB is more than the passphrase plugin takes: exit 2.
        let endless = try run("/usr/bin/timeout", ["60", "/bin/sh", "-c", "exec \"$0\" keys --passphrase-fd 3 3</dev/zero", cliPath],
                              environment: box.environment)
        #expect(endless.status == 2 && endless.stderr.contains("[invalid-argument]"), "\(endless.status) \(endless.stderr)")
    }

    @Test func resetWithoutYesDeletesNothing() throws {
        let box = Sandbox()
        #expect(try box.cli("set", "k", "v").status == 0)
        let (store, root) = (readBytes(box.storePath), readBytes(box.rootPath))
        for args in [["reset"], ["reset", "--json"], ["reset", "--no-input"]] {
            let r = try run(cliPath, args, environment: box.environment)
            #expect(r.status == 2 && r.stderr.contains("--yes"), "\(args): \(r.status) \(r.stderr)")
        }
        #expect(readBytes(box.storePath) == store && readBytes(box.rootPath) == root && exists(box.lockPath))
        #expect(try box.cli("get", "k").out == "v")
    }

    /// Values of 1 MiB until the store would pass 16 MiB: that `set` exits 2 (store-full) and
    /// leaves the store as it was.
    @Test func aFullStoreRefusesTheSet() throws {
        let box = Sandbox()
        let value = [UInt8](repeating: 0x61, count: 1024 * 1024)
        var stored = 0
        var last: RunResult?
        while stored < 20 {
            let r = try box.cli("set", "v\(stored)", "--stdin", stdin: value)
            if r.status != 0 { last = r; break }
            stored += 1
        }
        let refused = try #require(last, "20 values of 1 MiB were stored")
        #expect(stored == 15 && refused.status == 2 && refused.stderr.contains("[store-full]"), "\(stored) stored, then \(refused.status) \(refused.stderr)")
        let before = readBytes(box.storePath)
        #expect(try box.cli("set", "v\(stored)", "--stdin", stdin: value).status == 2)
        #expect(readBytes(box.storePath) == before && !exists(box.stagingPath))
        #expect(try box.cli("keys").out.split(separator: "\n").count == stored)
    }

    @Test func helpWhereverItStandsRunsNothingElse() throws {
        let box = Sandbox()
        for args in [["--help"], ["-h"], ["help"], ["set", "k", "v", "--help"], ["set", "k", "v", "-h"], ["-h", "reset", "--yes"]] {
            let r = try run(cliPath, args, environment: box.environment)
            #expect(r.status == 0 && r.out.contains("keybay-methods") && r.out.contains("reset --yes") && r.stderr.isEmpty, "\(args): \(r.status) \(r.stderr)")
            #expect(!exists(box.dataHome + "/keybay") && !exists(box.stateHome + "/keybay"), "\(args) touched the store")
        }
        // `enroll PLUGIN --help` prints that plugin's options instead, and enrolls nothing.
        let plugin = try box.cli("enroll", "passphrase", "--help")
        #expect(plugin.status == 0 && plugin.out.contains("--opt memory-kib=") && plugin.stderr.isEmpty, "\(plugin.status) \(plugin.out) \(plugin.stderr)")
        #expect(!exists(box.dataHome + "/keybay") && !exists(box.stateHome + "/keybay"), "enroll --help touched the store")
        let bare = try box.cli()
        #expect(bare.status == 2 && bare.out.contains("keybay-methods"))
    }

    @Test func optionSyntax() throws {
        let box = Sandbox()
        // `--` ends the options: what follows is positional, "--stdin" and "-h" included.
        #expect(try box.cli("set", "--", "k", "--stdin").status == 0)
        #expect(try box.cli("get", "k").out == "--stdin")
        #expect(try box.cli("set", "--", "h", "-h").status == 0)
        #expect(try box.cli("get", "h").out == "-h")
        // A lone "-" is positional too.
        #expect(try box.cli("set", "dash", "-").status == 0 && box.cli("get", "dash").out == "-")
        // --option=value; flags take none.
        #expect(try box.cli("get", "k", "--json", "--app=\(box.app)").out == "{\"key\":\"k\",\"value\":\"--stdin\"}\n")
        for flag in ["--json=1", "--no-input=yes", "--yes=1"] {
            let r = try box.cli("get", "k", flag)
            #expect(r.status == 2, "\(flag) was accepted: \(r.out)")
        }
        let missing = try box.cli("get", "k", "--method")
        #expect(missing.status == 2, "a missing value: \(missing.stderr)")
    }

    /// Two directories with a plugin of the same id (distinct versions tell them apart).
    static func twins(_ box: Sandbox) throws -> (String, String) {
        let (a, b) = (box.root + "/a", box.root + "/b")
        for (dir, version) in [(a, "from-a"), (b, "from-b")] {
            _ = try PluginLoaderTests.build(PluginLoaderTests.source(id: "com.example.twin").replacingOccurrences(of: ".version = \"1\"", with: ".version = \"\(version)\""),
                                            fileID: "com.example.twin", in: dir)
        }
        return (a, b)
    }

    static func listed(_ r: RunResult, _ id: String) -> [String: Any]? {
        let list = (try? JSONSerialization.jsonObject(with: Data(r.stdout))) as? [[String: Any]]
        return list?.first { $0["id"] as? String == id }
    }

    @Test func pluginSearchOrderFirstOccurrenceWins() throws {
        let box = Sandbox()
        let (a, b) = try Self.twins(box)
        let id = "com.example.twin"
        // Repeated --plugin-dir: searched in the order given; the first holding the id decides.
        let ab = try box.cli("plugins", "--json", "--plugin-dir", a, "--plugin-dir", b)
        #expect(Self.listed(ab, id)?["path"] as? String == a + "/libkeybay-\(id).so" && Self.listed(ab, id)?["version"] as? String == "from-a", "\(ab.out)")
        let ba = try box.cli("plugins", "--json", "--plugin-dir", b, "--plugin-dir", a)
        #expect(Self.listed(ba, id)?["version"] as? String == "from-b", "\(ba.out)")
        #expect(ab.out.components(separatedBy: "\"id\":\"\(id)\"").count == 2, "listed once")
        // --plugin-dir before KEYBAY_PLUGIN_PATH; its entries in order; before the executable's directory.
        var env = box.environment
        env["KEYBAY_PLUGIN_PATH"] = b + "::" + a + ":" + (env["KEYBAY_PLUGIN_PATH"] ?? "")
        let fromEnvironment = try run(cliPath, ["plugins", "--json"], environment: env)
        #expect(Self.listed(fromEnvironment, id)?["version"] as? String == "from-b", "\(fromEnvironment.out)")
        let dirFirst = try run(cliPath, ["plugins", "--json", "--plugin-dir", a], environment: env)
        #expect(Self.listed(dirFirst, id)?["version"] as? String == "from-a", "\(dirFirst.out)")
        // A first-party plugin put in an earlier directory shadows the build directory's.
        let shadow = box.root + "/shadow"
        mkdir(shadow, 0o755)
        writeBytes(shadow + "/libkeybay-passphrase.so", try #require(readBytes(pluginDirectory + "/libkeybay-passphrase.so")))
        chmod(shadow + "/libkeybay-passphrase.so", 0o755)
        let shadowed = try box.cli("plugins", "--json", "--plugin-dir", shadow)
        #expect(Self.listed(shadowed, "passphrase")?["path"] as? String == shadow + "/libkeybay-passphrase.so", "\(shadowed.out)")
    }

    @Test func aRefusedFileHidesLaterOnes() throws {
        let box = Sandbox()
        let (a, b) = try Self.twins(box)
        let id = "com.example.twin"
        chmod(a + "/libkeybay-\(id).so", 0o777) // writable by others: refused
        let listing = try box.cli("plugins", "--json", "--plugin-dir", a, "--plugin-dir", b)
        let entry = Self.listed(listing, id)
        #expect(entry?["kind"] as? String == "refused" && entry?["path"] as? String == a + "/libkeybay-\(id).so", "\(listing.out)")
        #expect(!listing.out.contains("from-b"), "the later twin was used: \(listing.out)")
        // A load of that id fails naming the refused file; the later one is not tried.
        let enroll = try box.cli("enroll", id, "--plugin-dir", a, "--plugin-dir", b, "--json")
        #expect(enroll.status == 1 && enroll.error?.code == "plugin-refused" && enroll.error?.reason == "mode" && enroll.error?.path == a + "/libkeybay-\(id).so",
                "\(enroll.out)")
    }

    /// Needs root to give a directory to another user; elsewhere it is recorded as skipped.
    @Test(.enabled(if: getuid() == 0, "needs root to chown a directory to another user"))
    func aPluginDirectoryOwnedByAnotherUserIsRefused() throws {
        let box = Sandbox()
        let (a, _) = try Self.twins(box)
        let id = "com.example.twin"
        #expect(chown(a, 65534, 65534) == 0) // nobody
        let enroll = try box.cli("enroll", id, "--plugin-dir", a, "--json")
        #expect(enroll.status == 1 && enroll.error?.code == "plugin-refused" && enroll.error?.reason == "not-owner" && enroll.error?.path == a, "\(enroll.out)")
        var st = stat()
        #expect(stat(a, &st) == 0 && st.st_uid == 65534 && st.st_mode & 0o7777 == 0o755, "the directory was changed")
        let listing = try box.cli("plugins", "--json", "--plugin-dir", a)
        #expect(listing.status == 0 && Self.listed(listing, id)?["kind"] as? String == "refused", "\(listing.out)")
    }

    /// SIGPIPE is ignored: a reader that went away is an `io` failure, not a death by signal.
    /// (Python's subprocess gives the child the default SIGPIPE action, which this test process,
    /// ignoring SIGPIPE, would otherwise hand down.)
    @Test func aClosedPipeIsAnIOFailureNotASignal() throws {
        let box = Sandbox()
        #expect(try box.cli("set", "k", "v").status == 0)
        let script = """
            import os, subprocess, sys
            r, w = os.pipe()
            os.close(r)
            p = subprocess.run([sys.argv[1], "status"], stdout=w, stderr=subprocess.PIPE)
            print(p.returncode, p.stderr.decode())
            """
        let r = try run("/usr/bin/python3", ["-c", script, cliPath], environment: box.environment)
        #expect(r.out.hasPrefix("1 ") && r.out.contains("cannot write standard output") && r.out.contains("[io]"), "\(r.out) \(r.stderr)")
    }

    /// A root that exists but belongs to another store: a platform-only store still says
    /// platform-only (opening fails); a protected store's status itself fails.
    @Test func statusWithAForeignRoot() throws {
        let foreign = Sandbox()
        #expect(try foreign.cli("init").status == 0)
        let foreignRoot = try #require(readBytes(foreign.rootPath))

        let plain = Sandbox()
        #expect(try plain.cli("set", "k", "v").status == 0)
        writeBytes(plain.rootPath, foreignRoot)
        #expect(try plain.cli("status", "--json").out.contains("\"state\":\"platform-only\""))
        let get = try plain.cli("get", "k")
        #expect(get.status == 1 && get.stderr.contains("[platform-key-invalidated]"), "\(get.stderr)")

        let protected = Sandbox()
        _ = try Self.twoMethods(protected)
        writeBytes(protected.rootPath, foreignRoot)
        let status = try protected.cli("status")
        #expect(status.status == 1 && status.stderr.contains("[platform-key-invalidated]") && status.out.isEmpty, "\(status.status) \(status.stderr)")
    }
}
