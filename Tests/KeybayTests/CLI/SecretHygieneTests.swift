// SPDX-License-Identifier: Apache-2.0
import Foundation
import Glibc
import Testing
@testable import Keybay

/// No secret in any output: every CLI command runs with known secret values, and stdout,
/// stderr and every error are scanned for them. Only `get` may print a value, and only to stdout.
@Suite struct SecretHygieneTests {
    static let passphrase = "PASSPHRASE-0c5e1f"
    static let value = "VALUE-77a9d2"
    static let wrong = "WRONGPASS-3b8e40"
    static let changed = "CHANGEDPASS-5a17e2"

    @Test func noCommandPrintsASecret() throws {
        let box = Sandbox()
        let fast = PassphraseTests.fast
        var outputs: [(String, RunResult)] = []
        /// Runs one command and checks its exit status (docs/cli.md's, for each command).
        func cli(_ args: [String], passphrase: String? = nil, newPassphrase: String? = nil, stdin: [UInt8]? = nil, exits expected: Int32,
                 sourceLocation: SourceLocation = #_sourceLocation) throws {
            let r = stdin != nil ? try run(cliPath, args, environment: box.environment, stdin: stdin)
                : try newPassphrase.map { try MethodLifecycleTests.cli(box, args, secrets: ["--passphrase-fd": passphrase ?? "", "--new-passphrase-fd": $0]) }
                    ?? PassphraseTests.cli(box, args, passphrase: passphrase)
            #expect(r.status == expected && !r.signalled, "\(args.joined(separator: " ")) exited \(r.status): \(r.stderr)", sourceLocation: sourceLocation)
            outputs.append((args.joined(separator: " "), r))
        }
        try cli(["init"], exits: 0)
        try cli(["set", "from-arg", Self.value], exits: 0)
        try cli(["set", "from-stdin", "--stdin"], stdin: Array(Self.value.utf8), exits: 0)
        try cli(["enroll", "passphrase", "--label", "hygiene"] + fast, passphrase: Self.passphrase, exits: 0)
        try cli(["enroll", "passphrase"] + fast, passphrase: Self.passphrase, exits: 2) // refused: a second passphrase
        for json in [[], ["--json"]] {
            try cli(["status"] + json, exits: 0)
            try cli(["list"] + json, exits: 0)
            try cli(["plugins"] + json, exits: 0)
            try cli(["keys"] + json, passphrase: Self.passphrase, exits: 0)
            try cli(["get", "from-arg"] + json, passphrase: Self.wrong, exits: 1)
            try cli(["get", "from-arg", "--no-input"] + json, exits: 4)
            try cli(["get", "missing"] + json, passphrase: Self.passphrase, exits: 3)
            try cli(["verify"] + json, passphrase: Self.passphrase, exits: 0)
            try cli(["verify"] + json, passphrase: Self.wrong, exits: 1)
        }
        try cli(["set", "bad key", Self.value], exits: 2)
        let first = try #require(try methodIDs(box).first, "list shows no method")
        for json in [[], ["--json"]] {
            try cli(["change", try #require(try methodIDs(box).first)] + json, passphrase: Self.wrong, newPassphrase: Self.changed, exits: 1)
        }
        try cli(["change", first] + fast, passphrase: Self.passphrase, newPassphrase: Self.changed, exits: 0)
        try cli(["verify"], passphrase: Self.changed, exits: 0)
        try cli(["get", "from-arg"], passphrase: Self.changed, exits: 0)
        let id = try #require(try methodIDs(box).first, "list shows no method")
        try cli(["remove", id], passphrase: Self.changed, exits: 0)
        try cli(["rm", "from-arg"], exits: 0)
        try cli(["reset", "--yes"], exits: 0)

        for (command, r) in outputs {
            let out = String(decoding: r.stdout, as: UTF8.self)
            #expect(!r.stderr.contains(Self.passphrase) && !out.contains(Self.passphrase), "\(command) printed the passphrase")
            #expect(!r.stderr.contains(Self.wrong) && !out.contains(Self.wrong), "\(command) printed a wrong passphrase")
            #expect(!r.stderr.contains(Self.changed) && !out.contains(Self.changed), "\(command) printed the new passphrase")
            #expect(!r.stderr.contains(Self.value), "\(command) printed a value on stderr")
            if !command.hasPrefix("get from-arg") || r.status != 0 {
                #expect(!out.contains(Self.value), "\(command) printed a value")
            }
        }
        // The one place a value may appear: `get` with the right passphrase, on stdout.
        #expect(outputs.contains { $0.0 == "get from-arg" && $0.1.status == 0 && $0.1.out == Self.value })
    }

    /// The hard core-size limit of this test process (inherited by the CLIs it starts).
    static let hardCoreLimit: Substring? = coreLimit((try? String(contentsOfFile: "/proc/self/limits", encoding: .utf8)) ?? "").last

    /// Starts the CLI waiting for a value on standard input (left open) and returns once it
    /// blocks reading it (read(2) on fd 0: its start-up is over). The cap is a hang guard.
    static func waitingCLI(_ box: Sandbox, script: String) throws -> Process {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/bin/sh")
        p.arguments = ["-c", script, cliPath]
        p.environment = box.environment
        let input = Pipe()
        p.standardInput = input // left open: the CLI blocks reading it
        try p.run()
        var blocked = false
        for _ in 0..<6000 where p.isRunning && !blocked {
            usleep(10_000)
            let syscall = (try? String(contentsOfFile: "/proc/\(p.processIdentifier)/syscall", encoding: .utf8)) ?? ""
            blocked = syscall.hasPrefix("0 0x0 ")
        }
        #expect(blocked, "the CLI never blocked reading standard input")
        return p
    }

    /// The CLI turns core dumps off for itself before reading any secret. It is started with its
    /// soft limit raised to the hard one, so that 0/0 is the CLI's doing; where the hard limit
    /// is already 0 that shows nothing, and the test is recorded as skipped.
    @Test(.enabled(if: SecretHygieneTests.hardCoreLimit != "0", "this runner's hard core limit is 0: 0/0 would not be the CLI's doing"))
    func theCLIDisablesCoreDumps() throws {
        let box = Sandbox()
        let p = try Self.waitingCLI(box, script: "ulimit -S -c \"$(ulimit -H -c)\" && exec \"$0\" set k --stdin")
        let limits = (try? String(contentsOfFile: "/proc/\(p.processIdentifier)/limits", encoding: .utf8)) ?? ""
        #expect(Self.coreLimit(limits) == ["0", "0"], "\(limits)")
        kill(p.processIdentifier, SIGKILL)
        p.waitUntilExit()
    }

    /// A SIGTERM ends a CLI waiting for input, even though this runner's thread blocks signals,
    /// which children inherit.
    @Test func aSIGTERMEndsACLIWaitingForInput() throws {
        let box = Sandbox()
        let p = try Self.waitingCLI(box, script: "exec \"$0\" set k --stdin")
        p.terminate()
        for _ in 0..<6000 where p.isRunning { usleep(10_000) } // hang guard
        #expect(!p.isRunning, "SIGTERM did not end the CLI")
        if p.isRunning { kill(p.processIdentifier, SIGKILL) }
        p.waitUntilExit()
        #expect(p.terminationReason == .uncaughtSignal && p.terminationStatus == SIGTERM)
    }

    /// The soft and hard core-size limits from a /proc/PID/limits text.
    static func coreLimit(_ limits: String) -> [Substring] {
        let line = limits.split(separator: "\n").first { $0.hasPrefix("Max core file size") } ?? ""
        return Array(line.split(separator: " ", omittingEmptySubsequences: true).dropFirst(4).prefix(2))
    }
}
