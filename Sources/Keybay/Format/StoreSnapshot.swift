/// One authenticated generation of a store file: the bytes as read, the keys recovered from the
/// package, and the manifest checked against every frame. Immutable, so reads never mix generations.
struct StoreSnapshot: Sendable {
    let file: [UInt8]
    let layout: StoreLayout
    let keys: StoreKeys
    let entries: [ManifestEntry]
    let frameStarts: [Int]
    let index: [String: Int]

    var bootstrapBytes: [UInt8] { layout.bootstrap.bytes }
    var sealedPackage: ArraySlice<UInt8> { file[layout.sealedPackage] }

    /// Decodes `file` strictly and authenticates all of it. If `previous` has the very same
    /// bootstrap and sealed package, its keys are reused instead of asking the root again.
    static func authenticate(file: [UInt8], context: String, domain: [UInt8], root: any RootProvider,
                             reusing previous: StoreSnapshot? = nil) throws -> StoreSnapshot {
        let layout = try StoreLayout.decode(file, context: context)
        let keys: StoreKeys
        if let previous, previous.layout.bootstrap == layout.bootstrap,
           previous.sealedPackage.elementsEqual(file[layout.sealedPackage]) {
            keys = previous.keys
        } else {
            let aad = Suite1.packageAAD(domain: domain, bootstrapCore: layout.bootstrap.core)
            let plaintext = try root.open(file[layout.sealedPackage], aad: aad,
                                          providerState: layout.bootstrap.providerState, domain: domain)
            keys = StoreKeys(package: try PlatformPackage.decode(plaintext, context: context))
        }
        // The keys are provisional until the manifest authenticates.
        let manifestAAD = Suite1.manifestAAD(domain: domain, bootstrap: layout.bootstrap.bytes,
                                             sealedPackage: file[layout.sealedPackage])
        let manifestPlain = file.withUnsafeBytes { f in
            XChaCha20Poly1305.open(key: keys.manifestKey, sealed: UnsafeRawBufferPointer(rebasing: f[layout.sealedManifest]), aad: manifestAAD)
        }
        guard let manifestPlain else {
            throw KeybayError(.integrity, "\(context): manifest failed authentication (the file was modified or belongs to another store)")
        }
        let entries = try Manifest.decode(manifestPlain, context: context)

        // Frame offsets are derived by checked prefix sums that must cover the frame region exactly.
        var starts: [Int] = []
        starts.reserveCapacity(entries.count)
        var index: [String: Int] = [:]
        index.reserveCapacity(entries.count)
        var offset = layout.frames.lowerBound
        for (i, e) in entries.enumerated() {
            guard e.frameLength <= layout.frames.upperBound - offset else {
                throw KeybayError(.integrity, "\(context): record frames overrun the frame region")
            }
            starts.append(offset)
            let digest = SHA256.hash(file[offset..<(offset + e.frameLength)])
            guard Sodium.constantTimeEqual(digest, e.digest) else {
                throw KeybayError(.integrity, "\(context): record frame \(i) does not match its manifest digest")
            }
            offset += e.frameLength
            index[String(decoding: e.key, as: UTF8.self)] = i
        }
        guard offset == layout.frames.upperBound else {
            throw KeybayError(.integrity, "\(context): \(layout.frames.upperBound - offset) bytes in the frame region belong to no record")
        }
        return StoreSnapshot(file: file, layout: layout, keys: keys, entries: entries, frameStarts: starts, index: index)
    }

    func frame(at i: Int) -> ArraySlice<UInt8> {
        file[frameStarts[i]..<(frameStarts[i] + entries[i].frameLength)]
    }

    /// Decrypts record `i`.
    func value(at i: Int, context: String) throws -> [UInt8] {
        let aad = keys.suite.recordAAD(storeId: keys.storeId, epoch: keys.epoch, key: entries[i].key)
        let value = file.withUnsafeBytes { f in
            XChaCha20Poly1305.open(key: keys.frameKey, sealed: UnsafeRawBufferPointer(rebasing: f[frameStarts[i]..<(frameStarts[i] + entries[i].frameLength)]), aad: aad)
        }
        guard let value else {
            throw KeybayError(.integrity, "\(context): record frame \(i) failed authentication")
        }
        return value
    }

    var keyNames: [String] { entries.map { String(decoding: $0.key, as: UTF8.self) } }
}
