// SPDX-License-Identifier: Apache-2.0
import Foundation
import Glibc
import Testing

/// `git-credential-keybay import --remove-source` and `docker-credential-keybay import
/// --remove-source` (installed into a prefix, as CAPITests installs them) with each write,
/// fsync, fdatasync, rename and pread64 they make failing in turn (`strace -e inject`), and
/// SIGKILLed at random moments: nothing ever leaves a source file unless it reads back from the
/// store, the file is always whole (the original, or the original less such credentials), and
/// no temporary file is left beside it (after a kill, once the import has run again).
@Suite(.serialized) struct ImportFaultInjectionTests {
    static let calls = FaultInjectionTests.calls

    struct Source: Sendable {
        let name: String
        let helper: String
        let write: @Sendable (Sandbox) -> String          // makes the source file, returns its path
        let arguments: @Sendable (String) -> [String]
        /// The credentials no longer in the file (each must read back from the store), or nil
        /// when the file is not a whole version of itself.
        let removed: @Sendable (_ original: [UInt8], _ now: [UInt8]) -> [[String: String]]?
        let readBack: @Sendable ([String: String], Sandbox, String) throws -> Bool
    }

    static let git = Source(name: "git import", helper: "git-credential-keybay", write: { box in
        let path = box.root + "/.git-credentials"
        writeBytes(path, Array("https://alice:pw%2F1@example.com\nnot a url\nhttps://bob:pw2@git.example.org:8443\n".utf8))
        chmod(path, 0o640)
        return path
    }, arguments: { path in ["import", "--remove-source", path] }, removed: { original, now in
        let lines = original.split(separator: 0x0a, omittingEmptySubsequences: false).map(Array.init)
        let left = now.split(separator: 0x0a, omittingEmptySubsequences: false).map(Array.init)
        // What is left is the original's lines in order, some taken out (never a torn line).
        var i = 0
        for line in left { while i < lines.count && lines[i] != line { i += 1 }; if i == lines.count { return nil }; i += 1 }
        // The malformed line is never taken out.
        guard left.contains(Array("not a url".utf8)) else { return nil }
        return [("example.com", "alice", "pw/1"), ("git.example.org:8443", "bob", "pw2")]
            .filter { host, user, _ in !left.contains { String(decoding: $0, as: UTF8.self).contains(user + ":") } }
            .map { ["host": $0.0, "username": $0.1, "password": $0.2] }
    }, readBack: { credential, box, prefix in
        let input = "protocol=https\nhost=\(credential["host"]!)\nusername=\(credential["username"]!)\n\n"
        let r = try run(prefix + "/bin/git-credential-keybay", ["get"], environment: helperEnvironment(box), stdin: Array(input.utf8))
        return r.out.contains("password=\(credential["password"]!)\n")
    })

    static let docker = Source(name: "docker import", helper: "docker-credential-keybay", write: { box in
        let path = box.root + "/config.json"
        let auth = Data("alice:s3cret".utf8).base64EncodedString()
        writeBytes(path, Array("{\n\t\"auths\": {\n\t\t\"a.example\": {\n\t\t\t\"auth\": \"\(auth)\"\n\t\t},\n\t\t\"b.example\": {\n\t\t\t\"identitytoken\": \"tok\"\n\t\t}\n\t},\n\t\"psFormat\": \"x\"\n}".utf8))
        return path
    }, arguments: { path in ["import", "--remove-source", path] }, removed: { original, now in
        guard let object = try? JSONSerialization.jsonObject(with: Data(now)) as? [String: Any],
              let auths = object["auths"] as? [String: [String: Any]], object["psFormat"] as? String == "x" else { return nil }
        if now == original { return [] }
        guard object["credsStore"] as? String == "keybay" else { return nil }
        return [("a.example", "alice", "s3cret", "auth"), ("b.example", "<token>", "tok", "identitytoken")]
            .filter { auths[$0.0]?[$0.3] == nil }.map { ["url": $0.0, "username": $0.1, "secret": $0.2] }
    }, readBack: { credential, box, prefix in
        let r = try run(prefix + "/bin/docker-credential-keybay", ["get"], environment: helperEnvironment(box), stdin: Array(credential["url"]!.utf8))
        return r.out.contains("\"Username\":\"\(credential["username"]!)\",\"Secret\":\"\(credential["secret"]!)\"")
    })

    static func helperEnvironment(_ box: Sandbox) -> [String: String] {
        var environment = box.environment
        environment["KEYBAY_PLUGIN_PATH"] = nil // the installed library finds the installed plugins
        return environment
    }

    /// The invariants of one run's leftovers.
    static func check(_ source: Source, _ box: Sandbox, _ path: String, _ original: [UInt8], mode originalMode: mode_t, prefix: String, _ what: String,
                      killed: Bool = false) throws {
        let now = try #require(readBytes(path), "\(what): the source file is gone")
        guard let removed = source.removed(original, now) else {
            Issue.record("\(what): the source file is not whole: \(String(decoding: now, as: UTF8.self))")
            return
        }
        for credential in removed {
            let back = try source.readBack(credential, box, prefix)
            #expect(back, "\(what): \(credential) left the file but does not read back from the store")
        }
        // A kill between the temporary's creation and its rename leaves it; the next import removes it.
        if killed {
            let again = try run(prefix + "/bin/" + source.helper, source.arguments(path), environment: helperEnvironment(box))
            #expect(again.status == 0, "\(what): the import run again: \(again.stderr) \(again.out)")
        }
        let leftovers = (try? FileManager.default.contentsOfDirectory(atPath: box.root))?.filter { $0.contains(".keybay-import-") } ?? []
        #expect(leftovers.isEmpty, "\(what): \(leftovers)")
        #expect(mode(path) & 0o7777 == originalMode & 0o7777, "\(what): mode")
    }

    @Test(arguments: ["git", "docker"]) func everyFailingCallRemovesOnlyWhatReadsBack(_ which: String) throws {
        let source = which == "git" ? Self.git : Self.docker
        let prefix = try CAPITests.installed.get()
        let helper = prefix + "/bin/" + source.helper
        // The calls an undisturbed run makes.
        let probe = Sandbox(app: "com.example.import-faults")
        let probePath = source.write(probe)
        let trace = probe.root + "/trace"
        let clean = try run("/usr/bin/strace", ["-f", "-qq", "-y", "-o", trace, "-e", "trace=" + Self.calls.joined(separator: ","), helper]
                            + source.arguments(probePath), environment: Self.helperEnvironment(probe))
        #expect(clean.status == 0, "undisturbed: \(clean.stderr)")
        let made = FaultInjectionTests.parseTrace(readBytes(trace) ?? [])
        var runs = 0
        for call in Self.calls {
            for (n, targets) in FaultInjectionTests.invocations(made[call, default: []]) where !targets.allSatisfy(FaultInjectionTests.isSharedLibrary) {
                let box = Sandbox(app: "com.example.import-faults")
                let path = source.write(box)
                let original = readBytes(path)!, originalMode = mode(path)
                let r = try run("/usr/bin/strace", ["-f", "-qq", "-o", "/dev/null", "-e", "trace=\(call)", "-e", "inject=\(call):error=EIO:when=\(n)",
                                                    helper] + source.arguments(path), environment: Self.helperEnvironment(box))
                let what = "\(source.name), \(call) #\(n) (\(targets[0])) failing: exit \(r.status), \(r.stderr)"
                #expect(!r.signalled && (r.status == 0 || r.status == 1), "\(what)")
                try Self.check(source, box, path, original, mode: originalMode, prefix: prefix, what)
                runs += 1
            }
        }
        #expect(runs >= 10, "\(source.name): only \(runs) runs")
    }

    @Test(arguments: ["git", "docker"]) func killedAtRandomMomentsRemovesOnlyWhatReadsBack(_ which: String) throws {
        let source = which == "git" ? Self.git : Self.docker
        let prefix = try CAPITests.installed.get()
        let runs = Int(ProcessInfo.processInfo.environment["KEYBAY_CRASH_RUNS"] ?? "") ?? 24
        let app = source.helper == "git-credential-keybay" ? "git-credential" : "docker-credential"
        // A box with the source file and the store made (the store exists first: the kills are
        // the import's; a kill while the library makes a store's root and then its file leaves
        // the root alone, which the core reports as an interrupted initialisation, the core's own
        // harness's to test).
        let prepared = { () throws -> (Sandbox, String) in
            let box = Sandbox(app: "com.example.import-kills")
            let path = source.write(box)
            let made = try run(cliPath, ["--app", app, "init"], environment: box.environment)
            try #require(made.status == 0, "init: \(made.stderr)")
            return (box, path)
        }
        // How long an undisturbed import lasts here (the longest of three): the kills are drawn
        // within it, so they land mid-way however fast or loaded the machine is.
        var lifetime = 1_000.0
        for _ in 0..<3 {
            let (box, path) = try prepared()
            let started = monotonicMicroseconds()
            let pid = spawnChild(prefix + "/bin/" + source.helper, source.arguments(path), environment: Self.helperEnvironment(box), stdinPath: "/dev/null")
            #expect(waitChild(pid).succeeded, "\(source.name): an undisturbed import failed")
            lifetime = max(lifetime, monotonicMicroseconds() - started)
        }
        var killedMidway = 0
        for i in 0..<runs {
            let (box, path) = try prepared()
            let original = readBytes(path)!, originalMode = mode(path)
            let pid = spawnChild(prefix + "/bin/" + source.helper, source.arguments(path), environment: Self.helperEnvironment(box), stdinPath: "/dev/null")
            usleep(useconds_t(Double.random(in: 0..<lifetime)))
            kill(pid, SIGKILL)
            let (succeeded, signalled) = waitChild(pid)
            if signalled { killedMidway += 1 }
            _ = succeeded
            try Self.check(source, box, path, original, mode: originalMode, prefix: prefix, "\(source.name), kill #\(i)", killed: true)
        }
        #expect(killedMidway > 0, "no run was killed before it ended")
    }
}

/// CLOCK_MONOTONIC in microseconds.
private func monotonicMicroseconds() -> Double {
    var t = timespec()
    clock_gettime(CLOCK_MONOTONIC, &t)
    return Double(t.tv_sec) * 1e6 + Double(t.tv_nsec) / 1e3
}
