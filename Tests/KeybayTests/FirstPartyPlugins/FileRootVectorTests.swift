// SPDX-License-Identifier: Apache-2.0
import Testing
@testable import Keybay

/// Our own worked example for the parts the published vectors leave open: the storage domain of
/// an application, the file-root provider state, and a complete empty store whose package is
/// really sealed by a file root. docs/format.md §9.2 lists the same values.
@Suite struct FileRootVectorTests {
    enum V {
        static let app = "demo"
        static let root = hex("000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f")
        static let storeId = hex("101112131415161718191a1b1c1d1e1f")
        static let storeKey = hex("202122232425262728292a2b2c2d2e2f303132333435363738393a3b3c3d3e3f")
        static let epoch: UInt64 = 1
        static let packageNonce = hex("a0a1a2a3a4a5a6a7a8a9aaabacadaeafb0b1b2b3b4b5b6b7")
        static let manifestNonce = hex("98999a9b9c9d9e9fa0a1a2a3a4a5a6a7a8a9aaabacadaeaf")

        static let storageDomain = "a2cf8ce89f434303fbef1c6ab02b0d1944c4b5ea9b229b4d72d3e1ecc89ec2cb"
        static let providerState = "453394af4285f8c6209542452987a75fe92b8435735247451f7eb924d2c42c22"
        static let file = "4b425632000100000020453394af4285f8c6209542452987a75fe92b8435735247451f7eb924d2c42c2200000061a0a1a2a3a4a5a6a7a8a9aaabacadaeafb0b1b2b3b4b5b6b755fd180ea348b2bb797637926d2dbddf3baa9f2caa06cad81d60aac5c487db10f6af83056d6a51e28adb5f64a8009a18921e1fc3e154ed99c57a842e69e436bb1ce164ae121e5859f198999a9b9c9d9e9fa0a1a2a3a4a5a6a7a8a9aaabacadaeafb46de0f9d9ed6526f858674d7afab2d24b46853f0000002c"
    }

    /// Written out here rather than called from the plugin, which is C and loaded at run time.
    static func providerState(root: [UInt8], domain: [UInt8]) -> [UInt8] {
        SHA256.hash(Array("keybay:v2:s1:provider-state:file-root".utf8) + [0] + domain + root)
    }

    static func domain() -> [UInt8] {
        StorageDomain.derive(identity: V.app, profile: "file-root", location: "keybay/\(V.app)/")
    }

    static func file() throws -> [UInt8] {
        let root = SecureBytes(copying: V.root)
        let domain = domain()
        let state = providerState(root: V.root, domain: domain)
        let package = PlatformPackage(storeId: V.storeId, epoch: V.epoch, storeKey: SecureBytes(copying: V.storeKey))
        let bootstrap = Bootstrap(suite: .platform, providerState: state, sealedPackageLength: 97)
        let sealed = package.encode().withUnsafeBytes {
            XChaCha20Poly1305.seal(key: root, plaintext: $0, aad: StoreSuite.platform.packageAAD(domain: domain, bootstrapCore: bootstrap.core), nonce: V.packageNonce)
        }
        return try StoreEncoder.encode(bootstrap: bootstrap, sealedPackage: sealed, frames: [], keys: StoreKeys(package: package),
                                       domain: domain, manifestNonce: V.manifestNonce)
    }

    @Test func workedExample() throws {
        let domain = Self.domain()
        let state = Self.providerState(root: V.root, domain: domain)
        #expect(hexString(domain) == V.storageDomain)
        #expect(hexString(state) == V.providerState)
        #expect(hexString(try Self.file()) == V.file)
    }

    /// The worked example opens through the real file root and storage engine.
    @Test func workedExampleOpensThroughTheFileRoot() async throws {
        let box = Sandbox(app: V.app)
        _ = try await KeybayStore.open(box.configuration()) // makes the private directories
        writeBytes(box.rootPath, Array("KBFR".utf8) + [0, 1] + V.root)
        writeBytes(box.storePath, try Self.file())
        let session = try await KeybayStore.open(box.configuration(), createIfAbsent: false)
        #expect(try session.keys() == [])
        try session.set("service/token", string: "correct horse")
        #expect(try session.getString("service/token") == "correct horse")
    }
}
