// SPDX-License-Identifier: Apache-2.0
/// Constants shared by the Keybay V2 store suites (docs/format.md §2–§6). Suite 1 is the
/// platform-only format of the published vectors; suite 2 (ours) holds method envelopes.
enum Suite1 {
    static let magic: [UInt8] = Array("KBV2".utf8)

    static let maxFileBytes = 16 * 1024 * 1024
    static let maxProviderStateBytes = 64
    static let maxSealedPackageBytes = 4096
    /// Suite 2: up to 32 envelopes with up to 4 KiB of parameters each.
    static let maxMethodsSealedPackageBytes = 160 * 1024
    static let maxRecords = 4096
    static let maxKeyBytes = 120
    static let maxValueBytes = 1024 * 1024
    static let maxFrameBytes = maxValueBytes + XChaCha20Poly1305.overhead
    static let minFrameBytes = XChaCha20Poly1305.overhead
    static let storeIdBytes = 16
    static let storeKeyBytes = 32
    static let maxEpoch: UInt64 = (1 << 63) - 1

    static let policyPlatformOnly: UInt8 = 0
    static let recordKindValue: UInt8 = 1

}

/// The store suites. Each has its own labels, so nothing sealed under one suite opens under another.
enum StoreSuite: UInt16, Sendable {
    /// Platform-only, byte-compatible with Keybay V2 suite 1.
    case platform = 1
    /// Keybay for Linux: one HPKE envelope of Kstore per unlock method.
    case methods = 2

    var labelPrefix: String { self == .platform ? "keybay:v2:s1" : "keybay:v2:s2" }
    var packageAADLabel: String { labelPrefix + (self == .platform ? ":aad:platform-package" : ":aad:methods-package") }
    var manifestKeyInfo: String { labelPrefix + ":key:manifest" }
    var frameKeyInfo: String { labelPrefix + ":key:record-frame" }
    var maxSealedPackageBytes: Int { self == .platform ? Suite1.maxSealedPackageBytes : Suite1.maxMethodsSealedPackageBytes }

    /// package: `storageDomain`, `bootstrapCore`
    func packageAAD(domain: [UInt8], bootstrapCore: [UInt8]) -> [UInt8] {
        transcript(packageAADLabel, [domain, bootstrapCore])
    }

    /// manifest: `storageDomain`, `bootstrap`, `sealedPackage`
    func manifestAAD(domain: [UInt8], bootstrap: [UInt8], sealedPackage: some Collection<UInt8>) -> [UInt8] {
        transcript(labelPrefix + ":aad:manifest", [domain, bootstrap, Array(sealedPackage)])
    }

    /// record frame: `storeId`, `epoch:u64`, `[0x01]`, `key`. No offset: frames can move.
    func recordAAD(storeId: [UInt8], epoch: UInt64, key: [UInt8]) -> [UInt8] {
        transcript(labelPrefix + ":aad:record-frame", [storeId, bigEndian(epoch), [Suite1.recordKindValue], key])
    }
}
