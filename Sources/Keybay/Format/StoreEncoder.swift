/// A record frame on its way into a new generation: freshly sealed, or copied byte for byte.
struct PendingFrame {
    let key: [UInt8]
    let bytes: ArraySlice<UInt8>
    let digest: [UInt8]
}

enum StoreEncoder {
    /// `nonce(24) | XChaCha20-Poly1305(Kframe, value, recordAAD)`; a fresh random nonce unless pinned.
    static func sealFrame(key: [UInt8], value: UnsafeRawBufferPointer, keys: StoreKeys, nonce: [UInt8]? = nil) -> PendingFrame {
        let aad = keys.suite.recordAAD(storeId: keys.storeId, epoch: keys.epoch, key: key)
        let bytes = XChaCha20Poly1305.seal(key: keys.frameKey, plaintext: value, aad: aad, nonce: nonce)
        return PendingFrame(key: key, bytes: bytes[...], digest: SHA256.hash(bytes))
    }

    /// Assembles a complete file. `frames` must be sorted by key bytes with no duplicates.
    static func encode(bootstrap: Bootstrap, sealedPackage: some Collection<UInt8>, frames: [PendingFrame],
                       keys: StoreKeys, domain: [UInt8], manifestNonce: [UInt8]? = nil) throws -> [UInt8] {
        precondition(bootstrap.sealedPackageLength == sealedPackage.count && bootstrap.suite == keys.suite)
        guard frames.count <= Suite1.maxRecords else {
            throw KeybayError(.storeFull, "the store would hold \(frames.count) records, limit \(Suite1.maxRecords)")
        }
        let manifest = Manifest.encode(frames.map { ManifestEntry(key: $0.key, frameLength: $0.bytes.count, digest: $0.digest) })
        let bootstrapBytes = bootstrap.bytes
        let aad = keys.suite.manifestAAD(domain: domain, bootstrap: bootstrapBytes, sealedPackage: sealedPackage)
        let sealedManifest = XChaCha20Poly1305.seal(key: keys.manifestKey, plaintext: manifest, aad: aad, nonce: manifestNonce)
        let frameBytes = frames.reduce(0) { $0 + $1.bytes.count }
        let storeBytes = bootstrapBytes.count + frameBytes + sealedManifest.count + 4
        guard storeBytes <= Suite1.maxFileBytes else {
            throw KeybayError(.storeFull, "the store would grow to \(storeBytes) bytes, limit \(Suite1.maxFileBytes)")
        }
        var w = ByteWriter(capacity: storeBytes + sealedPackage.count)
        w.raw(bootstrapBytes)
        w.raw(sealedPackage)
        for f in frames { w.raw(f.bytes) }
        w.raw(sealedManifest)
        w.u32(UInt32(sealedManifest.count))
        return w.bytes
    }
}
