// SPDX-License-Identifier: Apache-2.0
import Foundation
import Glibc
import Testing

/// A throwaway TPM 2.0: `swtpm` in socket mode on a free loopback port pair (commands on P,
/// control on P+1), or on the pair it is given, its state in a temporary directory, already
/// started up (`startup-clear`). A fresh state directory is another machine's TPM. Killed when
/// released. A TPM that does not start throws: the tests that need one fail loudly, never skip.
final class SoftwareTPM: @unchecked Sendable {
    let stateDirectory: String
    let port: UInt16
    private let process: Process

    /// The TCTI configuration for tpm2-tss (`KEYBAY_TPM2_TCTI`, `TPM2TOOLS_TCTI`).
    var tcti: String { "swtpm:host=127.0.0.1,port=\(port)" }

    /// `port`: P for commands and P+1 for control, which must be free (no listener) within 20 s;
    /// nil, a pair the kernel picks.
    init(port fixed: UInt16? = nil) throws {
        var template = Array("/tmp/keybay-swtpm-XXXXXX".utf8CString)
        guard let made = template.withUnsafeMutableBufferPointer({ mkdtemp($0.baseAddress!) }) else {
            throw KeybayTestFailure("mkdtemp failed for the swtpm state")
        }
        stateDirectory = String(cString: made)
        let swtpm = "/usr/bin/swtpm"
        guard FileManager.default.isExecutableFile(atPath: swtpm) else {
            throw KeybayTestFailure("\(swtpm) is missing: scripts/setup.sh installs swtpm (Debian: swtpm, swtpm-tools)")
        }
        var lastError = ""
        for _ in 0..<(fixed == nil ? 8 : 3) {
            let port = try fixed.map { try Self.waitUntilFree($0) } ?? Self.freePortPair()
            let p = Process()
            p.executableURL = URL(fileURLWithPath: swtpm)
            p.arguments = ["socket", "--tpmstate", "dir=\(stateDirectory)", "--tpm2",
                           "--server", "type=tcp,port=\(port),bindaddr=127.0.0.1",
                           "--ctrl", "type=tcp,port=\(port + 1),bindaddr=127.0.0.1",
                           "--flags", "not-need-init,startup-clear"]
            let err = Pipe()
            p.standardOutput = FileHandle.nullDevice
            p.standardError = err
            try p.run()
            if Self.waitUntilListening(port: port, process: p) && Self.stillRunning(p) {
                self.port = port
                process = p
                return
            }
            kill(p.processIdentifier, SIGKILL)
            p.waitUntilExit()
            lastError = String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        }
        throw KeybayTestFailure("swtpm did not start on a loopback port: \(lastError)")
    }

    deinit {
        // SIGKILL: swtpm keeps the signal mask it inherits, and a test runner's threads block
        // SIGTERM. Its state is thrown away anyway.
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
        try? FileManager.default.removeItem(atPath: stateDirectory)
    }

    /// SIGSTOP: its sockets still accept connections (the kernel completes them), nothing answers.
    func stop() { kill(process.processIdentifier, SIGSTOP) }
    /// SIGCONT: it answers again, what it was sent meanwhile first.
    func resume() { kill(process.processIdentifier, SIGCONT) }

    /// Runs a tpm2-tools command against this TPM.
    func tools(_ tool: String, _ arguments: String...) throws -> RunResult {
        try run("/usr/bin/" + tool, arguments, environment: ["PATH": "/usr/bin:/bin", "TPM2TOOLS_TCTI": tcti, "TSS2_LOG": "all+none"])
    }

    /// The handles of `kind` (`handles-transient`, `handles-nv-index`) the TPM lists; a failed
    /// `tpm2_getcap` throws (its empty output would read as "none").
    func handles(_ kind: String) throws -> [String] {
        let r = try tools("tpm2_getcap", kind)
        guard r.status == 0 else { throw KeybayTestFailure("tpm2_getcap \(kind): \(r.stderr)") }
        return r.out.split(separator: "\n").map(String.init)
    }

    /// The 8-byte value of NV counter `index`.
    func counter(_ index: UInt32) throws -> UInt64 {
        let handle = "0x" + String(index, radix: 16)
        let r = try tools("tpm2_nvread", handle, "-C", handle, "-s", "8")
        guard r.status == 0, r.stdout.count == 8 else { throw KeybayTestFailure("tpm2_nvread \(handle): \(r.stderr)") }
        return r.stdout.reduce(0) { $0 << 8 | UInt64($1) }
    }

    /// A port P such that P and P+1 are free on 127.0.0.1 now (the kernel picks P).
    private static func freePortPair() throws -> UInt16 {
        for _ in 0..<50 {
            let first = try bindLoopback(0)
            defer { close(first.fd) }
            guard first.port < 65535, let second = try? bindLoopback(first.port + 1) else { continue }
            close(second.fd)
            return first.port
        }
        throw KeybayTestFailure("no free loopback port pair for swtpm")
    }

    /// `port` once it and port + 1 can be bound (with SO_REUSEADDR: a listener blocks that, a
    /// closed connection's TIME_WAIT does not); throws after 20 s.
    private static func waitUntilFree(_ port: UInt16) throws -> UInt16 {
        var last = ""
        for _ in 0..<200 {
            do {
                let first = try bindLoopback(port, reuse: true)
                defer { close(first.fd) }
                close(try bindLoopback(port + 1, reuse: true).fd)
                return port
            } catch {
                last = "\(error)"
                usleep(100_000)
            }
        }
        throw KeybayTestFailure("127.0.0.1:\(port) and \(port + 1) were not free within 20 s (another listener): \(last)")
    }

    private static func bindLoopback(_ port: UInt16, reuse: Bool = false) throws -> (fd: Int32, port: UInt16) {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw KeybayTestFailure("socket: \(errno)") }
        var on: Int32 = 1
        if reuse { setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, socklen_t(MemoryLayout<Int32>.size)) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0 }
        }
        guard bound else { close(fd); throw KeybayTestFailure("bind 127.0.0.1:\(port): \(errno)") }
        return (fd, UInt16(bigEndian: address.sin_port))
    }

    /// Still running a moment after it listens: what answered was this swtpm, not another
    /// listener that took the port meanwhile (this one then exits, failing to bind).
    private static func stillRunning(_ p: Process) -> Bool {
        usleep(50_000)
        return p.isRunning
    }

    /// Polls until swtpm accepts connections on `port` (up to 10 s) or exits.
    private static func waitUntilListening(port: UInt16, process: Process) -> Bool {
        for _ in 0..<1000 {
            guard process.isRunning else { return false }
            if let fd = connectLoopback(port) { close(fd); return true }
            usleep(10_000)
        }
        return false
    }

    /// A connection to 127.0.0.1:`port`, or nil when nothing accepts it.
    static func connectLoopback(_ port: UInt16) -> Int32? {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { return nil }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0 }
        }
        if connected { return fd }
        close(fd)
        return nil
    }
}

/// A test's own setup failed (a component did not start): the test fails with this message.
struct KeybayTestFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
