// SPDX-License-Identifier: Apache-2.0
import Testing
@testable import Keybay

/// The published Keybay V2 suite-1 vectors (the reference's worked example, keybay-v2-suite1.json), copied here so
/// CI needs nothing outside the repository. Every output is reproduced byte for byte.
@Suite struct Suite1VectorTests {
    enum V {
        static let storageDomain = hex("000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f")
        static let providerState = hex("deadbeef")
        static let sealedPackage = hex("c0c1c2c3c4c5c6c7c8c9cacbcccdcecfd0d1d2d3d4d5d6d7d8d9dadbdcdddedfe0e1e2e3e4e5e6e7e8e9eaebecedeeef")
        static let storeId = hex("101112131415161718191a1b1c1d1e1f")
        static let storeKey = hex("202122232425262728292a2b2c2d2e2f303132333435363738393a3b3c3d3e3f")
        static let epoch: UInt64 = 7
        static let methodId = hex("404142434445464748494a4b4c4d4e4f")
        static let salt = hex("505152535455565758595a5b5c5d5e5f")
        static let passphraseKey = hex("606162636465666768696a6b6c6d6e6f707172737475767778797a7b7c7d7e7f")
        static let recordKey = "service/token"
        static let recordValue = "correct horse"
        static let recordNonce = hex("808182838485868788898a8b8c8d8e8f9091929394959697")
        static let manifestNonce = hex("98999a9b9c9d9e9fa0a1a2a3a4a5a6a7a8a9aaabacadaeaf")
        static let passphraseNonce = hex("b0b1b2b3b4b5b6b7b8b9babbbcbdbebfc0c1c2c3c4c5c6c7")

        static let bootstrapCore = "4b425632000100000004deadbeef"
        static let bootstrap = "4b425632000100000004deadbeef00000030"
        static let platformPackagePlaintext = "101112131415161718191a1b1c1d1e1f000000000000000700202122232425262728292a2b2c2d2e2f303132333435363738393a3b3c3d3e3f"
        static let packageAad = "6b65796261793a76323a73313a6161643a706c6174666f726d2d7061636b6167650000000020000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f0000000e4b425632000100000004deadbeef"
        static let manifestAad = "6b65796261793a76323a73313a6161643a6d616e69666573740000000020000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f000000124b425632000100000004deadbeef0000003000000030c0c1c2c3c4c5c6c7c8c9cacbcccdcecfd0d1d2d3d4d5d6d7d8d9dadbdcdddedfe0e1e2e3e4e5e6e7e8e9eaebecedeeef"
        static let passphraseAad = "6b65796261793a76323a73313a6161643a706173737068726173652d656e76656c6f70650000000010101112131415161718191a1b1c1d1e1f00000008000000000000000700000010404142434445464748494a4b4c4d4e4f000000010100000010505152535455565758595a5b5c5d5e5f"
        static let recordAad = "6b65796261793a76323a73313a6161643a7265636f72642d6672616d650000000010101112131415161718191a1b1c1d1e1f00000008000000000000000700000001010000000d736572766963652f746f6b656e"
        static let manifestKey = "83c5dee4e2d4cc0b09b37cfdfd4e0702b8fe13bd82d6c4355c7334e984668b57"
        static let recordFrameKey = "1a25a1542a2793d5669b1546c3fef779cf93c644b1fd393b20822beabb24da82"
        static let recordFrame = "808182838485868788898a8b8c8d8e8f909192939495969718571f375e0b7e0a33002dfe15c5196b73ec3f46bf7f98c1084591a247"
        static let recordDigest = "44fb91337ee10da4e381d5e24b71fe764db458d86c8abf6f08f2fd75ef4fa1f8"
        static let manifestPlaintext = "000000010000000d736572766963652f746f6b656e0000003544fb91337ee10da4e381d5e24b71fe764db458d86c8abf6f08f2fd75ef4fa1f8"
        static let sealedManifest = "98999a9b9c9d9e9fa0a1a2a3a4a5a6a7a8a9aaabacadaeafb46de0f83718cb7ce8560ffa7b4caae3e26504f69f8efedda358394a60f8235439473204738759d86900d8fa8ccf34b30bc9911d337d872a8b10ebaf0216a877adc625d45bcbc5579d"
        static let passphraseEnvelope = "b0b1b2b3b4b5b6b7b8b9babbbcbdbebfc0c1c2c3c4c5c6c7d3e0388e6a379e666d2abc41f8e1feddc73f6b8522f8de693190eb47bc946c2ed0539ef2f7c5f6fc7682371404cfdd4c"
        static let passphrasePackagePlaintext = "101112131415161718191a1b1c1d1e1f000000000000000701404142434445464748494a4b4c4d4e4f01505152535455565758595a5b5c5d5e5fb0b1b2b3b4b5b6b7b8b9babbbcbdbebfc0c1c2c3c4c5c6c7d3e0388e6a379e666d2abc41f8e1feddc73f6b8522f8de693190eb47bc946c2ed0539ef2f7c5f6fc7682371404cfdd4c"
    }

    static var bootstrap: Bootstrap {
        Bootstrap(suite: .platform, providerState: V.providerState, sealedPackageLength: V.sealedPackage.count)
    }

    static var package: PlatformPackage {
        PlatformPackage(storeId: V.storeId, epoch: V.epoch, storeKey: SecureBytes(copying: V.storeKey))
    }

    static var keys: StoreKeys { StoreKeys(package: package) }

    @Test func bootstrapBytes() {
        #expect(hexString(Self.bootstrap.core) == V.bootstrapCore)
        #expect(hexString(Self.bootstrap.bytes) == V.bootstrap)
    }

    @Test func platformPackagePlaintext() throws {
        let encoded = Self.package.encode()
        #expect(encoded.withUnsafeBytes { hexString($0) } == V.platformPackagePlaintext)
        let decoded = try PlatformPackage.decode(encoded, context: "vector")
        #expect(decoded.storeId == V.storeId && decoded.epoch == V.epoch)
        #expect(decoded.storeKey.withUnsafeBytes { hexString($0) } == hexString(V.storeKey))
    }

    @Test func aads() {
        #expect(hexString(StoreSuite.platform.packageAAD(domain: V.storageDomain, bootstrapCore: Self.bootstrap.core)) == V.packageAad)
        #expect(hexString(StoreSuite.platform.manifestAAD(domain: V.storageDomain, bootstrap: Self.bootstrap.bytes, sealedPackage: V.sealedPackage)) == V.manifestAad)
        #expect(hexString(StoreSuite.platform.recordAAD(storeId: V.storeId, epoch: V.epoch, key: Array(V.recordKey.utf8))) == V.recordAad)
    }

    @Test func derivedKeys() {
        let keys = Self.keys
        #expect(keys.manifestKey.withUnsafeBytes { hexString($0) } == V.manifestKey)
        #expect(keys.frameKey.withUnsafeBytes { hexString($0) } == V.recordFrameKey)
    }

    @Test func recordFrameAndDigest() throws {
        let frame = Array(V.recordValue.utf8).withUnsafeBytes {
            StoreEncoder.sealFrame(key: Array(V.recordKey.utf8), value: $0, keys: Self.keys, nonce: V.recordNonce)
        }
        #expect(hexString(frame.bytes) == V.recordFrame)
        #expect(hexString(frame.digest) == V.recordDigest)
    }

    @Test func manifestPlaintextAndSeal() throws {
        let entries = [ManifestEntry(key: Array(V.recordKey.utf8), frameLength: hex(V.recordFrame).count, digest: hex(V.recordDigest))]
        #expect(hexString(Manifest.encode(entries)) == V.manifestPlaintext)
        #expect(try Manifest.decode(hex(V.manifestPlaintext), context: "vector") == entries)
        let sealed = XChaCha20Poly1305.seal(key: Self.keys.manifestKey, plaintext: hex(V.manifestPlaintext),
                                            aad: hex(V.manifestAad), nonce: V.manifestNonce)
        #expect(hexString(sealed) == V.sealedManifest)
    }

    /// The whole file assembled by the encoder, then decoded and authenticated with a root
    /// that hands back the vector package (the sealed package in the vectors is opaque filler).
    @Test func completeFileRoundTrip() throws {
        let frame = PendingFrame(key: Array(V.recordKey.utf8), bytes: hex(V.recordFrame)[...], digest: hex(V.recordDigest))
        let file = try StoreEncoder.encode(bootstrap: Self.bootstrap, sealedPackage: V.sealedPackage, frames: [frame],
                                           keys: Self.keys, domain: V.storageDomain, manifestNonce: V.manifestNonce)
        let expected = hex(V.bootstrap) + V.sealedPackage + hex(V.recordFrame) + hex(V.sealedManifest) + [0, 0, 0, UInt8(hex(V.sealedManifest).count)]
        #expect(file == expected)

        let keyring = Keyring(root: VectorRoot(expectedAAD: hex(V.packageAad)), domain: V.storageDomain, context: "vector")
        let layout = try StoreLayout.decode(file, context: "vector")
        let opened = try keyring.open(layout, in: file, unlock: .platform)
        #expect(opened.keys.storeKey.equals(Self.keys.storeKey) && opened.methods.isEmpty)
        let snapshot = try StoreSnapshot.authenticate(file: file, layout: layout, keys: opened.keys, methods: opened.methods,
                                                      domain: V.storageDomain, context: "vector")
        try snapshot.checkAllFrameDigests(context: "vector")
        #expect(snapshot.keyNames == [V.recordKey])
        #expect(try snapshot.value(at: 0, context: "vector") == Array(V.recordValue.utf8))
    }

    /// The reference's policy-1 passphrase envelope, reproduced with the same transcript and AEAD.
    /// This version documents policy 1 but refuses it when opening (see docs/format.md §5.1).
    @Test func passphraseEnvelopeOfTheReference() throws {
        let aad = transcript("keybay:v2:s1:aad:passphrase-envelope", [V.storeId, bigEndian(V.epoch), V.methodId, [1], V.salt])
        #expect(hexString(aad) == V.passphraseAad)
        let envelope = XChaCha20Poly1305.seal(key: SecureBytes(copying: V.passphraseKey), plaintext: V.storeKey, aad: aad, nonce: V.passphraseNonce)
        #expect(hexString(envelope) == V.passphraseEnvelope)
        var w = ByteWriter()
        w.raw(V.storeId); w.u64(V.epoch); w.u8(1); w.raw(V.methodId); w.u8(1); w.raw(V.salt); w.raw(envelope)
        #expect(hexString(w.bytes) == V.passphrasePackagePlaintext)
        // That package is not a platform package (its length alone says so); the policy byte of a
        // platform package is refused when it is not 0.
        #expect(keybayCode { _ = try PlatformPackage.decode(SecureBytes(copying: w.bytes), context: "vector") } == .malformed)
        #expect(Self.policyError(SecureBytes(copying: hex(V.platformPackagePlaintext).enumerated().map { $0.offset == 24 ? 1 : $0.element })) == .unsupported)
    }

    static func policyError(_ plaintext: SecureBytes) -> KeybayError.Code? {
        keybayCode { _ = try PlatformPackage.decode(plaintext, context: "vector") }
    }
}

/// A root whose "sealed package" is the vectors' opaque filler: it checks the AAD it is given
/// and returns the vector package plaintext.
struct VectorRoot: RootProvider {
    let expectedAAD: [UInt8]
    var id: String { "vector" }
    var location: String { "vector" }
    var protection: String? { nil }
    func exists() throws -> Bool { true }
    func create(options: [(String, String)]) throws -> [UInt8] { Suite1VectorTests.V.providerState }
    func seal(_ plaintext: SecureBytes, aad: [UInt8], providerState: [UInt8]) throws -> [UInt8] {
        Suite1VectorTests.V.sealedPackage
    }
    var keepsFloor: Bool { false }
    func open(_ sealed: ArraySlice<UInt8>, aad: [UInt8], providerState: [UInt8]) throws -> (package: SecureBytes, floor: UInt64) {
        guard aad == expectedAAD, Array(sealed) == Suite1VectorTests.V.sealedPackage, providerState == Suite1VectorTests.V.providerState else {
            throw KeybayError(.integrity, "vector root: unexpected input")
        }
        return (Suite1VectorTests.package.encode(), 0)
    }
    func raiseFloor(to epoch: UInt64, providerState: [UInt8]) throws {}
    func reset() throws {}
}
