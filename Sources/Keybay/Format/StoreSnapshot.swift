/// How the store key of a generation is to be obtained.
enum PackageKey {
    /// Platform-only: the root's package holds Kstore. A suite-2 store needs a method instead.
    case platform
    /// A method-protected store: `unlock` picks an envelope and runs the method's ceremony.
    /// A platform-only store asked for a method is a protection mismatch.
    case method(unlock: (_ envelopes: [MethodEnvelope], _ storeId: [UInt8], _ epoch: UInt64) throws -> SecureBytes)
    /// Whichever the store needs: a platform-only store opens as with `.platform`, a protected
    /// one through `unlock` (for a caller that does not know beforehand, and should not have to
    /// read the store twice to find out).
    case platformOrMethod(unlock: (_ envelopes: [MethodEnvelope], _ storeId: [UInt8], _ epoch: UInt64) throws -> SecureBytes)
    /// Kstore is already known (this process just wrote the generation).
    case known(SecureBytes)
}

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

    /// Decodes `file` strictly and authenticates its package and manifest. Each frame's digest is
    /// checked when the frame is read (`value(at:)`); `checkFrameDigests` checks them all now
    /// (the vector tests), which a store never needs. If `previous` has the very same bootstrap and sealed package, its keys are
    /// reused without asking the root or a method.
    /// `written` is the encoding this process just made durable and read back: its manifest
    /// must then decrypt to exactly the bytes it wrote, and is not decoded again.
    static func authenticate(file: [UInt8], context: String, domain: [UInt8], root: any RootProvider,
                             key: PackageKey = .platform, reusing previous: StoreSnapshot? = nil,
                             written: EncodedStore? = nil, checkFrameDigests: Bool = false) throws -> StoreSnapshot {
        let layout = try StoreLayout.decode(file, context: context)
        let keys: StoreKeys
        let methods: [MethodEnvelope.Public]
        if let previous, previous.layout.bootstrap == layout.bootstrap,
           previous.sealedPackage.elementsEqual(file[layout.sealedPackage]) {
            keys = previous.keys
            methods = previous.methods
        } else {
            (keys, methods) = try openPackage(file[layout.sealedPackage], layout: layout, context: context, domain: domain, root: root, key: key)
        }
        // The keys are provisional until the manifest authenticates.
        let manifestAAD = layout.bootstrap.suite.manifestAAD(domain: domain, bootstrap: layout.bootstrap.bytes,
                                             sealedPackage: file[layout.sealedPackage])
        let manifestPlain = file.withUnsafeBytes { f in
            XChaCha20Poly1305.open(key: keys.manifestKey, sealed: UnsafeRawBufferPointer(rebasing: f[layout.sealedManifest]), aad: manifestAAD)
        }
        guard let manifestPlain else {
            throw KeybayError(.integrity, "\(context): manifest failed authentication (the file was modified or belongs to another store)")
        }
        let entries: [ManifestEntry]
        if let written {
            guard sameBytes(manifestPlain, written.manifest) else {
                throw KeybayError(.integrity, "\(context): the manifest does not read back as written")
            }
            entries = written.entries
        } else {
            entries = try Manifest.decode(manifestPlain, context: context)
        }

        // Frame offsets are derived by checked prefix sums that must cover the frame region exactly.
        var starts: [Int] = []
        starts.reserveCapacity(entries.count)
        var offset = layout.frames.lowerBound
        for (i, e) in entries.enumerated() {
            guard e.frameLength <= layout.frames.upperBound - offset else {
                throw KeybayError(.integrity, "\(context): record frames overrun the frame region")
            }
            starts.append(offset)
            if checkFrameDigests, !Sodium.constantTimeEqual(SHA256.hash(file[offset..<(offset + e.frameLength)]), e.digest) {
                throw KeybayError(.integrity, "\(context): record frame \(i) does not match its manifest digest")
            }
            offset += e.frameLength
        }
        guard offset == layout.frames.upperBound else {
            throw KeybayError(.integrity, "\(context): \(layout.frames.upperBound - offset) bytes in the frame region belong to no record")
        }
        return StoreSnapshot(file: file, layout: layout, keys: keys, methods: methods, entries: entries, frameStarts: starts)
    }

    /// Opens the sealed package with the root, then gets Kstore as `key` says.
    private static func openPackage(_ sealed: ArraySlice<UInt8>, layout: StoreLayout, context: String, domain: [UInt8],
                                    root: any RootProvider, key: PackageKey) throws -> (StoreKeys, [MethodEnvelope.Public]) {
        let suite = layout.bootstrap.suite
        let aad = suite.packageAAD(domain: domain, bootstrapCore: layout.bootstrap.core)
        let plaintext = try root.open(sealed, aad: aad, providerState: layout.bootstrap.providerState, domain: domain)
        switch suite {
        case .platform:
            if case .method = key {
                throw KeybayError(.protectionMismatch, "\(context) is protected by the platform root only; it has no unlock methods")
            }
            return (StoreKeys(package: try PlatformPackage.decode(plaintext, context: context)), [])
        case .methods:
            let package = try MethodsPackage.decode(plaintext, context: context)
            let storeKey: SecureBytes
            switch key {
            case .platform:
                let listed = package.envelopes.map { "\(hexString($0.method.methodId)) (\($0.method.pluginId), \($0.method.label))" }
                throw KeybayError(.authenticationRequired, "\(context) is protected: unlock it with one of its methods: \(listed.joined(separator: "; "))")
            case .method(let unlock), .platformOrMethod(let unlock):
                storeKey = try unlock(package.envelopes, package.storeId, package.epoch)
            case .known(let k):
                storeKey = k
            }
            return (StoreKeys(suite: .methods, storeId: package.storeId, epoch: package.epoch, storeKey: storeKey),
                    package.envelopes.map(\.method))
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
                throw KeybayError(.integrity, "\(context): record frame \(indices[k]) does not match its manifest digest")
            }
            guard let value = opened[k] else {
                throw KeybayError(.integrity, "\(context): record frame \(indices[k]) failed authentication")
            }
            return value
        }
    }

    var keyNames: [String] { entries.map { String(decoding: $0.key, as: UTF8.self) } }
}
