// SPDX-License-Identifier: Apache-2.0
import Foundation
import Testing
@testable import Keybay

/// The C2SP age test kit (Tests/Fixtures/age-testkit): every X25519, header, MAC, stanza and
/// STREAM vector decrypts, or fails in exactly the class the vector expects; every header that
/// parses is re-encoded byte for byte.
@Suite struct AgeVectorTests {
    struct Vector {
        let name: String
        var expect = ""
        var payloadDigest = ""
        var identities: [SecureBytes] = []
        var compressed = false
        var file: [UInt8] = []
    }

    static let directory = packageDirectory + "/Tests/Fixtures/age-testkit"

    static func load(_ name: String) throws -> Vector {
        let bytes = try #require(readBytes(directory + "/" + name))
        let blank = try #require(bytes.indices.first { i in i > 0 && bytes[i] == 0x0a && bytes[i - 1] == 0x0a })
        var v = Vector(name: name)
        for line in bytes[..<(blank - 1)].split(separator: 0x0a) {
            let text = String(decoding: line, as: UTF8.self)
            guard let colon = text.range(of: ": ") else { continue }
            let value = String(text[colon.upperBound...])
            switch text[..<colon.lowerBound] {
            case "expect": v.expect = value
            case "payload": v.payloadDigest = value
            case "identity": v.identities.append(try #require(AgeX25519.parseIdentity(Array(value.utf8)[...])))
            case "compressed": v.compressed = value == "zlib"
            default: break
            }
        }
        v.file = Array(bytes[(blank + 1)...])
        if v.compressed { v.file = try inflate(v.file) }
        return v
    }

    /// zlib through Python's zlib module, a real process (Foundation on Linux has no zlib API).
    static func inflate(_ bytes: [UInt8]) throws -> [UInt8] {
        let r = try run("/usr/bin/python3", ["-c", "import sys, zlib; sys.stdout.buffer.write(zlib.decompress(sys.stdin.buffer.read()))"],
                        environment: ["PATH": "/usr/bin:/bin"], stdin: bytes)
        guard r.status == 0 else { throw KeybayTestFailure("python3 zlib failed: \(r.stderr)") }
        return r.stdout
    }

    static let names: [String] = ((try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []).filter { $0 != "README.md" }.sorted()

    @Test func theKitIsThere() {
        #expect(Self.names.count == 67)
    }

    @Test(arguments: names) func vector(_ name: String) throws {
        let v = try Self.load(name)
        let outcome: Result<AgePlaintext, AgeFailure> = Result { () throws(AgeFailure) in try AgeFile.decrypt(v.file, identities: v.identities) }
        switch v.expect {
        case "success":
            let plaintext = try outcome.get()
            #expect(plaintext.withUnsafeBytes { hexString(SHA256.hash($0)) } == v.payloadDigest, "\(name)")
        case "no match": #expect(failureKind(outcome) == .noMatch, "\(name)")
        case "HMAC failure": #expect(failureKind(outcome) == .mac, "\(name)")
        case "header failure": #expect(failureKind(outcome) == .header, "\(name)")
        case "payload failure": #expect(failureKind(outcome) == .payload, "\(name)")
        default: Issue.record("\(name): unknown expectation '\(v.expect)'")
        }
        // Every header that parses encodes back to the same bytes.
        if let header = try? AgeHeader.parse(v.file) {
            #expect(String(decoding: AgeHeader.encode(header.stanzas) + AgeHeader.macLine(header.mac), as: UTF8.self)
                    == String(decoding: v.file[..<header.payloadStart], as: UTF8.self), "\(name)")
        }
    }

    private func failureKind(_ outcome: Result<AgePlaintext, AgeFailure>) -> AgeFailure.Kind? {
        if case .failure(let f) = outcome { return f.kind }
        return nil
    }
}
