import Foundation
import Glibc
import Synchronization
import Testing
@testable import Keybay

/// Writers in several processes, readers alongside, an enrollment racing with writes.
@Suite struct ConcurrencyTests {
    /// Runs `script` under /bin/sh with the CLI as $0 and a PIN file on descriptor 3.
    static func shell(_ box: Sandbox, _ script: String) throws -> RunResult {
        let pin = box.root + "/pin"
        if !exists(pin) { try "1\n".write(toFile: pin, atomically: true, encoding: .utf8) }
        return try run("/bin/sh", ["-c", script, cliPath, pin], environment: box.environment)
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

    /// A writer sets a=i then b=i; a reader in another process (and one in this process) must
    /// always see b ≤ a ≤ b + 1 and never an integrity failure: every read is one whole generation.
    @Test func readersNeverSeeAMixedGeneration() async throws {
        let box = Sandbox()
        #expect(try box.cli("set", "a", "0").status == 0 && box.cli("set", "b", "0").status == 0)
        let writer = Process()
        writer.executableURL = URL(fileURLWithPath: "/bin/sh")
        // The writer starts once the reader's session is open (the file `go` appears), so the
        // reads overlap the writes however the test run is scheduled.
        let go = box.root + "/go"
        writer.arguments = ["-c", "n=0; until [ -e \"$1\" ]; do n=$((n+1)); [ $n -lt 3000 ] || exit 1; sleep 0.01; done; "
                            + "i=1; while [ $i -le 60 ]; do \"$0\" set a $i && \"$0\" set b $i || exit 1; i=$((i+1)); done", cliPath, go]
        writer.environment = box.environment
        try writer.run()
        let session = try await KeybayStore.open(box.configuration(), createIfAbsent: false)
        writeBytes(go, [])
        var seen: Set<Int> = [], violations = 0, backwards = 0
        while writer.isRunning {
            let both = try session.getMany(["a", "b"])
            let a = Int(String(decoding: both["a"] ?? [], as: UTF8.self)) ?? -1
            let b = Int(String(decoding: both["b"] ?? [], as: UTF8.self)) ?? -1
            if !(b <= a && a <= b + 1) { violations += 1 }
            seen.insert(a)
            // And a reader in its own process, later: it never sees an older generation.
            let other = try box.cli("get", "b")
            #expect(other.status == 0)
            if (Int(other.out) ?? -1) < b { backwards += 1 }
        }
        writer.waitUntilExit()
        #expect(writer.terminationStatus == 0)
        #expect(violations == 0 && backwards == 0)
        #expect(seen.count >= 2, "the reads never saw the writer make progress: \(seen)")
        #expect(try session.getString("a") == "60" && session.getString("b") == "60")
    }

    /// An enrollment (a rotation: new key, every record re-encrypted) racing with writes from
    /// other processes: every write and the method all land. The enrollment starts once a
    /// writer's fifth record is in, and each writer goes on writing after it has seen the store
    /// protected, so there are writes on both sides of it (the waits have hang guards).
    @Test func anEnrollmentRacingWithWritesLosesNeither() throws {
        let box = Sandbox()
        #expect(try box.cli("init").status == 0)
        let results = Mutex<[Int32]>([])
        DispatchQueue.concurrentPerform(iterations: 3) { job in
            let script = job == 0
                ? "n=0; until \"$0\" get j1/k5 >/dev/null 2>&1; do n=$((n+1)); [ $n -lt 3000 ] || exit 1; sleep 0.01; done; "
                  + "exec \"$0\" enroll test-counting --pin-fd 3 3<\"$1\""
                : "i=1; while [ $i -le 30 ]; do \"$0\" set j\(job)/k$i v$i --pin-fd 3 3<\"$1\" || exit 1; i=$((i+1)); done; "
                  + "n=0; until \"$0\" status | grep -q 'state: *protected'; do n=$((n+1)); [ $n -lt 3000 ] || exit 1; sleep 0.01; done; "
                  + "i=1; while [ $i -le 5 ]; do \"$0\" set j\(job)/after$i v$i --pin-fd 3 3<\"$1\" || exit 1; i=$((i+1)); done"
            let status = (try? Self.shell(box, script).status) ?? -1
            results.withLock { $0.append(status) }
        }
        #expect(results.withLock { $0 } == [0, 0, 0])
        let status = try KeybayStore.status(box.configuration())
        #expect(status.state == .protected && status.methods.count == 1)
        let keys = try Self.shell(box, "exec \"$0\" keys --pin-fd 3 3<\"$1\"").out.split(separator: "\n")
        #expect(keys.count == 70)
    }
}
