// SPDX-License-Identifier: Apache-2.0
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
        try encodeStore(bootstrap: bootstrap, sealedPackage: sealedPackage, frames: frames, keys: keys,
                        domain: domain, manifestNonce: manifestNonce).file
    }

    /// `encode`, keeping the manifest it wrote: a writer that reads its file back compares the
    /// manifest it decrypts with these bytes instead of decoding it again.
    static func encodeStore(bootstrap: Bootstrap, sealedPackage: some Collection<UInt8>, frames: [PendingFrame],
                            keys: StoreKeys, domain: [UInt8], manifestNonce: [UInt8]? = nil) throws -> EncodedStore {
        precondition(bootstrap.sealedPackageLength == sealedPackage.count && bootstrap.suite == keys.suite)
        guard frames.count <= Suite1.maxRecords else {
            throw KeybayError(.storeFull, "the store would hold \(frames.count) records, limit \(Suite1.maxRecords)")
        }
        let entries = frames.map { ManifestEntry(key: $0.key, frameLength: $0.bytes.count, digest: $0.digest) }
        let manifest = Manifest.encode(entries)
        let bootstrapBytes = bootstrap.bytes
        let aad = keys.suite.manifestAAD(domain: domain, bootstrap: bootstrapBytes, sealedPackage: sealedPackage)
        let sealedManifest = XChaCha20Poly1305.seal(key: keys.manifestKey, plaintext: manifest, aad: aad, nonce: manifestNonce)
        let frameBytes = frames.reduce(0) { $0 + $1.bytes.count }
        let storeBytes = bootstrapBytes.count + frameBytes + sealedManifest.count + 4
        guard storeBytes <= Suite1.maxFileBytes else {
            throw KeybayError(.storeFull, "the store would grow to \(storeBytes) bytes, limit \(Suite1.maxFileBytes)")
        }
        // Copied piece by piece into one uninitialised buffer: a store of 4096 records is
        // re-assembled on every write.
        let package = Array(sealedPackage)
        let file = [UInt8](unsafeUninitializedCapacity: storeBytes + package.count) { buffer, initialized in
            var at = 0
            func put(_ piece: UnsafeRawBufferPointer) {
                guard piece.count > 0 else { return }
                UnsafeMutableRawBufferPointer(rebasing: UnsafeMutableRawBufferPointer(buffer)[at..<(at + piece.count)]).copyMemory(from: piece)
                at += piece.count
            }
            bootstrapBytes.withUnsafeBytes(put)
            package.withUnsafeBytes(put)
            for f in frames { f.bytes.withUnsafeBytes(put) }
            sealedManifest.withUnsafeBytes(put)
            bigEndian32(UInt32(sealedManifest.count)).withUnsafeBytes(put)
            precondition(at == buffer.count)
            initialized = at
        }
        return EncodedStore(file: file, manifest: manifest, entries: entries)
    }
}

/// A file as encoded, with the manifest plaintext and entries it commits to.
struct EncodedStore {
    let file: [UInt8]
    let manifest: [UInt8]
    let entries: [ManifestEntry]
}
