// SPDX-License-Identifier: Apache-2.0
import Foundation
import Glibc
import Testing

/// libkeybay.so.1 as a C host uses it: installed with `make install` into a temporary prefix,
/// Tests/capi/capi_check.c built with `cc … $(pkg-config --cflags --libs keybay)` and run with
/// no LD_LIBRARY_PATH (its checks: open, set, get, keys, delete, a missing key, bad arguments,
/// four threads on one handle, a passphrase enrolled through ask_secret, a wrong one, removing
/// the method, a recovery key without show_secret, status JSON, reset, every code's name).
@Suite struct CAPITests {
    static let installed: Result<String, Error> = Result {
        let prefix = NSTemporaryDirectory() + "keybay-capi-\(getpid())"
        try? FileManager.default.removeItem(atPath: prefix)
        let make = try run("/usr/bin/make", ["-s", "-C", packageDirectory, "install", "BIN=" + buildDirectory, "PREFIX=" + prefix, "PREFIX_RECORD="],
                           environment: ["PATH": "/usr/bin:/bin"])
        guard make.status == 0 else { throw KeybayTestFailure("make install: \(make.stderr)") }
        return prefix
    }

    /// capi_check (or another program of Tests/capi, or of `directory`) built against the
    /// installed prefix with `cc -std=c11 -Wall -Wextra -Werror … $(pkg-config --cflags --libs keybay)`.
    static func built(_ prefix: String, as name: String = "capi_check", from source: String = "capi_check.c",
                      in directory: String = "Tests/capi") throws -> String {
        let program = prefix + "/" + name
        let flags = try run("/usr/bin/pkg-config", ["--cflags", "--libs", "keybay"],
                            environment: ["PATH": "/usr/bin:/bin", "PKG_CONFIG_PATH": prefix + "/lib/pkgconfig"])
        guard flags.status == 0 else { throw KeybayTestFailure("pkg-config: \(flags.stderr)") }
        let cc = try run("/usr/bin/cc", ["-std=c11", "-Wall", "-Wextra", "-Werror", packageDirectory + "/" + directory + "/" + source]
                         + flags.out.split(whereSeparator: \.isWhitespace).map(String.init) + ["-lpthread", "-o", program],
                         environment: ["PATH": "/usr/bin:/bin"])
        guard cc.status == 0 else { throw KeybayTestFailure("cc: \(cc.stderr)") }
        return program
    }

    @Test func aCHostBuiltWithPkgConfigRunsFromTheInstalledPrefix() throws {
        let prefix = try Self.installed.get()
        let program = try Self.built(prefix)
        let box = Sandbox(app: "com.example.c-host")
        var environment = box.environment
        environment["KEYBAY_PLUGIN_PATH"] = nil // the installed library finds the installed plugins
        let r = try run(program, [], environment: environment)
        #expect(r.status == 0, "\(r.out) \(r.stderr)")
        #expect(r.out.contains("capi_check: ") && r.out.contains(" checks, 0 failures"), "\(r.out)")
        // Nothing of the Swift toolchain at run time, and no LD_LIBRARY_PATH was needed.
        let ldd = try run("/usr/bin/ldd", [program], environment: ["PATH": "/usr/bin:/bin"])
        #expect(ldd.status == 0 && ldd.out.contains(prefix + "/lib/libkeybay.so.1") && !ldd.out.contains("swift"), "\(ldd.out)")
        let libraryLdd = try run("/usr/bin/ldd", [prefix + "/lib/libkeybay.so.1"], environment: ["PATH": "/usr/bin:/bin"])
        #expect(!libraryLdd.out.contains("swift") && !libraryLdd.out.contains("libstdc++"), "\(libraryLdd.out)")
    }

    /// keybay_default_interaction(): NULL with no terminal (a new session) and no pinentry
    /// (KEYBAY_PINENTRY=none, or none on PATH); with KEYBAY_PINENTRY naming one, a struct through
    /// which a passphrase is enrolled and the store opened, each question with the method's label
    /// (the library's own asker, also for a copy of the struct), and a direct ask_secret.
    @Test func theDefaultInteractionAsksThroughPinentryAndIsNullWithNowhereToAsk() throws {
        let prefix = try Self.installed.get()
        // A program of its own: another test runs capi_check meanwhile.
        let program = try Self.built(prefix, as: "capi_check_default")
        let box = Sandbox(app: "com.example.c-default")
        var environment = box.environment
        environment["KEYBAY_PLUGIN_PATH"] = nil
        let off = try run("/usr/bin/setsid", ["-w", program, "default-interaction", "null"], environment: environment)
        #expect(off.status == 0, "KEYBAY_PINENTRY=none: \(off.out)")
        var nothing = environment
        nothing["KEYBAY_PINENTRY"] = nil
        nothing["PATH"] = box.root
        let none = try run("/usr/bin/setsid", ["-w", program, "default-interaction", "null"], environment: nothing)
        #expect(none.status == 0, "no pinentry on PATH: \(none.out)")
        let pinentry = try ScriptedPinentry(box, answers: Array(repeating: "pw", count: 5))
        var named = pinentry.environment(box)
        named["KEYBAY_PLUGIN_PATH"] = nil
        let asked = try run("/usr/bin/setsid", ["-w", program, "default-interaction", "set"], environment: named)
        #expect(asked.status == 0 && asked.out.contains(" checks, 0 failures"), "\(asked.out) \(asked.stderr)")
        let descriptions = pinentry.runs.map { ScriptedPinentry.argument("SETDESC", in: $0.lines) ?? "" }
        #expect(descriptions.count == 5, "\(descriptions)")
        #expect(descriptions.prefix(4).allSatisfy { $0.contains("“main”") && $0.contains(box.app) }, "\(descriptions)")
        #expect(descriptions.last.map { !$0.contains("“main”") } == true, "\(descriptions)")
    }

    /// A host that forks after an isolated method ran (Tests/capi/fork_host.c): the child never
    /// uses its parent's helper or spawner. Daemon-style (the parent exits at once) the child opens
    /// the store twice; with parent and child opening at once, both read. Each run is bounded at
    /// 20 s, so a hang fails rather than stalls. (Before, the child's first open failed on its
    /// parent's socket and its second waited for ever on a condition variable copied from it.)
    @Test(arguments: ["daemon", "both"])
    func aForkedHostOpensTheStoreWithHelpersOfItsOwn(_ mode: String) throws {
        let prefix = try Self.installed.get()
        let program = try Self.built(prefix, as: "fork_host_\(mode)", from: "fork_host.c")
        let box = Sandbox(app: "com.example.fork-\(mode)")
        var environment = box.environment
        environment["KEYBAY_PLUGIN_PATH"] = nil
        #expect(try run(cliPath, ["set", "k", "v"], environment: environment).status == 0)
        let enroll = try box.cli(["enroll", "passphrase", "--no-input"] + fastPassphraseFlags, secret: "fork passphrase",
                                 option: "--new-passphrase-fd", environment: environment)
        #expect(enroll.status == 0, "\(enroll.stderr)")
        // Daemon-style the child outlives the parent (and so any bound on it): it reports in a file,
        // which is read for 20 s at most, and the child is then killed whatever it did.
        let report = box.root + "/child-report"
        // The daemon-style parent exits at once, started with no descriptor but 0-2: Foundation's
        // own watch on it, inherited by the child, would keep `run` waiting for a child that hangs.
        // The other is killed at 20 s with its child (its process group).
        let closing = "import os, sys; os.closerange(3, 65536); os.execv(sys.argv[1], sys.argv[1:])"
        let r = mode == "daemon" ? try run("/usr/bin/python3", ["-c", closing, program, box.app, mode, report], environment: environment)
                                 : try run("/usr/bin/timeout", ["-s", "KILL", "20", program, box.app, mode], environment: environment)
        var out = r.out
        if mode == "daemon" {
            for _ in 0..<200 where (readBytes(report).map { String(decoding: $0, as: UTF8.self) } ?? "").components(separatedBy: "child: ").count < 3 {
                usleep(100_000)
            }
            let text = readBytes(report).map { String(decoding: $0, as: UTF8.self) } ?? ""
            if let pid = text.split(separator: "\n").first.flatMap({ Int32($0.dropFirst(4)) }) { kill(pid, SIGKILL) }
            out += text
        }
        let lines = out.split(separator: "\n").map(String.init)
        #expect(r.status == 0 && !r.signalled, "\(out) \(r.stderr)")
        #expect(lines.filter { $0 == "child: v" }.count == 2, "\(out)")
        #expect(lines.filter { $0 == "parent: v" }.count == (mode == "both" ? 3 : 1), "\(out)")
    }

    /// Tests/capi/policy_check.c: a store with a passphrase and a recovery key, listed by
    /// keybay_status_get; no method and no chooser is authentication-required with both in
    /// keybay_error_methods; choose_method picks the recovery key, whose ask request carries its
    /// id, label, plugin and the application; contains, get_many, verify; keybay_unlock lets a
    /// second process read without asking, keybay_lock ends that; clear_all; tries.
    @Test func aCHostChoosesAmongMethodsAndUsesTheWholeAPI() throws {
        let prefix = try Self.installed.get()
        let program = try Self.built(prefix, as: "policy_check", from: "policy_check.c")
        let agent = AgentSandbox(app: "com.example.c-policy")
        var environment = agent.environment
        environment["KEYBAY_PLUGIN_PATH"] = nil
        let r = try run("/usr/bin/timeout", ["-s", "KILL", "120", program], environment: environment)
        agent.stop()
        #expect(r.status == 0, "\(r.out) \(r.stderr)")
        #expect(r.out.contains("policy_check: ") && r.out.contains(" checks, 0 failures"), "\(r.out)")
    }

    /// The library exports exactly the header's functions, each at the version that added it
    /// (scripts/link/libkeybay.map: KEYBAY_1.0, KEYBAY_1.2), under its soname.
    @Test func theLibraryExportsTheHeadersFunctionsAlone() throws {
        let prefix = try Self.installed.get()
        let library = prefix + "/lib/libkeybay.so.1"
        let symbols = try run("/usr/bin/objdump", ["-T", library], environment: ["PATH": "/usr/bin:/bin"])
        let exported = Set(symbols.out.split(separator: "\n").compactMap { line -> String? in
            let fields = line.split(whereSeparator: \.isWhitespace)
            guard fields.count >= 7, fields[1] == "g", fields[3] != "*UND*" else { return nil }
            return String(fields.last!)
        }).subtracting(["KEYBAY_1.0", "KEYBAY_1.2"])
        let header = try String(contentsOfFile: packageDirectory + "/Sources/CKeybay/include/keybay/keybay.h", encoding: .utf8)
        let declared = Set(header.split(separator: "\n").compactMap { line -> String? in
            guard let open = line.firstIndex(of: "("), line.contains("keybay_") else { return nil }
            let name = line[..<open].split(whereSeparator: { !($0.isLetter || $0.isNumber || $0 == "_") }).last.map(String.init)
            return name?.hasPrefix("keybay_") == true ? name : nil
        })
        #expect(exported == declared, "exported but not declared: \(exported.subtracting(declared).sorted()); declared but not exported: \(declared.subtracting(exported).sorted())")
        // Each function at its version: those the map adds in 1.2 at KEYBAY_1.2, the rest at 1.0.
        let map = try String(contentsOfFile: packageDirectory + "/scripts/link/libkeybay.map", encoding: .utf8)
        let added = Set(map[try #require(map.range(of: "KEYBAY_1.2 {")).upperBound...].split(separator: "\n")
            .map { $0.trimmingCharacters(in: .whitespaces) }.filter { $0.hasPrefix("keybay_") }.map { String($0.dropLast()) })
        #expect(added.count == 12, "\(added)")
        let misplaced = symbols.out.split(separator: "\n").filter { line in
            guard let name = line.split(whereSeparator: \.isWhitespace).last.map(String.init), name.hasPrefix("keybay_") else { return false }
            return !line.contains(added.contains(name) ? "KEYBAY_1.2" : "KEYBAY_1.0")
        }
        #expect(misplaced.isEmpty, "\(misplaced)")
        let dynamic = try run("/usr/bin/readelf", ["-d", library], environment: ["PATH": "/usr/bin:/bin"])
        #expect(dynamic.out.contains("Library soname: [libkeybay.so.1]"), "\(dynamic.out)")
    }

    /// The complete example in docs/c-api.md builds against the installed prefix and works.
    @Test func theGuidesExampleBuildsAndRuns() throws {
        let prefix = try Self.installed.get()
        let guide = try String(contentsOfFile: packageDirectory + "/docs/c-api.md", encoding: .utf8)
        let start = try #require(guide.range(of: "```c\n#include <stdio.h>"))
        let end = try #require(guide.range(of: "```", range: start.upperBound..<guide.endIndex))
        let source = prefix + "/example.c"
        let code = guide.index(start.lowerBound, offsetBy: "```c\n".count)
        try String(guide[code..<end.lowerBound]).write(toFile: source, atomically: true, encoding: .utf8)
        let flags = try run("/usr/bin/pkg-config", ["--cflags", "--libs", "keybay"],
                            environment: ["PATH": "/usr/bin:/bin", "PKG_CONFIG_PATH": prefix + "/lib/pkgconfig"])
        let cc = try run("/usr/bin/cc", ["-std=c11", "-Wall", "-Wextra", "-Werror", source] + flags.out.split(whereSeparator: \.isWhitespace).map(String.init)
                         + ["-o", prefix + "/example"], environment: ["PATH": "/usr/bin:/bin"])
        #expect(cc.status == 0, "\(cc.stderr)")
        let box = Sandbox(app: "com.example.notes")
        var environment = box.environment
        environment["KEYBAY_PLUGIN_PATH"] = nil
        let r = try run(prefix + "/example", [], environment: environment)
        #expect(r.status == 0 && r.out == "s3cr3t\n", "\(r.out) \(r.stderr)")
    }
}
