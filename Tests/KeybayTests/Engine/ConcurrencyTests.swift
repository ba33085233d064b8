// SPDX-License-Identifier: Apache-2.0
import Foundation
import Glibc
import Synchronization
import Testing
@testable import Keybay

/// Writers in several processes, readers alongside, an enrollment racing with writes.
@Suite struct ConcurrencyTests {
    /// Runs `script` under /bin/sh with the CLI as $0, a PIN file as $1 (for descriptor 3) and
    /// `arguments` after them. `timeout` is a hang guard for scripts that wait on each other
    /// (a FIFO whose other side failed), not a speed limit.
    static func shell(_ box: Sandbox, _ script: String, _ arguments: [String] = []) throws -> RunResult {
        let pin = box.root + "/pin"
        if !exists(pin) { try "1\n".write(toFile: pin, atomically: true, encoding: .utf8) }
        return try run("/usr/bin/timeout", ["300", "/bin/sh", "-c", script, cliPath, pin] + arguments, environment: box.environment)
    }

    @Test func fourProcessesTimesAHundredSetsAllLand() throws {
        let box = Sandbox()
        #expect(try box.cli("init").status == 0)
        let failures = Mutex(0)
        DispatchQueue.concurrentPerform(iterations: 4) { w in
            let script = "i=1; while [ $i -le 100 ]; do \"$0\" set w\(w)/k$i v$i || exit 1; i=$((i+1)); done"
            if (try? Self.shell(box, script).status) != 0 { failures.withLock { $0 += 1 } }
        }
        #expect(failures.withLock { $0 } == 0)
        let keys = try box.cli("keys").out.split(separator: "\n")
        #expect(keys.count == 400)
        for w in 0..<4 { #expect(try box.cli("get", "w\(w)/k100").out == "v100") }
    }

    /// Keys g0…g3; a writer process sets g(n mod 4) = n for n = 4…83, one `set` each, so every
    /// generation has one exact shape: with N the largest value, gj holds N - ((N - j) mod 4). A
    /// reader in this process and one in another (keybay-test-writer read-generations) read all
    /// four at once, over and over, while it writes: every read is one whole generation, never
    /// older than the one before, never an integrity failure. Both read before the first write
    /// and after the last, so each sees at least two generations.
    @Test func readersNeverSeeAMixedGeneration() async throws {
        let box = Sandbox()
        let count = 4, last = 83
        for j in 0..<count { #expect(try box.cli("set", "g\(j)", "\(j)").status == 0) }
        let keys = (0..<count).map { "g\($0)" }
        let stop = box.root + "/stop"
        let reader = Process()
        reader.executableURL = URL(fileURLWithPath: buildDirectory + "/keybay-test-writer")
        reader.arguments = [box.app, "read-generations", "\(count)", stop]
        reader.environment = box.environment
        let readerOutput = Pipe()
        reader.standardOutput = readerOutput
        try reader.run()
        // The other reader has read once and says so before anything is written.
        var said = ""
        while !said.contains("\n") {
            let chunk = readerOutput.fileHandleForReading.availableData
            if chunk.isEmpty { break }
            said += String(decoding: chunk, as: UTF8.self)
        }
        #expect(said == "ready\n")

        let session = try await KeybayStore.open(box.configuration(), createIfAbsent: false)
        var violations = 0, reads = 0, newest = -1, seen: Set<Int> = []
        func read() throws {
            reads += 1
            let records = try session.getMany(keys)
            let values = keys.map { records[$0].flatMap { Int(String(decoding: $0, as: UTF8.self)) } ?? -1 }
            let n = values.max() ?? -1
            if values.enumerated().contains(where: { j, v in v != n - ((n - j) % count) }) || n < newest { violations += 1 }
            newest = max(newest, n)
            seen.insert(n)
        }
        try read()
        let writer = Process()
        writer.executableURL = URL(fileURLWithPath: "/bin/sh")
        writer.arguments = ["-c", "i=\(count); while [ $i -le \(last) ]; do \"$0\" set g$((i % \(count))) $i || exit 1; i=$((i+1)); done", cliPath]
        writer.environment = box.environment
        try writer.run()
        while writer.isRunning { try read() }
        writer.waitUntilExit()
        try read()
        writeBytes(stop, [])
        let report = String(decoding: readerOutput.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        reader.waitUntilExit()
        #expect(writer.terminationStatus == 0)
        // Three generations at least: the first, one read while the writer was at work, the last.
        #expect(violations == 0 && newest == last && seen.count >= 3, "this process: \(reads) reads, \(violations) mixed or older, newest \(newest), \(seen.count) generations seen")
        #expect(reader.terminationStatus == 0 && report.contains("newest \(last), violations 0, failures 0"), "the other process: \(report)")
        let generations = report.split(separator: " ").drop { $0 != "seen" }.dropFirst().first.flatMap { Int($0.trimmingCharacters(in: .punctuationCharacters)) } ?? 0
        #expect(generations >= 3, "the other process read during the writes too: \(report)")
    }

    /// An enrollment (a rotation: new key, every record re-encrypted) racing with writes from
    /// other processes: every write and the method all land. The enrollment starts once the first
    /// writer's fifth record is in, and each writer goes on writing after the enrollment has
    /// finished, so there are writes on both sides of it. The processes wait on each other
    /// through FIFOs (events, not polling against the clock).
    @Test func anEnrollmentRacingWithWritesLosesNeither() throws {
        let box = Sandbox()
        #expect(try box.cli("init").status == 0)
        let fifos = ["fifth-record", "enrolled-1", "enrolled-2"].map { box.root + "/" + $0 }
        for f in fifos { #expect(mkfifo(f, 0o600) == 0) }
        let pin = box.root + "/pin"
        try "1\n".write(toFile: pin, atomically: true, encoding: .utf8)
        // All three run at once (as processes, not on a thread pool that may run fewer).
        let jobs = try (0..<3).map { job -> Process in
            // $2: the first writer's fifth record is in; $3, $4: the enrollment is over (for
            // writer 1 and 2). A job that fails still signals, so no other one waits for ever.
            let script = job == 0
                ? "read go < \"$2\"; \"$0\" enroll test-counting --pin-fd 3 3<\"$1\"; rc=$?; echo > \"$3\"; echo > \"$4\"; exit $rc"
                : "i=1; while [ $i -le 30 ]; do \"$0\" set j\(job)/k$i v$i --pin-fd 3 3<\"$1\" || break; "
                  + (job == 1 ? "[ $i -ne 5 ] || echo > \"$2\"; " : "") + "i=$((i+1)); done; "
                  + (job == 1 ? "[ $i -gt 5 ] || echo > \"$2\"; " : "")
                  + "read done < \"$\(job + 2)\"; [ $i -gt 30 ] || exit 1; "
                  + "i=1; while [ $i -le 5 ]; do \"$0\" set j\(job)/after$i v$i --pin-fd 3 3<\"$1\" || exit 1; i=$((i+1)); done"
            let p = Process()
            // timeout: a hang guard should a job die without signalling, not a speed limit.
            p.executableURL = URL(fileURLWithPath: "/usr/bin/timeout")
            p.arguments = ["300", "/bin/sh", "-c", script, cliPath, pin] + fifos
            p.environment = box.environment
            try p.run()
            return p
        }
        let results = jobs.map { $0.waitUntilExit(); return $0.terminationStatus }
        #expect(results == [0, 0, 0])
        let status = try KeybayStore.status(box.configuration())
        #expect(status.state == .protected && status.methods.count == 1)
        let keys = try Self.shell(box, "exec \"$0\" keys --pin-fd 3 3<\"$1\"").out.split(separator: "\n")
        #expect(keys.count == 70)
    }
}
