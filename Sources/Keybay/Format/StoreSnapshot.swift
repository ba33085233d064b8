// SPDX-License-Identifier: Apache-2.0
/// One authenticated generation of a store file: the bytes as read, the keys recovered from the
/// package, the methods it lists, and the manifest checked against every frame. Immutable, so
/// reads never mix generations.
struct StoreSnapshot: Sendable {
    let file: [UInt8]
    let layout: StoreLayout
    let keys: StoreKeys
    let methods: [MethodEnvelope.Public]
    let entries: [ManifestEntry]
    let frameStarts: [Int]

    var sealedPackage: ArraySlice<UInt8> { file[layout.sealedPackage] }
    var suite: StoreSuite { layout.bootstrap.suite }

    /// Authenticates the manifest of `file` (laid out as `layout`) with keys the key package
    /// yielded, and derives every frame's place. Each frame's digest is checked when the frame is
    /// read (`values(at:)`), so opening a large store hashes nothing it does not read.
    static func authenticate(file: [UInt8], layout: StoreLayout, keys: StoreKeys, methods: [MethodEnvelope.Public],
                             domain: [UInt8], context: String) throws -> StoreSnapshot {
        let entries = try Manifest.decode(openManifest(file, layout: layout, keys: keys, domain: domain, context: context), context: context)
        return try StoreSnapshot(file: file, layout: layout, keys: keys, methods: methods, entries: entries, context: context)
    }

    /// `authenticate` for the encoding this process just made durable and read back: its
    /// manifest must decrypt to exactly the bytes it wrote, and is not decoded again.
    static func authenticateWritten(_ written: EncodedStore, layout: StoreLayout, keys: StoreKeys, methods: [MethodEnvelope.Public],
                                    domain: [UInt8], context: String) throws -> StoreSnapshot {
        let plaintext = try openManifest(written.file, layout: layout, keys: keys, domain: domain, context: context)
        guard sameBytes(plaintext, written.manifest) else {
            throw KeybayError(.integrity, "\(context): the manifest does not read back as written")
        }
        return try StoreSnapshot(file: written.file, layout: layout, keys: keys, methods: methods, entries: written.entries, context: context)
    }

    /// The keys are provisional until the manifest authenticates under them.
    private static func openManifest(_ file: [UInt8], layout: StoreLayout, keys: StoreKeys, domain: [UInt8], context: String) throws -> [UInt8] {
        let aad = layout.bootstrap.suite.manifestAAD(domain: domain, bootstrap: layout.bootstrap.bytes,
                                                     sealedPackage: file[layout.sealedPackage])
        let plaintext = file.withUnsafeBytes { f in
            XChaCha20Poly1305.open(key: keys.manifestKey, sealed: UnsafeRawBufferPointer(rebasing: f[layout.sealedManifest]), aad: aad)
        }
        guard let plaintext else {
            throw KeybayError(.integrity, "\(context): manifest failed authentication (the file was modified or belongs to another store)")
        }
        return plaintext
    }

    /// Frame offsets are derived by checked prefix sums that must cover the frame region exactly.
    private init(file: [UInt8], layout: StoreLayout, keys: StoreKeys, methods: [MethodEnvelope.Public],
                 entries: [ManifestEntry], context: String) throws {
        var starts: [Int] = []
        starts.reserveCapacity(entries.count)
        var offset = layout.frames.lowerBound
        for e in entries {
            guard e.frameLength <= layout.frames.upperBound - offset else {
                throw KeybayError(.integrity, "\(context): record frames overrun the frame region")
            }
            starts.append(offset)
            offset += e.frameLength
        }
        guard offset == layout.frames.upperBound else {
            throw KeybayError(.integrity, "\(context): \(layout.frames.upperBound - offset) bytes in the frame region belong to no record")
        }
        (self.file, self.layout, self.keys, self.methods, self.entries, frameStarts) = (file, layout, keys, methods, entries, starts)
    }

    /// True when `other` has the same bootstrap and sealed package: the same keys open it.
    func hasSamePackage(as other: StoreLayout, in file: [UInt8]) -> Bool {
        layout.bootstrap == other.bootstrap && sealedPackage.elementsEqual(file[other.sealedPackage])
    }

    /// Checks every frame against its manifest digest now (the vector tests; a store never needs it).
    func checkAllFrameDigests(context: String) throws {
        for i in entries.indices where !Sodium.constantTimeEqual(SHA256.hash(frame(at: i)), entries[i].digest) {
            throw KeybayError(.integrity, "\(context): record frame \(i) does not match its manifest digest").with(reason: "frame-digest")
        }
    }

    /// The entry of `key`, by binary search: manifest keys are unique and in ascending byte order
    /// (checked when the manifest is decoded), so no lookup table is built per generation.
    func index(of key: [UInt8]) -> Int? {
        var low = 0, high = entries.count
        while low < high {
            let mid = (low + high) / 2
            if entries[mid].key.lexicographicallyPrecedes(key) { low = mid + 1 } else { high = mid }
        }
        return low < entries.count && entries[low].key == key ? low : nil
    }

    func frame(at i: Int) -> ArraySlice<UInt8> {
        file[frameStarts[i]..<(frameStarts[i] + entries[i].frameLength)]
    }

    /// Decrypts record `i` after checking the frame against its manifest digest (a frame is
    /// checked when it is read, so opening a large store does not hash every frame).
    func value(at i: Int, context: String) throws -> [UInt8] {
        try values(at: [i], context: context)[0]
    }

    /// `value(at:)` for each of `indices`, in order. Checking a frame's digest and decrypting it
    /// are independent pieces of work, run on two threads when there is enough of it
    /// (`ParallelWork`); a value is returned only if both succeeded, and the error is the one
    /// for the first bad frame, as if they had been read one by one.
    func values(at indices: [Int], context: String) throws -> [[UInt8]] {
        var digestMatches = [Bool](repeating: false, count: indices.count)
        var opened = [[UInt8]?](repeating: nil, count: indices.count)
        let bytes = indices.reduce(0) { $0 + entries[$1].frameLength }
        digestMatches.withUnsafeMutableBufferPointer { matches in
            opened.withUnsafeMutableBufferPointer { values in
                // Piece 2k hashes the k-th frame, piece 2k + 1 decrypts it.
                ParallelWork.run(count: 2 * indices.count, bytes: 2 * bytes) { piece in
                    let k = piece / 2, i = indices[k]
                    if piece % 2 == 0 {
                        matches[k] = Sodium.constantTimeEqual(SHA256.hash(frame(at: i)), entries[i].digest)
                    } else {
                        let aad = keys.suite.recordAAD(storeId: keys.storeId, epoch: keys.epoch, key: entries[i].key)
                        values[k] = frame(at: i).withUnsafeBytes { XChaCha20Poly1305.open(key: keys.frameKey, sealed: $0, aad: aad) }
                    }
                }
            }
        }
        return try indices.indices.map { k in
            guard digestMatches[k] else {
                throw KeybayError(.integrity, "\(context): record frame \(indices[k]) does not match its manifest digest").with(reason: "frame-digest")
            }
            guard let value = opened[k] else {
                throw KeybayError(.integrity, "\(context): record frame \(indices[k]) failed authentication").with(reason: "frame-authentication")
            }
            return value
        }
    }

    var keyNames: [String] { entries.map { String(decoding: $0.key, as: UTF8.self) } }
}
