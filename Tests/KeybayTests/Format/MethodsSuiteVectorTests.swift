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
        /// The same envelope with one file grant (option `path`, `/home/user/keys/a.key`): policy 2.
        static let grants = [FileGrant(option: "path", path: "/home/user/keys/a.key")]
        static let grantsField = "0000000470617468000000152f686f6d652f757365722f6b6579732f612e6b6579"
        static let packageWithGrantsPlaintext = "101112131415161718191a1b1c1d1e1f00000000000000080201404142434445464748494a4b4c4d4e4f0000000a70617373706872617365000000046d61696e000000210100000013000100000000000300000004a0a1a2a3a4a5a6a7a8a9aaabacadaeaf000000210000000470617468000000152f686f6d652f757365722f6b6579732f612e6b6579505152535455565758595a5b5c5d5e5f4c42916b2a866f7d719490078b495c6fa22d267b29ed6288a28232bfd3d264530a4244187e020c1b51d51502593322001217c1db3bc91bf837491c9b71807605e7652ee4029f2972103df040337696109f8e1f478a4ffb0a4553140a25c9064ee2192fc513f0bf5ce71c15ee0133fc7d"
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
        var policy = good; policy[24] = 3
        #expect(code(policy) == .unsupported)
        // Policy 2 reads one more field per envelope (the grants): these bytes do not decode as it.
        policy[24] = 2
        #expect(code(policy) == .malformed)
        var zero = good; zero[25] = 0
        #expect(code(zero) == .malformed)
        var many = good; many[25] = 33
        #expect(code(many) == .malformed)
        // Two envelopes with the same id, two passphrases.
        let twice = MethodsPackage(storeId: V.storeId, epoch: V.epoch, envelopes: [envelope, envelope]).encode().withUnsafeBytes { Array($0) }
        #expect(code(twice) == .malformed)
    }

    /// Policy 2: an envelope with a file grant carries `LP(grants)` after its parameters; the
    /// seal is the same (grants enter no derivation: the root's seal of the package protects them).
    @Test func packageWithAGrant() throws {
        var m = Self.method()
        m.grants = V.grants
        let envelope = try MethodEnvelope.seal(storeKey: SecureBytes(copying: V.storeKey), to: m, storeId: V.storeId, epoch: V.epoch, ephemeralIKM: V.ephemeralIKM)
        #expect(hexString(envelope.enc) == V.enc && hexString(envelope.sealedKey) == V.sealedKey)
        let package = MethodsPackage(storeId: V.storeId, epoch: V.epoch, envelopes: [envelope]).encode().withUnsafeBytes { Array($0) }
        #expect(hexString(package) == V.packageWithGrantsPlaintext)
        let decoded = try MethodsPackage.decode(SecureBytes(copying: package), context: "vector")
        #expect(decoded.envelopes == [envelope] && decoded.envelopes[0].method.grants == V.grants)

        // Strict: each change below is refused as malformed.
        let field = hex(V.grantsField), at = package.count - 128 - field.count
        #expect(Array(package[at..<(at + field.count)]) == field)
        func code(grants: [UInt8]) -> KeybayError.Code? {
            var length = ByteWriter()
            length.u32(UInt32(grants.count))
            let bytes = Array(package[..<(at - 4)]) + length.bytes + grants + Array(package[(at + field.count)...])
            return keybayCode { _ = try MethodsPackage.decode(SecureBytes(copying: bytes), context: "t") }
        }
        func grant(_ option: String, _ path: String) -> [UInt8] {
            var w = ByteWriter()
            w.lengthPrefixed(Array(option.utf8))
            w.lengthPrefixed(Array(path.utf8))
            return w.bytes
        }
        #expect(code(grants: field) == nil)
        #expect(code(grants: []) == .malformed, "policy 2 without a grant")
        #expect(code(grants: grant("path", "keys/a.key")) == .malformed, "a relative path")
        #expect(code(grants: grant("Path", "/a")) == .malformed, "an option outside the grammar")
        #expect(code(grants: grant("path", "/a") + grant("path", "/b")) == .malformed, "an option granted twice")
        #expect(code(grants: (0..<9).flatMap { grant("o\($0)", "/a") }) == .malformed, "nine grants")
        #expect(code(grants: (0..<8).flatMap { grant("o\($0)", "/a") }) == nil, "eight grants")
        #expect(code(grants: grant("path", "/a") + [0]) == .malformed, "a trailing byte")
        #expect(code(grants: grant("path", "/\u{FF}").map { $0 == 0xc3 ? 0xff : $0 }) == .malformed, "a path that is not UTF-8")
    }

    /// Grants can make a package longer than a reader takes (docs/format.md §5: 163,840 bytes
    /// sealed): the writer refuses it before the root seals. 32 methods with the largest
    /// parameters fit without grants; with a 4000-byte path each they do not.
    @Test func aPackageTooLongForAReaderIsRefusedBeforeTheRootSeals() throws {
        let keyring = Keyring(root: VectorRoot(expectedAAD: []), domain: Suite1VectorTests.V.storageDomain, context: "vector")
        func methods(grants: [FileGrant]) -> [MethodEnvelope.Public] {
            (0..<MethodsPackage.maxMethods).map { i in
                .init(methodId: V.methodId.dropLast() + [UInt8(i)], pluginId: V.pluginId, label: V.label,
                      params: Array(repeating: 1, count: MethodEnvelope.maxParamsBytes), salt: V.salt, publicKey: Self.method().publicKey, grants: grants)
            }
        }
        func code(_ methods: [MethodEnvelope.Public]) -> KeybayError? {
            keybayError { _ = try keyring.next(after: Suite1VectorTests.keys, providerState: Suite1VectorTests.V.providerState, methods: methods) }
        }
        let long = code(methods(grants: [FileGrant(option: "path", path: "/" + String(repeating: "k", count: 4000))]))
        #expect(long?.code == .storeFull && long?.reason == "package-too-large", "\(String(describing: long))")
        // Without grants the package reaches the root (whose filler seal is then refused).
        #expect(code(methods(grants: []))?.code == .pluginFailed)
    }
}
