// SPDX-License-Identifier: Apache-2.0
import Foundation
import Glibc
import Testing

/// Plugins written as a third party would: built out of tree against an installed prefix only
/// (`make install-dev`: the header, keybay-plugin.pc, the guide and its example), then checked
/// with plugin-check and used through the CLI with --plugin-dir.
@Suite struct ExamplePluginTests {
    /// Runs the CLI with `pin` on descriptor 3 as `--pin-fd 3`.
    static func cli(_ box: Sandbox, _ args: [String], pin: String) throws -> RunResult {
        try box.cli(args, secret: pin, option: "--pin-fd")
    }

    /// `make install-dev` into `box.root/prefix`; returns the prefix.
    static func installDev(_ box: Sandbox) throws -> String {
        let prefix = box.root + "/prefix"
        let installed = try run("/usr/bin/make", ["-s", "-C", packageDirectory, "install-dev", "PREFIX=" + prefix], environment: box.environment)
        #expect(installed.status == 0, "\(installed.stderr)")
        return prefix
    }

    /// A private directory for a plugin (the loader refuses group- or other-writable ones).
    static func pluginDirectory(_ path: String) throws -> String {
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: false)
        chmod(path, 0o755)
        return path
    }

    @Test func cPluginBuiltFromTheInstalledExampleEnrollsAndUnlocks() throws {
        let box = Sandbox()
        // Header, .pc, guide and example only (`make install-dev`), no Swift build.
        let prefix = try Self.installDev(box)
        #expect(exists(prefix + "/include/keybay/keybay_plugin.h"))
        let pc = String(decoding: readBytes(prefix + "/lib/pkgconfig/keybay-plugin.pc") ?? [], as: UTF8.self)
        #expect(pc.contains("prefix=" + prefix + "\n") && pc.contains("Cflags: -I${includedir}/keybay"), "\(pc)")

        // The installed example, copied out as its README says, built with nothing but that prefix.
        let dir = box.root + "/c-plugin"
        try FileManager.default.copyItem(atPath: prefix + "/share/doc/keybay/examples/c-plugin", toPath: dir)
        chmod(dir, 0o755)
        var env = box.environment
        env["PKG_CONFIG_PATH"] = prefix + "/lib/pkgconfig"
        let built = try run("/usr/bin/make", ["-s", "-C", dir], environment: env)
        #expect(built.status == 0, "\(built.stderr)")
        try #require(exists(dir + "/libkeybay-com.example.pin.so"))

        let conformance = try run(cliPath, ["plugin-check", dir + "/libkeybay-com.example.pin.so"], environment: box.environment)
        #expect(conformance.status == 0 && conformance.out.contains(" 0 failed"), "\(conformance.out)")
        let listed = try run(cliPath, ["plugins", "--plugin-dir", dir], environment: box.environment)
        #expect(listed.out.contains("com.example.pin  method  1.0  available  " + dir + "/libkeybay-com.example.pin.so"), "\(listed.out)\(listed.stderr)")

        let enrolled = try Self.cli(box, ["enroll", "com.example.pin", "--json", "--plugin-dir", dir], pin: "482916")
        #expect(enrolled.status == 0, "\(enrolled.stderr)")
        #expect(enrolled.out.contains("\"plugin\":\"com.example.pin\""), "\(enrolled.out)")
        #expect(try box.cli("status", "--json").out.contains("\"state\":\"protected\""))

        let set = try Self.cli(box, ["set", "service/token", "correct horse", "--plugin-dir", dir], pin: "482916")
        #expect(set.status == 0, "\(set.stderr)")

        let right = try Self.cli(box, ["get", "service/token", "--plugin-dir", dir], pin: "482916")
        #expect(right.status == 0 && right.out == "correct horse", "\(right.stderr)")

        let wrong = try Self.cli(box, ["get", "service/token", "--plugin-dir", dir], pin: "482917")
        #expect(wrong.status == 1 && wrong.stdout.isEmpty && wrong.stderr.contains("wrong-secret"), "\(wrong.status) \(wrong.stderr)")
        #expect(!wrong.stderr.contains("48291"), "the PIN leaked into an error")

        let noInput = try run(cliPath, ["get", "service/token", "--no-input", "--plugin-dir", dir], environment: box.environment)
        #expect(noInput.status == 4 && noInput.stdout.isEmpty, "\(noInput.status) \(noInput.stderr)")

        // The plugin's own option check: it takes none.
        let option = try Self.cli(box, ["enroll", "com.example.pin", "--opt", "digits=8", "--plugin-dir", dir], pin: "482916")
        #expect(option.status == 2 && option.stderr.contains("unknown option 'digits'"), "\(option.status) \(option.stderr)")
    }

    /// The guide's C build line, as installed: the fenced block that starts `cc -std=c11`, for a
    /// plugin named `id` built from `source`, with `extraFlags` after `cc`.
    static func guideBuildLine(_ prefix: String, id: String, source: String, extraFlags: String = "") throws -> String {
        let guide = String(decoding: try #require(readBytes(prefix + "/share/doc/keybay/plugins.md")), as: UTF8.self)
        let start = try #require(guide.range(of: "```sh\ncc -std=c11"), "the installed guide has no C build line")
        let block = guide[start.upperBound...].prefix { $0 != "`" }
        let line = ("cc -std=c11" + block).replacingOccurrences(of: "\\\n", with: " ")
            .replacingOccurrences(of: "com.example.mymethod", with: id).replacingOccurrences(of: "mymethod.c", with: source)
        return line.replacingOccurrences(of: "cc -std=c11", with: "cc \(extraFlags) -std=c11")
    }

    /// The key-file fixture, built in `dir` (made private) as the installed guide says, against
    /// `prefix`, with `extraFlags` after `cc`; returns the plugin's path.
    static func buildKeyFile(_ box: Sandbox, prefix: String, in dir: String, extraFlags: String = "") throws -> String {
        var env = box.environment
        env["PKG_CONFIG_PATH"] = prefix + "/lib/pkgconfig"
        _ = try pluginDirectory(dir)
        try FileManager.default.copyItem(atPath: packageDirectory + "/Tests/TestPlugins/keyfile/keyfile.c", toPath: dir + "/keyfile.c")
        let line = try guideBuildLine(prefix, id: "com.example.keyfile", source: "keyfile.c", extraFlags: extraFlags)
        #expect(line.contains("-Wl,-z,defs") && line.contains("keyfile.c $(pkg-config --libs libsodium)\n"), "\(line)")
        let built = try run("/bin/sh", ["-c", "cd '\(dir)' && " + line], environment: env)
        #expect(built.status == 0, "\(line)\n\(built.stderr)")
        return dir + "/libkeybay-com.example.keyfile.so"
    }

    /// A key-file method (no prompt: the credential is a file named at enrollment), written from
    /// the installed guide and built with its build line against the installed prefix: plugin-check
    /// passes it with the documented `--opt path=A --wrong-opt path=B --change-credential 'cp B A'`,
    /// fails a broken copy whose M ignores the file (with either), fails with
    /// `--change-credential` a broken copy whose M ignores the file but whose parameters carry a
    /// salt (which `--wrong-opt` alone cannot tell), and names the option when enroll gets none.
    /// Then the CLI uses it.
    @Test func keyFileMethodBuiltFromTheInstalledGuidePassesPluginCheck() throws {
        let box = Sandbox()
        let prefix = try Self.installDev(box)
        func build(in dir: String, extraFlags: String = "") throws -> String {
            try Self.buildKeyFile(box, prefix: prefix, in: dir, extraFlags: extraFlags)
        }
        let plugin = try build(in: box.root + "/keyfile")
        let keyA = box.root + "/a.key", keyB = box.root + "/b.key"
        writeBytes(keyA, Array(repeating: 0x41, count: 64))
        writeBytes(keyB, Array(repeating: 0x42, count: 64))

        // Isolated, as every third-party plugin runs: the key files lie in the test's home, which
        // the sandbox refuses the plugin; the host opens them for it (open_file).
        func cli(_ arguments: String...) throws -> RunResult { try run(cliPath, arguments, environment: box.environment) }
        func check(_ path: String, _ options: [String]) throws -> RunResult {
            try run(cliPath, ["plugin-check", path] + options, environment: box.environment)
        }
        // The command copies B over A (a.key's bytes are put back before every check that runs it).
        let change = "cp '\(keyB)' '\(keyA)'"
        let changed = "after --change-credential '\(change)', unwrap of the enrolled parameters gives another M (or WRONG_SECRET)"
        func checkChanging(_ path: String, _ options: [String]) throws -> RunResult {
            writeBytes(keyA, Array(repeating: 0x41, count: 64))
            let r = try check(path, options + ["--change-credential", change])
            #expect(readBytes(keyA) == readBytes(keyB), "the command ran")
            return r
        }
        let passed = try checkChanging(plugin, ["--opt", "path=" + keyA, "--wrong-opt", "path=" + keyB])
        #expect(passed.status == 0 && passed.out.contains(" 0 failed") && !passed.out.contains("FAIL"), "\(passed.out)")
        #expect(passed.out.contains("isolated, in keybay-plugin-host"), "\(passed.out)")
        #expect(passed.out.contains("PASS  a second credential (--wrong-opt path=\(keyB)) gives a different M"), "\(passed.out)")
        #expect(passed.out.contains("SKIP  a wrong secret gives a different M (or WRONG_SECRET): unwrap asked the host for no secret"), "\(passed.out)")
        #expect(passed.out.contains("PASS  describe returns one line of text: \"key file \(keyA)\""), "\(passed.out)")
        let lines = passed.out.split(separator: "\n")
        #expect(lines.count > 2 && lines[lines.count - 2] == "PASS  \(changed)", "the change runs last: \(passed.out)")
        // Its output goes to standard error: --json stays JSON; a command that fails is a FAIL.
        let checkedJSON = try checkChanging(plugin, ["--opt", "path=" + keyA, "--json"])
        let results = try #require(try JSONSerialization.jsonObject(with: Data(checkedJSON.stdout)) as? [[String: Any]], "\(checkedJSON.out)")
        #expect(checkedJSON.status == 0 && results.last?["check"] as? String == changed && results.last?["result"] as? String == "pass", "\(checkedJSON.out)")
        writeBytes(keyA, Array(repeating: 0x41, count: 64))
        let failing = try check(plugin, ["--opt", "path=" + keyA, "--change-credential", "echo printed; exit 3"])
        #expect(failing.status == 1 && failing.out.contains("FAIL  after --change-credential 'echo printed; exit 3', unwrap of the enrolled parameters gives another M (or WRONG_SECRET): /bin/sh -c 'echo printed; exit 3' exited 3"), "\(failing.out)")
        #expect(!failing.out.contains("printed\n") && failing.stderr.contains("printed\n"), "\(failing.out)\(failing.stderr)")
        // One command, given to plugin-check only.
        #expect(try check(plugin, ["--opt", "path=" + keyA, "--change-credential", "true", "--change-credential", "true"]).status == 2)
        #expect(try box.cli("keys", "--change-credential", "true").status == 2)

        // Without --wrong-opt the wrong-secret check is skipped with a reason, never failed.
        let skipped = try check(plugin, ["--opt", "path=" + keyA])
        #expect(skipped.status == 0 && skipped.out.contains("give a second credential with --wrong-opt path=…"), "\(skipped.out)")

        // enroll needs an option: enroll fails naming it, the rest is listed as not run.
        let noOption = try check(plugin, [])
        #expect(noOption.status == 1, "\(noOption.out)")
        #expect(noOption.out.contains("FAIL  enroll with a scripted host") && noOption.out.contains("hint: enroll may need options: --opt path=…"), "\(noOption.out)")
        #expect(noOption.out.contains("NOT RUN  unwrap of the enrolled parameters returns the same M"), "\(noOption.out)")

        // A broken build whose M ignores the file fails, saying so, with either option.
        writeBytes(keyA, Array(repeating: 0x41, count: 64))
        let broken = try build(in: box.root + "/broken", extraFlags: "-DKEYFILE_BROKEN_SAME_M")
        let failed = try check(broken, ["--opt", "path=" + keyA, "--wrong-opt", "path=" + keyB])
        #expect(failed.status == 1 && failed.out.contains("FAIL  a second credential (--wrong-opt path=\(keyB)) gives a different M: enroll with --opt path=\(keyA) and with --opt path=\(keyB) returned the same M: M does not depend on the credential"), "\(failed.out)")
        let failedChanging = try checkChanging(broken, ["--opt", "path=" + keyA])
        #expect(failedChanging.status == 1 && failedChanging.out.contains("FAIL  \(changed): unwrap of the parameters enrolled before '\(change)', answered as at enroll, returned the enrolled M: M does not depend on the credential"), "\(failedChanging.out)")

        // One whose M ignores the file but whose parameters carry a salt: --wrong-opt alone is
        // inconclusive (two enrollments of A differ), so the run passes; --change-credential fails it.
        writeBytes(keyA, Array(repeating: 0x41, count: 64))
        let salted = try build(in: box.root + "/salted", extraFlags: "-DKEYFILE_BROKEN_SALTED")
        let inconclusive = try check(salted, ["--opt", "path=" + keyA, "--wrong-opt", "path=" + keyB])
        #expect(inconclusive.status == 0 && inconclusive.out.contains("SKIP  a second credential (--wrong-opt path=\(keyB)) gives a different M: inconclusive"), "\(inconclusive.out)")
        let caught = try checkChanging(salted, ["--opt", "path=" + keyA, "--wrong-opt", "path=" + keyB])
        #expect(caught.status == 1 && caught.out.contains("FAIL  \(changed): unwrap of the parameters enrolled before '\(change)', answered as at enroll, returned the enrolled M: M does not depend on the credential"), "\(caught.out)")
        #expect(caught.out.contains(" 1 failed"), "\(caught.out)")
        writeBytes(keyA, Array(repeating: 0x41, count: 64))

        // Through the CLI: its options in enroll --help, a mistyped path (exit 2), then a store it opens.
        let dir = box.root + "/keyfile"
        let help = try cli("enroll", "com.example.keyfile", "--help", "--plugin-dir", dir)
        #expect(help.status == 0 && help.out.contains("--opt path=…  absolute path of the key file"), "\(help.out)\(help.stderr)")
        let typo = try cli("enroll", "com.example.keyfile", "--opt", "path=" + box.root + "/nope.key", "--plugin-dir", dir, "--json")
        #expect(typo.status == 2 && typo.error?.code == "invalid-argument" && typo.error?.reason == "no-file" && typo.error?.path == box.root + "/nope.key",
                "\(typo.status) \(typo.out)")
        #expect(try cli("status", "--json").out.contains("\"state\":\"absent\""))
        let enrolled = try cli("enroll", "com.example.keyfile", "--opt", "path=" + keyA, "--plugin-dir", dir, "--no-input")
        #expect(enrolled.status == 0, "\(enrolled.stderr)")
        #expect(try cli("set", "k", "v", "--plugin-dir", dir, "--no-input").status == 0)
        #expect(try cli("get", "k", "--plugin-dir", dir, "--no-input").out == "v")
        // list reads the methods with the root alone; --describe loads the plugin for its line.
        let listed = try cli("list")
        #expect(listed.status == 0 && listed.out.contains("com.example.keyfile") && !listed.out.contains("key file"), "\(listed.out)")
        let described = try cli("list", "--describe", "--plugin-dir", dir)
        #expect(described.status == 0 && described.out.contains("    key file \(keyA)\n"), "\(described.out)\(described.stderr)")
        let json = try cli("list", "--describe", "--json", "--plugin-dir", dir)
        #expect(json.out.contains("\"description\":\"key file \(keyA)\""), "\(json.out)")
        let unknown = try cli("list", "--describe")
        #expect(unknown.status == 0 && unknown.out.contains("(unknown: plugin 'com.example.keyfile' not found"), "\(unknown.out)")
        // Another file at the same path: wrong-secret; no file: method-unavailable.
        writeBytes(keyA, Array(repeating: 0x43, count: 64))
        let wrong = try cli("get", "k", "--plugin-dir", dir, "--no-input")
        #expect(wrong.status == 1 && wrong.stderr.contains("wrong-secret"), "\(wrong.status) \(wrong.stderr)")
        unlink(keyA)
        let absent = try cli("get", "k", "--plugin-dir", dir, "--no-input", "--json")
        #expect(absent.status == 1 && absent.error?.code == "method-unavailable" && absent.error?.reason == "no-file" && absent.error?.path == keyA
                && absent.error?.pluginID == "com.example.keyfile", "\(absent.status) \(absent.out)")
    }

    /// A key-file method enrolled before the host recorded the files it opens (here by a build
    /// that opens the file itself, run in process) holds no grant. Isolated, unlocking fails
    /// naming that cause (`no-file-grant`); in process the plugin opens the file itself; `change`
    /// run once in process records the grant, and the method unlocks isolated from then on.
    @Test func aKeyFileMethodEnrolledBeforeGrantsSaysSoAndIsMigratedByChange() throws {
        let box = Sandbox()
        let prefix = try Self.installDev(box)
        _ = try Self.buildKeyFile(box, prefix: prefix, in: box.root + "/old", extraFlags: "-DKEYFILE_OWN_OPEN")
        _ = try Self.buildKeyFile(box, prefix: prefix, in: box.root + "/current")
        let key = box.root + "/a.key"
        writeBytes(key, Array(repeating: 0x41, count: 64))
        let inProcess = box.environment.merging(["KEYBAY_PLUGIN_ISOLATION": "none"]) { $1 }
        func cli(_ environment: [String: String], _ arguments: String...) throws -> RunResult { try run(cliPath, arguments, environment: environment) }
        #expect(try cli(box.environment, "set", "k", "v").status == 0)
        let enrolled = try cli(inProcess, "enroll", "com.example.keyfile", "--opt", "path=" + key, "--plugin-dir", box.root + "/old")
        try #require(enrolled.status == 0, "\(enrolled.stderr)")

        let current = box.root + "/current"
        let isolated = try cli(box.environment, "get", "k", "--plugin-dir", current, "--json")
        #expect(isolated.status == 1 && isolated.error?.code == "unsupported" && isolated.error?.reason == "no-file-grant"
                && isolated.error?.pluginID == "com.example.keyfile", "\(isolated.status) \(isolated.out)")
        #expect(try cli(inProcess, "get", "k", "--plugin-dir", current).out == "v")

        let method = try #require(try methodIDs(box).first)
        let changed = try cli(inProcess, "change", method, "--opt", "path=" + key, "--plugin-dir", current, "--no-input")
        #expect(changed.status == 0, "\(changed.stderr)")
        let migrated = try cli(box.environment, "get", "k", "--plugin-dir", current)
        #expect(migrated.status == 0 && migrated.out == "v", "\(migrated.stderr)")
    }
}
