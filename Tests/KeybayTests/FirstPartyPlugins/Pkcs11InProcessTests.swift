// SPDX-License-Identifier: Apache-2.0
import Foundation
import Glibc
import Testing
@testable import Keybay

/// SoftHSM2 tokens for the tests that load the pkcs11 plugin into this process: SoftHSM reads
/// SOFTHSM2_CONF from the process environment, so one directory serves them all, made once and
/// named before any of them loads the module.
enum InProcessTokens {
    static let made: Result<(box: Sandbox, tokens: SoftHSMTokens), any Error> = Result {
        let box = Sandbox(app: "com.example.pkcs11-tokens")
        let tokens = try SoftHSMTokens(under: box.root)
        try tokens.initToken("kb")
        try tokens.generate(on: "kb", keyType: "rsa:2048", id: "01")
        try tokens.generate(on: "kb", keyType: "EC:prime256v1", id: "02")
        setenv("SOFTHSM2_CONF", tokens.configuration, 1)
        return (box, tokens)
    }

    static func tokens() throws -> SoftHSMTokens { try made.get().tokens }
}

/// The pkcs11 method's stored parameters and HKDF context as docs/pkcs11.md specifies them,
/// checked against an independent implementation (OpenSSL's RSA-OAEP and ECDH, the core's HKDF):
/// parameters built by hand from that document unwrap, on the token, to the M computed outside
/// the plugin. And every byte flip of a store a pkcs11 method protects is a typed failure.
@Suite(.serialized) struct Pkcs11InProcessTests {
    static let rsaURI = [("token", "pkcs11:token=kb;id=%01")]
    static let ecURI = [("token", "pkcs11:token=kb;id=%02")]

    static func plugin() throws -> PluginUnderCheck {
        _ = try InProcessTokens.tokens()
        return try PluginUnderCheck(id: "pkcs11", directory: pluginDirectory)
    }

    static func pin() -> ScriptedInteraction { ScriptedInteraction([SoftHSMTokens.pin]) }

    static func openssl(_ arguments: [String]) throws {
        let r = try run("/usr/bin/openssl", arguments, environment: ["PATH": "/usr/bin:/bin"])
        guard r.status == 0 else { throw SoftHSMTokens.ToolFailed(description: "openssl \(arguments.first ?? "") exited \(r.status): \(r.stderr)") }
    }

    /// The token's public key `id` as DER SubjectPublicKeyInfo, in a file.
    static func publicKey(_ id: String, into directory: String) throws -> String {
        let tokens = try InProcessTokens.tokens()
        let path = directory + "/pub-\(id).der"
        let r = try run("/usr/bin/pkcs11-tool", ["--module", SoftHSMTokens.module, "--token-label", "kb", "--read-object", "--type", "pubkey",
                                                 "--id", id, "-o", path], environment: ["SOFTHSM2_CONF": tokens.configuration, "PATH": "/usr/bin:/bin"])
        guard r.status == 0 else { throw SoftHSMTokens.ToolFailed(description: "pkcs11-tool --read-object exited \(r.status): \(r.stderr)") }
        return path
    }

    /// The fixed part every enrollment on token "kb" (p11-kit's list, key id `id`) starts with.
    static func checkPrefix(_ p: [UInt8], kind: UInt8, id: UInt8) {
        #expect(Array(p[0..<3]) == [1, kind, 0], "format, kind, module path length 0")
        #expect(Array(p[3..<35]) == Array("kb".utf8) + [UInt8](repeating: 0x20, count: 30), "the token label, blank-padded")
        #expect(p[51] == 1 && p[52] == id, "key id length and CKA_ID")
    }

    @Test func rsaParametersAreStandardOAEPOfM() throws {
        let plugin = try Self.plugin()
        let enrolled = try plugin.enroll(options: Self.rsaURI, interaction: Self.pin())
        let p = enrolled.params
        try #require(p.count == 55 + 1 + 256, "55 + L + I + C bytes")
        Self.checkPrefix(p, kind: 1, id: 1)
        #expect(p[53] == 1 || p[53] == 2, "padding place")
        #expect(Array(p[54..<56]) == [0x01, 0x00], "ciphertext length 256")
        #expect(try plugin.unwrap(enrolled, interaction: Self.pin()).equals(enrolled.secret))

        // OpenSSL encrypts our own M with RSA-OAEP (SHA-256, MGF1-SHA-256): the plugin recovers it.
        let dir = try InProcessTokens.made.get().box.root + "/rsa-\(UUID().uuidString)"
        mkdir(dir, 0o700)
        let m = (0..<32).map { UInt8(truncatingIfNeeded: $0 &* 37 &+ 11) }
        writeBytes(dir + "/m", m)
        try Self.openssl(["pkeyutl", "-encrypt", "-pubin", "-keyform", "DER", "-inkey", try Self.publicKey("01", into: dir),
                          "-pkeyopt", "rsa_padding_mode:oaep", "-pkeyopt", "rsa_oaep_md:sha256", "-pkeyopt", "rsa_mgf1_md:sha256",
                          "-in", dir + "/m", "-out", dir + "/c"])
        let ciphertext = try #require(readBytes(dir + "/c"))
        try #require(ciphertext.count == 256)
        let built = Array(p[0..<56]) + ciphertext
        #expect(try plugin.unwrap(enrolled, params: built, interaction: Self.pin()).equals(SecureBytes(copying: m)))
    }

    @Test func ecParametersAndTheHKDFContextAreAsDocumented() throws {
        let plugin = try Self.plugin()
        let enrolled = try plugin.enroll(options: Self.ecURI, interaction: Self.pin())
        let p = enrolled.params
        try #require(p.count == 182 + 1, "182 + L + I bytes")
        Self.checkPrefix(p, kind: 2, id: 2)
        let dir = try InProcessTokens.made.get().box.root + "/ec-\(UUID().uuidString)"
        mkdir(dir, 0o700)
        let tokenPublic = try Self.publicKey("02", into: dir)
        let tokenPoint = Array(try #require(readBytes(tokenPublic)).suffix(65))
        #expect(Array(p[53..<118]) == tokenPoint, "the token key's public point")
        #expect(p[118] == 0x04, "the ephemeral point, uncompressed")
        #expect(try plugin.unwrap(enrolled, interaction: Self.pin()).equals(enrolled.secret))

        // An ephemeral key of OpenSSL's, its ECDH with the token's public key, and the core's HKDF
        // over the documented context: the plugin derives the same M on the token.
        try Self.openssl(["genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out", dir + "/eph.pem"])
        try Self.openssl(["pkey", "-in", dir + "/eph.pem", "-pubout", "-outform", "DER", "-out", dir + "/eph.der"])
        try Self.openssl(["pkeyutl", "-derive", "-inkey", dir + "/eph.pem", "-peerkey", tokenPublic, "-peerform", "DER", "-out", dir + "/shared"])
        let ephemeralPoint = Array(try #require(readBytes(dir + "/eph.der")).suffix(65))
        let shared = try #require(readBytes(dir + "/shared"))
        try #require(shared.count == 32 && ephemeralPoint.first == 0x04)
        let info = Array("keybay-pkcs11 ecdh-p256 v1".utf8) + tokenPoint + ephemeralPoint
        let prk = shared.withUnsafeBytes { HKDF.extract(salt: [], ikm: $0) }
        let m = HKDF.expand(prk: prk, info: info, count: 32)
        let built = Array(p[0..<53]) + tokenPoint + ephemeralPoint
        #expect(try plugin.unwrap(enrolled, params: built, interaction: Self.pin()).equals(m))
    }

    /// TamperTests' byte flips on a store an RSA pkcs11 method protects: each is a typed failure.
    /// Every 8th byte (each open logs in to the token); every byte with KEYBAY_PKCS11_TAMPER_ALL=1.
    @Test func everyByteFlipOfAPkcs11ProtectedStoreIsATypedFailure() async throws {
        let stride = ProcessInfo.processInfo.environment["KEYBAY_PKCS11_TAMPER_ALL"] == "1" ? 1 : 8
        _ = try InProcessTokens.tokens()
        let (box, _) = try await TamperTests.smallStore()
        let s = try await KeybayStore.open(box.configuration(), interaction: Self.pin())
        let method = try await s.auth.add(plugin: "pkcs11", options: Self.rsaURI)
        s.close()
        let original = readBytes(box.storePath)!
        func outcome() async -> KeybayError.Code? {
            await keybayCode {
                let s = try await KeybayStore.open(box.configuration(), method: method.id, createIfAbsent: false, interaction: Self.pin())
                for key in try s.keys() { _ = try s.get(key) }
            }
        }
        #expect(await outcome() == nil)
        await TamperTests.expectEveryFlipFails(original, at: box.storePath, stride: stride, outcome)
        #expect(await outcome() == nil)
    }
}
