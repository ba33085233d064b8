// SPDX-License-Identifier: Apache-2.0
import Foundation
import Glibc

/// Tests/pinentry/scripted_pinentry.py for one test, run through a symbolic link in a directory of
/// the sandbox's own that holds its mode, the answers it gives (in hex) and the log of what it
/// was sent. A link, not a wrapper script written here: a file this process just wrote may still
/// be open for writing in a child another test is starting, and exec of it fails (ETXTBSY).
/// `environment` names the link in KEYBAY_PINENTRY.
struct ScriptedPinentry {
    let directory: String
    let program: String

    init(_ box: Sandbox, mode: String = "answer", answers: [String] = [], name: String = "scripted") throws {
        directory = box.root + "/pinentry-" + name
        program = directory + "/pinentry"
        guard mkdir(directory, 0o700) == 0 else { throw KeybayTestFailure("cannot make \(directory)") }
        try (answers.map { hexString(Array($0.utf8)) }.joined(separator: "\n") + "\n").write(toFile: directory + "/answers", atomically: true, encoding: .utf8)
        try mode.write(toFile: directory + "/mode", atomically: true, encoding: .utf8)
        guard symlink(packageDirectory + "/Tests/pinentry/scripted_pinentry.py", program) == 0 else {
            throw KeybayTestFailure("cannot link \(program)")
        }
    }

    /// The sandbox's environment with this pinentry named.
    func environment(_ box: Sandbox) -> [String: String] {
        var environment = box.environment
        environment["KEYBAY_PINENTRY"] = program
        return environment
    }

    /// What each run of the pinentry was sent, run by run (its pid first).
    var runs: [(pid: pid_t, lines: [String])] {
        let log = (try? String(contentsOfFile: directory + "/log", encoding: .utf8)) ?? ""
        var runs: [(pid: pid_t, lines: [String])] = []
        for line in log.split(separator: "\n").map(String.init) {
            if line.hasPrefix("RUN "), let pid = pid_t(line.dropFirst(4)) { runs.append((pid, [])) } else if !runs.isEmpty { runs[runs.count - 1].lines.append(line) }
        }
        return runs
    }

    /// The argument of `command` in `lines`, %-decoded (as pinentry decodes it).
    static func argument(_ command: String, in lines: [String]) -> String? {
        guard let line = lines.first(where: { $0.hasPrefix(command + " ") }) else { return nil }
        return String(line.dropFirst(command.count + 1)).removingPercentEncoding
    }

    /// What each descriptor of a run pointed at when it started (its /proc/self/fd links).
    func descriptors(_ pid: pid_t) -> [Int32: String] {
        let text = (try? String(contentsOfFile: directory + "/run-\(pid).fds", encoding: .utf8)) ?? ""
        return Dictionary(text.split(separator: "\n").compactMap { line in
            let parts = line.split(separator: " ", maxSplits: 1)
            return parts.count == 2 ? Int32(parts[0]).map { ($0, String(parts[1])) } : nil
        }, uniquingKeysWith: { a, _ in a })
    }

    /// A run's /proc/self/cmdline and environ, as it copied them when it was asked.
    func process(_ pid: pid_t) -> (cmdline: [UInt8], environ: [UInt8])? {
        guard let cmdline = readBytes(directory + "/run-\(pid).cmdline"), let environ = readBytes(directory + "/run-\(pid).environ") else { return nil }
        return (cmdline, environ)
    }
}

/// Runs the CLI with no controlling terminal (`setsid`), given `secret` and a newline on
/// descriptor 3 when there is one, killed after 60 s (status 137) so that a hang fails the test.
func withoutTerminal(_ arguments: [String], environment: [String: String], secret: String? = nil, box: Sandbox) throws -> RunResult {
    var script = "exec \"$0\" \"$@\""
    if let secret {
        let file = box.root + "/secret-\(UUID().uuidString)"
        try (secret + "\n").write(toFile: file, atomically: true, encoding: .utf8)
        script += " 3<\"\(file)\""
    }
    return try run("/usr/bin/timeout", ["-s", "KILL", "60", "/usr/bin/setsid", "-w", "/bin/sh", "-c", script, cliPath] + arguments, environment: environment)
}
