// SPDX-License-Identifier: Apache-2.0
/// Platform-only package plaintext: `storeId(16) | epoch:u64 | policy:u8 (0) | Kstore(32)`, 57 bytes.
/// It lives only in guarded memory; the root seals it.
struct PlatformPackage {
    static let plaintextBytes = Suite1.storeIdBytes + 8 + 1 + Suite1.storeKeyBytes

    let storeId: [UInt8]
    let epoch: UInt64
    let storeKey: SecureBytes

    func encode() -> SecureBytes {
        SecureBytes(count: Self.plaintextBytes) { out in
            var header = ByteWriter(capacity: 25)
            header.raw(storeId)
            header.u64(epoch)
            header.u8(Suite1.policyPlatformOnly)
            out.copyBytes(from: header.bytes)
            storeKey.withUnsafeBytes { k in
                UnsafeMutableRawBufferPointer(rebasing: out[25...]).copyMemory(from: k)
            }
        }
    }

    static func decode(_ plaintext: SecureBytes, context: String) throws -> PlatformPackage {
        try plaintext.withUnsafeBytes { p in
            guard p.count == plaintextBytes else {
                throw KeybayError(.malformed, "\(context): key package is \(p.count) bytes, expected \(plaintextBytes)")
            }
            let storeId = Array(p[0..<16])
            let epoch = p[16..<24].reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
            let policy = p[24]
            guard policy == Suite1.policyPlatformOnly else {
                throw KeybayError(.unsupported, "\(context): key package policy \(policy) is not supported by this version")
            }
            guard epoch >= 1, epoch <= Suite1.maxEpoch else {
                throw KeybayError(.malformed, "\(context): epoch out of range")
            }
            let key = SecureBytes(copying: UnsafeRawBufferPointer(rebasing: p[25..<57]))
            return PlatformPackage(storeId: storeId, epoch: epoch, storeKey: key)
        }
    }
}

/// The keys one store generation uses, derived from Kstore with HKDF-SHA256 (salt = storeId).
/// Kstore itself is kept (guarded) because adding or removing a method must decrypt every record.
struct StoreKeys: Sendable {
    let suite: StoreSuite
    let storeId: [UInt8]
    let epoch: UInt64
    let storeKey: SecureBytes
    let manifestKey: SecureBytes
    let frameKey: SecureBytes

    init(suite: StoreSuite, storeId: [UInt8], epoch: UInt64, storeKey: SecureBytes) {
        self.suite = suite
        self.storeId = storeId
        self.epoch = epoch
        self.storeKey = storeKey
        // Both keys expand the same PRK (docs/format.md §5.2): extract it once.
        let prk = storeKey.withUnsafeBytes { HKDF.extract(salt: storeId, ikm: $0) }
        manifestKey = HKDF.expand(prk: prk, info: Array(suite.manifestKeyInfo.utf8), count: 32)
        frameKey = HKDF.expand(prk: prk, info: Array(suite.frameKeyInfo.utf8), count: 32)
    }

    init(package: PlatformPackage) {
        self.init(suite: .platform, storeId: package.storeId, epoch: package.epoch, storeKey: package.storeKey)
    }
}
