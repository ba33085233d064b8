// SPDX-License-Identifier: Apache-2.0
import Foundation
import Glibc
import Synchronization
import Testing

/// The salted policy session the tpm2-pin method runs itself (on tss2's SAPI, its HMACs, salt
/// and decryption computed by the plugin: keybay_tpm2_session.h): what it leaves in the TPM, and
/// a response altered between the TPM and the plugin.
@Suite struct Tpm2PinSessionTests {
    /// A right PIN and a wrong one leave no session and no transient object loaded: the TPM ends
    /// the session of an unseal that succeeds, the plugin flushes the one of an unseal that fails.
    @Test func unlocksLeaveNoSessionLoaded() throws {
        let tpm = try SoftwareTPM(), box = Sandbox()
        _ = try Tpm2PinTests.pinStore(box, tpm)
        let got = try Tpm2PinTests.get(box, tpm, pin: Tpm2PinTests.pin)
        #expect(got.status == 0 && got.out == "v", "\(got.stderr)")
        #expect(try tpm.handles("handles-loaded-session").isEmpty, "the session ended with the unseal")
        #expect(try tpm.handles("handles-transient").isEmpty)
        let wrong = try Tpm2PinTests.get(box, tpm, pin: Tpm2PinTests.otherPin, json: true)
        #expect(wrong.status == 1 && wrong.error?.code == "wrong-secret" && wrong.error?.reason == "wrong-pin", "\(wrong.out)")
        #expect(try tpm.handles("handles-loaded-session").isEmpty, "the refused unseal's session was flushed")
        #expect(try tpm.handles("handles-transient").isEmpty)
    }

    /// What crosses to the TPM, read on the way: TPM2_StartAuthSession salts a policy session with
    /// a transient key (the primary), unbound, with an encrypted salt, AES-128-CFB and SHA-256;
    /// TPM2_Unseal is authorized by that session with an HMAC and asks for its response
    /// encrypted (TPMA_SESSION_ENCRYPT); the PIN itself crosses in neither.
    @Test func theSessionIsSaltedAndTheSecretComesBackEncrypted() throws {
        let tpm = try SoftwareTPM(), box = Sandbox()
        _ = try Tpm2PinTests.pinStore(box, tpm)
        let relay = try TPMRelay(to: tpm, alteringUnseal: false)
        let got = try Tpm2PinTests.get(box, tpm, pin: Tpm2PinTests.pin, ["KEYBAY_TPM2_TCTI": relay.tcti])
        #expect(got.status == 0 && got.out == "v", "\(got.stderr)")
        // StartAuthSession: header | tpmKey | bind | nonceCaller | encryptedSalt | sessionType | symmetric | authHash.
        let start = try #require(relay.lastCommand(0x176))
        let half = { (at: Int) in Int(start[at]) << 8 | Int(start[at + 1]) }
        let nonce = half(18), salt = half(20 + nonce), after = 22 + nonce + salt
        #expect(TPMRelay.word(start, 10) >> 24 == 0x80, "salted with a transient key (the primary)")
        #expect(TPMRelay.word(start, 14) == 0x4000_0007, "unbound (TPM_RH_NULL)")
        #expect(salt == 68, "an encrypted salt: the ephemeral P-256 point")
        #expect(start.count == after + 9 && start[after] == 0x01, "a policy session")
        #expect(Array(start[(after + 1)...]) == [0x00, 0x06, 0x00, 0x80, 0x00, 0x43, 0x00, 0x0B], "AES-128-CFB, SHA-256")
        // Unseal: header | itemHandle | authorizationSize | sessionHandle | nonce | attributes | hmac.
        let unseal = try #require(relay.lastCommand(0x15E))
        let callerNonce = Int(unseal[22]) << 8 | Int(unseal[23]), attributes = unseal[24 + callerNonce]
        #expect(TPMRelay.word(unseal, 18) >> 24 == 0x03, "authorized by the policy session")
        #expect(attributes & 0x40 != 0 && attributes & 0x20 == 0, "the response encrypted (and no command parameter to decrypt)")
        #expect(Int(unseal[25 + callerNonce]) << 8 | Int(unseal[26 + callerNonce]) == 32, "an HMAC, not a password")
        #expect(!unseal.containsSequence(Array(Tpm2PinTests.pin.utf8)) && !start.containsSequence(Array(Tpm2PinTests.pin.utf8)))
    }

    /// Through a relay that flips one bit of the encrypted secret in TPM2_Unseal's response, the
    /// response's HMAC does not verify: the unlock fails as the plugin's (`plugin-failed`), not as
    /// a wrong PIN, the TPM counts nothing and nothing stays loaded. Through the same relay
    /// passing everything unchanged, the store opens.
    @Test func anAlteredUnsealResponseIsRefused() throws {
        let tpm = try SoftwareTPM(), box = Sandbox()
        _ = try Tpm2PinTests.pinStore(box, tpm)
        let faithful = try TPMRelay(to: tpm, alteringUnseal: false)
        let through = try Tpm2PinTests.get(box, tpm, pin: Tpm2PinTests.pin, ["KEYBAY_TPM2_TCTI": faithful.tcti])
        #expect(through.status == 0 && through.out == "v", "the relay itself changes nothing: \(through.stderr)")
        #expect(faithful.unsealsRelayed() == 1)

        let altering = try TPMRelay(to: tpm, alteringUnseal: true)
        let altered = try Tpm2PinTests.get(box, tpm, pin: Tpm2PinTests.pin, json: true, ["KEYBAY_TPM2_TCTI": altering.tcti])
        #expect(altering.unsealsRelayed() == 1, "the unseal went through the relay and was altered")
        #expect(altered.status == 1 && altered.error?.code == "plugin-failed", "\(altered.status) \(altered.out)")
        #expect(try Tpm2PinTests.lockoutCounter(tpm) == 0, "the TPM accepted the PIN; nothing was counted")
        #expect(try tpm.handles("handles-loaded-session").isEmpty && tpm.handles("handles-transient").isEmpty)
        #expect(try Tpm2PinTests.get(box, tpm, pin: Tpm2PinTests.pin).out == "v", "directly, the store still opens")
    }
}

extension Array where Element == UInt8 {
    /// Whether `needle` occurs in these bytes.
    func containsSequence(_ needle: [UInt8]) -> Bool {
        guard !needle.isEmpty, needle.count <= count else { return needle.isEmpty }
        return (0...(count - needle.count)).contains { Array(self[$0..<($0 + needle.count)]) == needle }
    }
}

/// Between tss2's swtpm TCTI and a swtpm, on a loopback port pair of its own: on P it passes each
/// TPM command to the swtpm and the response back, flipping the lowest bit of the first byte of
/// the first response parameter of every TPM2_Unseal that succeeded when `alteringUnseal` (the
/// encrypted data, after parameterSize and the TPM2B's size); on P+1 it relays the control channel.
final class TPMRelay: @unchecked Sendable {
    let port: UInt16
    var tcti: String { "swtpm:host=127.0.0.1,port=\(port)" }
    private let command: Int32, control: Int32
    private final class Tally: Sendable {
        let count = Mutex(0)
        let commands = Mutex<[UInt32: [UInt8]]>([:]) // the last command relayed, by command code
    }
    private let unseals = Tally()

    init(to tpm: SoftwareTPM, alteringUnseal: Bool) throws {
        var last = ""
        for _ in 0..<50 {
            guard let command = try? SilentTPM.listen(0) else { continue }
            guard command.port < 65535, let control = try? SilentTPM.listen(command.port + 1) else {
                Glibc.close(command.fd)
                last = "port \(command.port + 1) taken"
                continue
            }
            port = command.port
            self.command = command.fd
            self.control = control.fd
            Self.serve(command.fd) { [unseals] client in
                Self.relayCommands(client, to: tpm.port) { command, response in
                    let code = Self.word(command, 6)
                    unseals.commands.withLock { $0[code] = command }
                    guard code == 0x15E, response.count > 16, Self.word(response, 6) == 0 else { return }
                    unseals.count.withLock { $0 += 1 }
                    if alteringUnseal { response[16] ^= 0x01 }
                }
            }
            Self.serve(control.fd) { client in Self.relayBytes(client, to: tpm.port + 1) }
            return
        }
        throw KeybayTestFailure("no free loopback port pair for the relay: \(last)")
    }

    deinit {
        for fd in [command, control] { shutdown(fd, Int32(SHUT_RDWR)); Glibc.close(fd) }
    }

    /// The successful TPM2_Unseal responses relayed so far.
    func unsealsRelayed() -> Int { unseals.count.withLock { $0 } }

    /// The last command relayed with this command code, as sent.
    func lastCommand(_ code: UInt32) -> [UInt8]? { unseals.commands.withLock { $0[code] } }

    /// Each accepted connection on a thread of its own, until the listener is shut down.
    private static func serve(_ listener: Int32, _ handle: @escaping @Sendable (Int32) -> Void) {
        Thread {
            while true {
                let c = accept(listener, nil, nil)
                if c < 0 { if errno == EINTR { continue }; return }
                Thread { handle(c); Glibc.close(c) }.start()
            }
        }.start()
    }

    static func word(_ bytes: [UInt8], _ at: Int) -> UInt32 { bytes[at..<at + 4].reduce(0) { $0 << 8 | UInt32($1) } }

    private static func readExactly(_ fd: Int32, _ count: Int) -> [UInt8]? {
        var bytes = [UInt8](repeating: 0, count: count), done = 0
        while done < count {
            let n = bytes.withUnsafeMutableBytes { read(fd, $0.baseAddress! + done, count - done) }
            if n < 0 && errno == EINTR { continue }
            if n <= 0 { return nil }
            done += n
        }
        return bytes
    }

    private static func writeAll(_ fd: Int32, _ bytes: [UInt8]) -> Bool {
        var done = 0
        while done < bytes.count {
            let n = bytes.withUnsafeBytes { write(fd, $0.baseAddress! + done, bytes.count - done) }
            if n < 0 && errno == EINTR { continue }
            if n <= 0 { return false }
            done += n
        }
        return true
    }

    /// One TPM message: the 10-byte header (tag, size, command or response code), then the rest.
    private static func readMessage(_ fd: Int32) -> [UInt8]? {
        guard let header = readExactly(fd, 10) else { return nil }
        let size = Int(word(header, 2))
        guard size >= 10, size <= 65536 else { return nil }
        guard let rest = size > 10 ? readExactly(fd, size - 10) : [] else { return nil }
        return header + rest
    }

    private static func relayCommands(_ client: Int32, to port: UInt16, _ look: ([UInt8], inout [UInt8]) -> Void) {
        guard let upstream = SoftwareTPM.connectLoopback(port) else { return }
        defer { Glibc.close(upstream) }
        while let command = readMessage(client), writeAll(upstream, command), var response = readMessage(upstream) {
            look(command, &response)
            guard writeAll(client, response) else { return }
        }
    }

    private static func relayBytes(_ client: Int32, to port: UInt16) {
        guard let upstream = SoftwareTPM.connectLoopback(port) else { return }
        defer { Glibc.close(upstream) }
        var fds = [pollfd(fd: client, events: Int16(POLLIN), revents: 0), pollfd(fd: upstream, events: Int16(POLLIN), revents: 0)]
        var buffer = [UInt8](repeating: 0, count: 4096)
        while poll(&fds, 2, 10_000) > 0 {
            for (from, to) in [(0, 1), (1, 0)] where fds[from].revents != 0 {
                let n = read(fds[from].fd, &buffer, buffer.count)
                guard n > 0, writeAll(fds[to].fd, Array(buffer[0..<n])) else { return }
            }
        }
    }
}
