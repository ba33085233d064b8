/// Constants of the Keybay V2 suite-1 file format (docs/format.md §2–§6).
enum Suite1 {
    static let magic: [UInt8] = Array("KBV2".utf8)
    static let suite: UInt16 = 1

    static let maxFileBytes = 16 * 1024 * 1024
    static let maxProviderStateBytes = 64
    static let maxSealedPackageBytes = 4096
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

    static let packageAADLabel = "keybay:v2:s1:aad:platform-package"
    static let manifestAADLabel = "keybay:v2:s1:aad:manifest"
    static let recordAADLabel = "keybay:v2:s1:aad:record-frame"
    static let manifestKeyInfo = "keybay:v2:s1:key:manifest"
    static let frameKeyInfo = "keybay:v2:s1:key:record-frame"

    /// package: `storageDomain`, `bootstrapCore`
    static func packageAAD(domain: [UInt8], bootstrapCore: [UInt8]) -> [UInt8] {
        transcript(packageAADLabel, [domain, bootstrapCore])
    }

    /// manifest: `storageDomain`, `bootstrap`, `sealedPackage`
    static func manifestAAD(domain: [UInt8], bootstrap: [UInt8], sealedPackage: some Collection<UInt8>) -> [UInt8] {
        transcript(manifestAADLabel, [domain, bootstrap, Array(sealedPackage)])
    }

    /// record frame: `storeId`, `epoch:u64`, `[0x01]`, `key`. No offset: frames can move.
    static func recordAAD(storeId: [UInt8], epoch: UInt64, key: [UInt8]) -> [UInt8] {
        transcript(recordAADLabel, [storeId, bigEndian(epoch), [recordKindValue], key])
    }
}
