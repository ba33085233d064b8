// SPDX-License-Identifier: Apache-2.0
// keybay-test-writer: one write through the library API, for the crash-kill harness (which
// SIGKILLs it at random moments). Exit 0 means the write was acknowledged (it returned). It
// writes "w" to standard output once the store is open, just before the write.
//   keybay-test-writer APP set KEY < value | rm KEY | clear | enroll | remove METHOD-ID
//                      | move-root ROOT | dump | prepare-recovery
// And a reader for ConcurrencyTests, which checks whole generations:
//   keybay-test-writer APP read-generations K STOP-FILE
// Protected stores are unlocked with their first method and the test PIN "1" (test-counting),
// or KEYBAY_TEST_WRITER_PIN's (a pkcs11 token's, whose PIN the token fixes).
// `dump` opens an existing store and prints "methods N", then "KEY HEXVALUE" per record.
// `prepare-recovery` prepares a recovery key and commits it, then prints "committed ID KEY",
// "unconfirmed ID KEY" (it took effect but was not confirmed durable) or "failed CODE". The
// root is KEYBAY_ROOT's (default file-root), so the harness also runs on roots that need their
// own environment (tpm2's KEYBAY_TPM2_TCTI).
import Glibc
import Keybay

struct TestPIN: KeybayInteraction {
    let pin = Array((getenv("KEYBAY_TEST_WRITER_PIN").map { String(cString: $0) } ?? "1").utf8)
    func askSecret(_ request: KeybaySecretRequest, into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
        buffer.copyBytes(from: pin)
        return pin.count
    }
}

func readStdin() -> [UInt8] {
    var bytes: [UInt8] = []
    var chunk = [UInt8](repeating: 0, count: 65536)
    while true {
        let n = read(0, &chunk, chunk.count)
        if n <= 0 { break }
        bytes += chunk[0..<n]
    }
    return bytes
}

func say(_ line: String) {
    let text = Array((line + "\n").utf8)
    _ = text.withUnsafeBytes { write(1, $0.baseAddress, $0.count) }
}

/// The store holds keys g0…g(K-1); write n (n ≥ K) sets g(n mod K) to n. So in any one
/// generation, with N the largest value, key gj holds N - ((N - j) mod K): a read that mixed
/// records of two generations breaks that. (ConcurrencyTests checks its own reads the same way.)
func readGenerations(_ session: KeybaySession, count: Int, stopFile: String) -> Int32 {
    let keys = (0..<count).map { "g\($0)" }
    var reads = 0, violations = 0, failures = 0, newest = -1, seen = Set<Int>()
    func readOnce() {
        reads += 1
        guard let records = try? session.getMany(keys) else { failures += 1; return }
        let values = keys.map { records[$0].flatMap { Int(String(decoding: $0, as: UTF8.self)) } ?? -1 }
        let n = values.max() ?? -1
        if values.enumerated().contains(where: { j, v in v != n - ((n - j) % count) }) { violations += 1 }
        if n < newest { violations += 1 }
        newest = max(newest, n)
        seen.insert(n)
    }
    // One read before "ready" and one after the stop file appears: the reads span the writes.
    readOnce()
    say("ready")
    while access(stopFile, F_OK) != 0 { readOnce() }
    readOnce()
    say("reads \(reads), generations seen \(seen.count), newest \(newest), violations \(violations), failures \(failures)")
    return violations == 0 && failures == 0 ? 0 : 1
}

/// The two phases of an enrollment through the library, and what came of the commit.
func prepareRecovery(_ session: KeybaySession) -> String {
    let prepared: PreparedEnrollment
    do { prepared = try session.auth.prepare(plugin: "recovery") } catch let e as KeybayError { return "failed \(e.code.rawValue)" } catch { return "failed \(error)" }
    let key = prepared.shownSecret.map { $0.text.withUnsafeBytes { String(decoding: $0, as: UTF8.self) } } ?? ""
    do {
        try prepared.commit()
        return "committed \(prepared.method.id) \(key)"
    } catch let e as KeybayError {
        return e.tookEffect ? "unconfirmed \(prepared.method.id) \(key)" : "failed \(e.code.rawValue)"
    } catch {
        return "failed \(error)"
    }
}

let args = Array(CommandLine.arguments.dropFirst())
do {
    var config = try KeybayConfiguration(applicationID: args[0])
    if let root = getenv("KEYBAY_ROOT").map({ String(cString: $0) }), !root.isEmpty { config.rootPlugin = root }
    let status = try KeybayStore.status(config)
    let session = try KeybayStore.open(config, method: status.methods.first?.id, createIfAbsent: args[1] != "dump", interaction: TestPIN())
    if args[1] == "read-generations" { exit(readGenerations(session, count: Int(args[2])!, stopFile: args[3])) }
    // Tells the harness the write begins now (a kill before this is one during start-up).
    if args[1] != "dump" { _ = write(1, "w", 1) }
    switch args[1] {
    case "set": try session.set(args[2], bytes: readStdin())
    case "rm": try session.delete(args[2])
    case "clear": try session.clearAll()
    case "enroll": try session.auth.add(plugin: "test-counting")
    case "remove": try session.auth.remove(args[2])
    case "move-root": try session.moveRoot(to: args[2])
    case "prepare-recovery": say(prepareRecovery(session))
    case "dump":
        var lines = "methods \(status.methods.count)\n"
        for key in try session.keys() {
            let value: [UInt8] = try session.get(key) ?? []
            let digits: [String] = value.map { byte in (byte < 16 ? "0" : "") + String(byte, radix: 16) }
            lines += key + " " + digits.joined() + "\n"
        }
        _ = Array(lines.utf8).withUnsafeBytes { write(1, $0.baseAddress, $0.count) }
    default: exit(2)
    }
    exit(0)
} catch {
    let text = Array("keybay-test-writer: \(error)\n".utf8)
    _ = text.withUnsafeBytes { write(2, $0.baseAddress, $0.count) }
    exit(1)
}
