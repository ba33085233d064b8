// SPDX-License-Identifier: Apache-2.0
import Testing
@testable import Keybay

/// Worked example of the suite-2 (methods) package, pinned byte for byte; docs/format.md §10
/// lists the same values. HPKE itself is pinned by RFC 9180 A.2 in HPKETests.
@Suite struct MethodsSuiteVectorTests {
    enum V {
        static let storeId = hex("101112131415161718191a1b1c1d1e1f")
        static let storeKey = hex("202122232425262728292a2b2c2d2e2f303132333435363738393a3b3c3d3e3f")
        static let epoch: UInt64 = 8
        static let methodId = hex("404142434445464748494a4b4c4d4e4f")
        static let salt = hex("505152535455565758595a5b5c5d5e5f")
        static let secret = hex("606162636465666768696a6b6c6d6e6f707172737475767778797a7b7c7d7e7f")
        static let pluginId = "passphrase"
        static let label = "main"
        static let params = hex("0100000013000100000000000300000004") + hex("a0a1a2a3a4a5a6a7a8a9aaabacadaeaf")
        static let ephemeralIKM = hex("c0c1c2c3c4c5c6c7c8c9cacbcccdcecfd0d1d2d3d4d5d6d7d8d9dadbdcdddedf")

        static let publicKey = "4c42916b2a866f7d719490078b495c6fa22d267b29ed6288a28232bfd3d26453"
        static let enc = "0a4244187e020c1b51d51502593322001217c1db3bc91bf837491c9b71807605"
        static let sealedKey = "e7652ee4029f2972103df040337696109f8e1f478a4ffb0a4553140a25c9064ee2192fc513f0bf5ce71c15ee0133fc7d"
        static let packagePlaintext = "101112131415161718191a1b1c1d1e1f00000000000000080101404142434445464748494a4b4c4d4e4f0000000a70617373706872617365000000046d61696e000000210100000013000100000000000300000004a0a1a2a3a4a5a6a7a8a9aaabacadaeaf505152535455565758595a5b5c5d5e5f4c42916b2a866f7d719490078b495c6fa22d267b29ed6288a28232bfd3d264530a4244187e020c1b51d51502593322001217c1db3bc91bf837491c9b71807605e7652ee4029f2972103df040337696109f8e1f478a4ffb0a4553140a25c9064ee2192fc513f0bf5ce71c15ee0133fc7d"
    }

    static func method() -> MethodEnvelope.Public {
        let pk = MethodEnvelope.keyPair(secret: SecureBytes(copying: V.secret), storeId: V.storeId, methodId: V.methodId,
                                        pluginId: V.pluginId, salt: V.salt).publicKey
        return .init(methodId: V.methodId, pluginId: V.pluginId, label: V.label, params: V.params, salt: V.salt, publicKey: pk)
    }

    @Test func envelopeAndPackage() throws {
        let m = Self.method()
        let envelope = try MethodEnvelope.seal(storeKey: SecureBytes(copying: V.storeKey), to: m, storeId: V.storeId, epoch: V.epoch, ephemeralIKM: V.ephemeralIKM)
        let package = MethodsPackage(storeId: V.storeId, epoch: V.epoch, envelopes: [envelope]).encode()
        #expect(hexString(m.publicKey) == V.publicKey)
        #expect(hexString(envelope.enc) == V.enc)
        #expect(hexString(envelope.sealedKey) == V.sealedKey)
        #expect(package.withUnsafeBytes { hexString($0) } == V.packagePlaintext)

        // Round trip: decode, open with the secret; a wrong secret or another epoch fails.
        let decoded = try MethodsPackage.decode(package, context: "vector")
        #expect(decoded.envelopes == [envelope])
        let opened = try decoded.envelopes[0].open(secret: SecureBytes(copying: V.secret), storeId: V.storeId, epoch: V.epoch)
        #expect(opened.withUnsafeBytes { Array($0) } == V.storeKey)
        let wrong = keybayError { _ = try decoded.envelopes[0].open(secret: SecureBytes(copying: V.storeKey), storeId: V.storeId, epoch: V.epoch) }
        #expect(wrong?.code == .wrongSecret && wrong?.methodID == "404142434445464748494a4b4c4d4e4f" && wrong?.pluginID == "passphrase",
                "\(String(describing: wrong))")
        #expect(performing: { _ = try decoded.envelopes[0].open(secret: SecureBytes(copying: V.secret), storeId: V.storeId, epoch: V.epoch + 1) },
                throws: { ($0 as? KeybayError)?.code == .integrity })
    }

    @Test func strictPackageDecoding() throws {
        let envelope = try MethodEnvelope.seal(storeKey: SecureBytes(copying: V.storeKey), to: Self.method(), storeId: V.storeId, epoch: V.epoch)
        let good = MethodsPackage(storeId: V.storeId, epoch: V.epoch, envelopes: [envelope]).encode().withUnsafeBytes { Array($0) }
        func code(_ bytes: [UInt8]) -> KeybayError.Code? {
            keybayCode { _ = try MethodsPackage.decode(SecureBytes(copying: bytes), context: "t") }
        }
        #expect(code(good) == nil)
        #expect(code(good + [0]) == .malformed)
        #expect(code(Array(good.dropLast())) == .malformed)
        var policy = good; policy[24] = 2
        #expect(code(policy) == .unsupported)
        var zero = good; zero[25] = 0
        #expect(code(zero) == .malformed)
        var many = good; many[25] = 33
        #expect(code(many) == .malformed)
        // Two envelopes with the same id, two passphrases.
        let twice = MethodsPackage(storeId: V.storeId, epoch: V.epoch, envelopes: [envelope, envelope]).encode().withUnsafeBytes { Array($0) }
        #expect(code(twice) == .malformed)
    }
}
