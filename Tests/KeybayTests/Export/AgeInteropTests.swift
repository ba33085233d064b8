// SPDX-License-Identifier: Apache-2.0
import Foundation
import Testing
@testable import Keybay

/// Keybay's age against Debian's `age` and `age-keygen` (real processes), both ways, at the
/// sizes where STREAM chunking changes: empty, one byte, one chunk exactly, one chunk and a byte.
@Suite struct AgeInteropTests {
    static let sizes = [0, 1, 65536, 65537, 200_000]

    struct Keygen {
        let identityPath: String
        let recipient: String
    }

    func keygen(_ box: Sandbox) throws -> Keygen {
        let path = box.root + "/key.txt"
        let made = try run("/usr/bin/age-keygen", ["-o", path], environment: box.environment)
        try #require(made.status == 0, "age-keygen: \(made.stderr)")
        let shown = try run("/usr/bin/age-keygen", ["-y", path], environment: box.environment)
        try #require(shown.status == 0)
        return Keygen(identityPath: path, recipient: shown.out.trimmingCharacters(in: .whitespacesAndNewlines))
    }

    func plaintext(_ size: Int) -> [UInt8] { (0..<size).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 7) } }

    @Test(arguments: sizes) func ageDecryptsWhatWeEncrypt(size: Int) throws {
        let box = Sandbox()
        let key = try keygen(box)
        let recipient = try AgeX25519.parseRecipient(key.recipient)
        // A second recipient, so age has to find its stanza among others.
        let other = KeybayAge.generateIdentity()
        let file = try plaintext(size).withUnsafeBytes { try AgeFile.encrypt($0, to: [try AgeX25519.parseRecipient(other.recipient), recipient]) }
        writeBytes(box.root + "/file.age", file)
        let r = try run("/usr/bin/age", ["-d", "-i", key.identityPath, box.root + "/file.age"], environment: box.environment)
        #expect(r.status == 0, "\(r.stderr)")
        #expect(r.stdout == plaintext(size))
    }

    @Test(arguments: sizes) func weDecryptWhatAgeEncrypts(size: Int) throws {
        let box = Sandbox()
        let ours = KeybayAge.generateIdentity()
        writeBytes(box.root + "/plain", plaintext(size))
        let r = try run("/usr/bin/age", ["-r", ours.recipient, "-o", box.root + "/file.age", box.root + "/plain"], environment: box.environment)
        try #require(r.status == 0, "\(r.stderr)")
        let identityFile = ours.identity.withUnsafeBytes { Array($0) } + [0x0a]
        let identities = try KeybayAge.identities(fromFile: identityFile)
        let opened = try AgeFile.decrypt(try #require(readBytes(box.root + "/file.age")), identities: identities)
        #expect(opened.withUnsafeBytes { Array($0) } == plaintext(size))
    }

    @Test func keysAreReadAsAgeKeygenWritesThem() throws {
        let box = Sandbox()
        let key = try keygen(box)
        let identities = try KeybayAge.identities(fromFile: try #require(readBytes(key.identityPath)))
        #expect(identities.count == 1)
        #expect(AgeX25519.encodeRecipient(AgeX25519.publicKey(of: identities[0])) == key.recipient)
        // And the other way: age-keygen -y computes the recipient of an identity we generated.
        let ours = KeybayAge.generateIdentity()
        writeBytes(box.root + "/ours.txt", ours.identity.withUnsafeBytes { Array($0) } + [0x0a])
        let shown = try run("/usr/bin/age-keygen", ["-y", box.root + "/ours.txt"], environment: box.environment)
        #expect(shown.out == ours.recipient + "\n")
    }

    @Test func aTamperedFileIsRefused() throws {
        let ours = KeybayAge.generateIdentity()
        let identities = try KeybayAge.identities(fromFile: ours.identity.withUnsafeBytes { Array($0) })
        let file = try plaintext(100).withUnsafeBytes { try AgeFile.encrypt($0, to: [try AgeX25519.parseRecipient(ours.recipient)]) }
        // Any single flipped bit, in the header or the payload, fails the file.
        for i in stride(from: 0, to: file.count, by: 7) {
            var damaged = file
            damaged[i] ^= 0x01
            #expect(throws: AgeFailure.self) { _ = try AgeFile.decrypt(damaged, identities: identities) }
        }
    }
}
