import Foundation
import Glibc
import Testing
@testable import Keybay

/// Crash safety and interprocess locking with real processes.
@Suite struct ProcessTests {
    /// Runs `keybay-methods set` in child processes and SIGKILLs them at random moments.
    /// After every kill the store must open, hold every acknowledged write with its value, and
    /// hold the killed write either not at all or completely. `KEYBAY_CRASH_RUNS` sets the count.
    @Test func killedWritersNeverTearTheStore() async throws {
        let runs = ProcessInfo.processInfo.environment["KEYBAY_CRASH_RUNS"].flatMap(Int.init) ?? 40
        let box = Sandbox()
        #expect(try box.cli("set", "base", "present").status == 0)
        var acknowledged: [String: [UInt8]] = ["base": Array("present".utf8)]
        var killed = 0, completed = 0
        var rng = SystemRandomNumberGenerator()
        // Kill anywhere from process start to about twice the time an uninterrupted set takes.
        let clock = ContinuousClock()
        writeBytes(box.root + "/value", [UInt8](repeating: 1, count: 200_000))
        let uninterrupted = clock.measure {
            #expect(waitChild(spawnChild(cliPath, ["set", "timing", "--stdin"], environment: box.environment, stdinPath: box.root + "/value")).succeeded)
        }
        var window = UInt32(uninterrupted.components.attoseconds / 1_000_000_000_000 + uninterrupted.components.seconds * 1_000_000) * 2
        acknowledged["timing"] = [UInt8](repeating: 1, count: 200_000)
        for i in 0..<runs {
            let key = "k\(i)"
            let value = [UInt8](repeating: UInt8(truncatingIfNeeded: i), count: Int.random(in: 1...200_000, using: &rng))
            let valuePath = box.root + "/value"
            writeBytes(valuePath, value)
            let pid = spawnChild(cliPath, ["set", key, "--stdin"], environment: box.environment, stdinPath: valuePath)
            usleep(UInt32.random(in: 0...window, using: &rng))
            kill(pid, SIGKILL)
            let outcome = waitChild(pid)
            // The store grows, so a set takes longer as the run goes on: widen the window after a kill.
            if outcome.succeeded {
                acknowledged[key] = value
                completed += 1
                window -= window / 16
            } else {
                window += window / 8
                #expect(outcome.signalled, "set \(key) failed without being killed")
                killed += 1
            }
            // The store opens, every acknowledged write is there, and the killed one is all or nothing.
            let s = try await KeybayStore.open(box.configuration(), createIfAbsent: false)
            for (k, v) in acknowledged { #expect(try s.get(k) == v, "acknowledged \(k) lost after run \(i)") }
            if let got = try s.get(key) { #expect(got == value, "torn value for \(key)") ; acknowledged[key] = got }
            s.close()
            #expect(!exists(box.stagingPath), "open leaves no staging file behind")
        }
        print("crash-kill: window \(window) µs, \(runs) runs, \(killed) killed mid-way, \(completed) completed, 0 lost")
        #expect(killed + completed == runs)
    }

    @Test func concurrentProcessesAllLand() throws {
        let box = Sandbox()
        #expect(try box.cli("init").status == 0)
        let writers = 4, perWriter = 25
        let group = DispatchGroup()
        let failures = Mutex(0)
        for w in 0..<writers {
            group.enter()
            DispatchQueue.global().async {
                defer { group.leave() }
                let script = "for i in $(seq 1 \(perWriter)); do \"$0\" set w\(w)/k$i v$i || exit 1; done"
                if (try? run("/bin/sh", ["-c", script, cliPath], environment: box.environment).status) != 0 {
                    failures.withLock { $0 += 1 }
                }
            }
        }
        group.wait()
        #expect(failures.withLock { $0 } == 0)
        let keys = try box.cli("keys").out.split(separator: "\n")
        #expect(keys.count == writers * perWriter)
        #expect(try box.cli("get", "w3/k12").out == "v12")
    }

    @Test func twoProcessesSettingAtTheSameTimeBothLand() throws {
        let box = Sandbox()
        #expect(try box.cli("init").status == 0)
        for round in 0..<5 {
            let pair = try ["one", "two"].map { key -> Process in
                let p = Process()
                p.executableURL = URL(fileURLWithPath: cliPath)
                p.arguments = ["set", key, "\(round)"]
                p.environment = box.environment
                try p.run()
                return p
            }
            for p in pair { p.waitUntilExit(); #expect(p.terminationStatus == 0) }
            #expect(try box.cli("get", "one").out == "\(round)" && box.cli("get", "two").out == "\(round)")
        }
        #expect(try box.cli("keys").out == "one\ntwo\n")
    }
}

import Synchronization
