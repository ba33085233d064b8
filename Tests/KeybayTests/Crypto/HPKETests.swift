// SPDX-License-Identifier: Apache-2.0
import Testing
@testable import Keybay

/// HPKE base mode, DHKEM(X25519, HKDF-SHA256) / HKDF-SHA256 / ChaCha20-Poly1305.
@Suite struct HPKETests {
    /// RFC 9180 Appendix A.2.1, "Base Setup Information" (mode 0, kem_id 32, kdf_id 1, aead_id 3),
    /// and A.2.1.1 "Encryptions". Hex copied from the RFC text.
    enum A21 {
        static let info = "4f6465206f6e2061204772656369616e2055726e"
        static let ikmE = "909a9b35d3dc4713a5e72a4da274b55d3d3821a37e5d099e74a647db583a904b"
        static let pkEm = "1afa08d3dec047a643885163f1180476fa7ddb54c6a8029ea33f95796bf2ac4a"
        static let skEm = "f4ec9b33b792c372c1d2c2063507b684ef925b8c75a42dbcbf57d63ccd381600"
        static let ikmR = "1ac01f181fdf9f352797655161c58b75c656a6cc2716dcb66372da835542e1df"
        static let pkRm = "4310ee97d88cc1f088a5576c77ab0cf5c3ac797f3d95139c6c84b5429c59662a"
        static let skRm = "8057991eef8f1f1af18f4a9491d16a1ce333f695d4db8e38da75975c4478e0fb"
        static let enc = "1afa08d3dec047a643885163f1180476fa7ddb54c6a8029ea33f95796bf2ac4a"
        static let sharedSecret = "0bbe78490412b4bbea4812666f7916932b828bba79942424abb65244930d69a7"
        static let keyScheduleContext = "00431df6cd95e11ff49d7013563baf7f11588c75a6611ee2a4404a49306ae4cfc5b69c5718a60cc5876c358d3f7fc31ddb598503f67be58ea1e798c0bb19eb9796"
        static let secret = "5b9cd775e64b437a2335cf499361b2e0d5e444d5cb41a8a53336d8fe402282c6"
        static let key = "ad2744de8e17f4ebba575b3f5f5a8fa1f69c2a07f6e7500bc60ca6e3e3ec1c91"
        static let baseNonce = "5c4d98150661b848853b547f"
        static let exporterSecret = "a3b010d4994890e2c6968a36f64470d3c824c8f5029942feb11e7a74b2921922"

        // A.2.1.1, the same plaintext at every sequence number.
        static let pt = "4265617574792069732074727574682c20747275746820626561757479"
        struct Encryption: Sendable { let seq: UInt64, aad: String, nonce: String, ct: String }
        static let encryptions: [Encryption] = [
            Encryption(seq: 0, aad: "436f756e742d30", nonce: "5c4d98150661b848853b547f",
                       ct: "1c5250d8034ec2b784ba2cfd69dbdb8af406cfe3ff938e131f0def8c8b60b4db21993c62ce81883d2dd1b51a28"),
            Encryption(seq: 1, aad: "436f756e742d31", nonce: "5c4d98150661b848853b547e",
                       ct: "6b53c051e4199c518de79594e1c4ab18b96f081549d45ce015be002090bb119e85285337cc95ba5f59992dc98c"),
            Encryption(seq: 255, aad: "436f756e742d323535", nonce: "5c4d98150661b848853b5480",
                       ct: "18ab939d63ddec9f6ac2b60d61d36a7375d2070c9b683861110757062c52b8880a5f6b3936da9cd6c23ef2a95c"),
            Encryption(seq: 256, aad: "436f756e742d323536", nonce: "5c4d98150661b848853b557f",
                       ct: "7a4a13e9ef23978e2c520fd4d2e757514ae160cd0cd05e556ef692370ca53076214c0c40d4c728d6ed9e727a5b"),
        ]
        static var seq0: Encryption { encryptions[0] }
    }

    static func hexOf(_ s: SecureBytes) -> String { s.withUnsafeBytes { hexString($0) } }

    static var recipientKey: SecureBytes { SecureBytes(copying: hex(A21.skRm)) }

    @Test func suiteIdentifiers() {
        #expect(HPKE.kemSuiteID == Array("KEM".utf8) + [0x00, 0x20])
        #expect(HPKE.hpkeSuiteID == Array("HPKE".utf8) + [0x00, 0x20, 0x00, 0x01, 0x00, 0x03])
    }

    @Test func deriveKeyPairA21() {
        let e = hex(A21.ikmE).withUnsafeBytes { HPKE.deriveKeyPair(ikm: $0) }
        #expect(Self.hexOf(e.privateKey) == A21.skEm)
        #expect(hexString(e.publicKey) == A21.pkEm)
        let r = hex(A21.ikmR).withUnsafeBytes { HPKE.deriveKeyPair(ikm: $0) }
        #expect(Self.hexOf(r.privateKey) == A21.skRm)
        #expect(hexString(r.publicKey) == A21.pkRm)
        #expect(hexString(HPKE.publicKey(of: Self.recipientKey)) == A21.pkRm)
    }

    @Test func encapDecapA21() throws {
        let (sharedSecret, enc) = try HPKE.encap(recipientPublicKey: hex(A21.pkRm), ephemeralIKM: hex(A21.ikmE))
        #expect(hexString(enc) == A21.enc)
        #expect(Self.hexOf(sharedSecret) == A21.sharedSecret)
        let decapped = try #require(HPKE.decap(enc: hex(A21.enc), recipientPrivateKey: Self.recipientKey))
        #expect(Self.hexOf(decapped) == A21.sharedSecret)
    }

    @Test func keyScheduleA21() {
        let context = HPKE.keySchedule(sharedSecret: SecureBytes(copying: hex(A21.sharedSecret)), info: hex(A21.info))
        #expect(hexString(context.keyScheduleContext) == A21.keyScheduleContext)
        #expect(Self.hexOf(context.secret) == A21.secret)
        #expect(Self.hexOf(context.key) == A21.key)
        #expect(Self.hexOf(context.baseNonce) == A21.baseNonce)
        // No Export interface, but the exporter secret pins LabeledExpand under the HPKE suite_id.
        let exporter = HPKE.labeledExpand(suiteID: HPKE.hpkeSuiteID, prk: context.secret, label: "exp",
                                          info: context.keyScheduleContext, count: HPKE.nh)
        #expect(Self.hexOf(exporter) == A21.exporterSecret)
        // ComputeNonce (§5.2) and the AEAD, for the sequence numbers of A.2.1.1 we pin.
        for e in A21.encryptions {
            let nonce = context.nonce(sequence: e.seq)
            #expect(hexString(nonce) == e.nonce, "seq \(e.seq)")
            let ct = hex(A21.pt).withUnsafeBytes { HPKE.aeadSeal(key: context.key, nonce: nonce, aad: hex(e.aad), plaintext: $0) }
            #expect(hexString(ct) == e.ct, "seq \(e.seq)")
            let pt = hex(e.ct).withUnsafeBytes { HPKE.aeadOpen(key: context.key, nonce: nonce, aad: hex(e.aad), ciphertext: $0) }
            #expect(pt.map(Self.hexOf) == A21.pt, "seq \(e.seq)")
        }
    }

    @Test func singleShotSealA21() throws {
        let sealed = try hex(A21.pt).withUnsafeBytes {
            try HPKE.seal(recipientPublicKey: hex(A21.pkRm), info: hex(A21.info), aad: hex(A21.seq0.aad),
                          plaintext: $0, ephemeralIKM: hex(A21.ikmE))
        }
        #expect(hexString(sealed.enc) == A21.enc)
        #expect(hexString(sealed.ciphertext) == A21.seq0.ct)
    }

    @Test func singleShotOpenA21() throws {
        let pt = try #require(hex(A21.seq0.ct).withUnsafeBytes {
            HPKE.open(enc: hex(A21.enc), recipientPrivateKey: Self.recipientKey, info: hex(A21.info),
                      aad: hex(A21.seq0.aad), ciphertext: $0)
        })
        #expect(Self.hexOf(pt) == A21.pt)
    }

    @Test func roundTripWithRandomEphemeral() throws {
        let recipient = Sodium.randomBytes(32).withUnsafeBytes { HPKE.deriveKeyPair(ikm: $0) }
        let message = Array("a secret worth keeping".utf8)
        let info = Array("keybay test info".utf8), aad = Array("keybay test aad".utf8)
        let a = try message.withUnsafeBytes { try HPKE.seal(recipientPublicKey: recipient.publicKey, info: info, aad: aad, plaintext: $0) }
        let b = try message.withUnsafeBytes { try HPKE.seal(recipientPublicKey: recipient.publicKey, info: info, aad: aad, plaintext: $0) }
        #expect(a.enc != b.enc)
        #expect(a.ciphertext != b.ciphertext)
        #expect(a.ciphertext.count == message.count + HPKE.nt)
        for s in [a, b] {
            let opened = try #require(s.ciphertext.withUnsafeBytes {
                HPKE.open(enc: s.enc, recipientPrivateKey: recipient.privateKey, info: info, aad: aad, ciphertext: $0)
            })
            #expect(opened.withUnsafeBytes { Array($0) } == message)
        }
        // Empty info and aad are allowed.
        let c = try message.withUnsafeBytes { try HPKE.seal(recipientPublicKey: recipient.publicKey, info: [], aad: [], plaintext: $0) }
        let opened = c.ciphertext.withUnsafeBytes {
            HPKE.open(enc: c.enc, recipientPrivateKey: recipient.privateKey, info: [], aad: [], ciphertext: $0)
        }
        #expect(opened?.withUnsafeBytes { Array($0) } == message)
    }

    /// Opens the A.2.1 sequence-0 message with one input changed.
    static func openA21(enc: [UInt8] = hex(A21.enc), key: SecureBytes = HPKETests.recipientKey, info: [UInt8] = hex(A21.info),
                        aad: [UInt8] = hex(A21.seq0.aad), ciphertext: [UInt8] = hex(A21.seq0.ct)) -> SecureBytes? {
        ciphertext.withUnsafeBytes { HPKE.open(enc: enc, recipientPrivateKey: key, info: info, aad: aad, ciphertext: $0) }
    }

    static func flipped(_ bytes: [UInt8], at index: Int, mask: UInt8 = 0x01) -> [UInt8] {
        var b = bytes
        b[index] ^= mask
        return b
    }

    @Test func openFailsOnAnyChange() {
        #expect(Self.openA21() != nil) // the unmodified baseline opens
        let enc = hex(A21.enc), ct = hex(A21.seq0.ct), info = hex(A21.info), aad = hex(A21.seq0.aad)
        for i in [0, 15, 31] { #expect(Self.openA21(enc: Self.flipped(enc, at: i)) == nil, "enc byte \(i)") }
        // X25519 ignores bit 255 of a public key, so only the KEM context (which binds enc) catches this.
        #expect(Self.openA21(enc: Self.flipped(enc, at: 31, mask: 0x80)) == nil, "enc top bit")
        for i in [0, ct.count - HPKE.nt - 1, ct.count - HPKE.nt, ct.count - 1] {
            #expect(Self.openA21(ciphertext: Self.flipped(ct, at: i)) == nil, "ciphertext byte \(i)")
        }
        #expect(Self.openA21(ciphertext: Array(ct.dropLast())) == nil, "truncated ciphertext")
        #expect(Self.openA21(ciphertext: Array(ct.prefix(HPKE.nt))) == nil, "tag-only ciphertext")
        for i in [0, info.count - 1] { #expect(Self.openA21(info: Self.flipped(info, at: i)) == nil, "info byte \(i)") }
        #expect(Self.openA21(info: []) == nil, "empty info")
        for i in [0, aad.count - 1] { #expect(Self.openA21(aad: Self.flipped(aad, at: i)) == nil, "aad byte \(i)") }
        #expect(Self.openA21(aad: []) == nil, "empty aad")
        // The wrong private key: A.2.1's ephemeral key, and a flipped recipient key.
        #expect(Self.openA21(key: SecureBytes(copying: hex(A21.skEm))) == nil, "ephemeral key")
        #expect(Self.openA21(key: SecureBytes(copying: Self.flipped(hex(A21.skRm), at: 10))) == nil, "flipped key")
        // Malformed or low-order enc.
        #expect(Self.openA21(enc: Array(enc.dropLast())) == nil, "short enc")
        #expect(Self.openA21(enc: [UInt8](repeating: 0, count: 32)) == nil, "all-zero enc")
        #expect(Self.openA21(enc: [1] + [UInt8](repeating: 0, count: 31)) == nil, "low-order enc (u = 1)")
    }

    @Test func sealRejectsBadInputs() {
        let pt: [UInt8] = [1, 2, 3]
        func seal(_ pk: [UInt8], _ plaintext: [UInt8] = pt, ikm: [UInt8]? = nil) throws {
            _ = try plaintext.withUnsafeBytes { try HPKE.seal(recipientPublicKey: pk, info: [], aad: [], plaintext: $0, ephemeralIKM: ikm) }
        }
        let pkR = hex(A21.pkRm)
        #expect(keybayCode { try seal(Array(pkR.dropLast())) } == .invalidArgument)
        #expect(keybayCode { try seal(pkR + [0]) } == .invalidArgument)
        // Low-order points give an all-zero X25519 result, which must be rejected (RFC 9180 §7.1.4).
        #expect(keybayCode { try seal([UInt8](repeating: 0, count: 32)) } == .invalidArgument)
        #expect(keybayCode { try seal([1] + [UInt8](repeating: 0, count: 31)) } == .invalidArgument)
        #expect(keybayCode { try seal(pkR, []) } == .invalidArgument)
        #expect(keybayCode { try seal(pkR, ikm: [UInt8](repeating: 7, count: 31)) } == .invalidArgument)
    }
}
