// SPDX-License-Identifier: Apache-2.0
/// The key packages of one store: opening a generation's package with the root (and, for a
/// protected store, one method), and making the package of the next generation when methods are
/// added, replaced or removed. It does no file I/O: the root and the method ceremonies are the
/// only things it calls, so it is exercised from vectors and in-memory roots alone.
struct Keyring: Sendable {
    let root: any RootProvider
    let domain: [UInt8]
    /// Names the store in messages (its path).
    let context: String

    /// What a package yields: the generation's keys and the methods it lists.
    struct Opened: Sendable {
        let keys: StoreKeys
        let methods: [MethodEnvelope.Public]
    }

    /// A new generation's bootstrap and sealed package, and the keys its records use.
    struct Sealed {
        let bootstrap: Bootstrap
        let package: [UInt8]
        let keys: StoreKeys
        let methods: [MethodEnvelope.Public]
    }

    // MARK: Opening

    /// Opens the package of the file laid out as `layout` as `unlock` says. The keys are
    /// provisional until the manifest authenticates under them.
    func open(_ layout: StoreLayout, in file: [UInt8], unlock: Unlock) throws -> Opened {
        let (plaintext, floor) = try openWithRoot(layout.bootstrap, file[layout.sealedPackage])
        switch layout.bootstrap.suite {
        case .platform:
            let package = try PlatformPackage.decode(plaintext, context: context)
            try refuseRollback(epoch: package.epoch, floor: floor)
            if case .method = unlock {
                throw KeybayError(.protectionMismatch, "\(context) is protected by the platform root only; it has no unlock methods")
                    .with(path: context)
            }
            return Opened(keys: StoreKeys(package: package), methods: [])
        case .methods:
            let package = try MethodsPackage.decode(plaintext, context: context)
            try refuseRollback(epoch: package.epoch, floor: floor)
            let envelope: MethodEnvelope
            let ceremony: MethodCeremony
            switch unlock {
            case .platform:
                let listed = package.envelopes.map { "\(hexString($0.method.methodId)) (\($0.method.pluginId), \($0.method.label))" }
                throw KeybayError(.authenticationRequired, "\(context) is protected: unlock it with one of its methods: \(listed.joined(separator: "; "))")
                    .with(path: context)
            case .method(let id, let run):
                envelope = try Self.envelope(id, in: package, context: context)
                ceremony = run
            case .choosing(let choose, let run):
                envelope = try Self.envelope(try choose(package.envelopes.map(\.method)), in: package, context: context)
                ceremony = run
            }
            let storeKey: SecureBytes
            do {
                storeKey = try envelope.open(secret: try ceremony(envelope.method), storeId: package.storeId, epoch: package.epoch)
            } catch let e as KeybayError {
                throw e.with(methodID: hexString(envelope.method.methodId))
            }
            return Opened(keys: StoreKeys(suite: .methods, storeId: package.storeId, epoch: package.epoch, storeKey: storeKey),
                          methods: package.envelopes.map(\.method))
        }
    }

    /// The methods a protected store lists (the root opens the package; no method runs).
    func methods(_ bootstrap: Bootstrap, sealedPackage: ArraySlice<UInt8>) throws -> [MethodEnvelope.Public] {
        guard bootstrap.suite == .methods else { return [] }
        let (plaintext, floor) = try openWithRoot(bootstrap, sealedPackage)
        let package = try MethodsPackage.decode(plaintext, context: context)
        try refuseRollback(epoch: package.epoch, floor: floor)
        return package.envelopes.map(\.method)
    }

    /// Checks a package this process just sealed and wrote: the root must open it to exactly the
    /// generation it was made from.
    func confirm(_ sealed: Sealed, in file: [UInt8], layout: StoreLayout) throws -> Opened {
        let plaintext = try openWithRoot(layout.bootstrap, file[layout.sealedPackage]).package
        let same: Bool
        switch sealed.bootstrap.suite {
        case .platform:
            let package = try PlatformPackage.decode(plaintext, context: context)
            same = package.storeId == sealed.keys.storeId && package.epoch == sealed.keys.epoch && package.storeKey.equals(sealed.keys.storeKey)
        case .methods:
            let package = try MethodsPackage.decode(plaintext, context: context)
            same = package.storeId == sealed.keys.storeId && package.epoch == sealed.keys.epoch && package.envelopes.map(\.method) == sealed.methods
        }
        guard same, layout.bootstrap == sealed.bootstrap else {
            throw KeybayError(.integrity, "\(context): the key package does not read back as sealed")
        }
        return Opened(keys: sealed.keys, methods: sealed.methods)
    }

    /// Checks that the root opens the store's key package (after the root was sealed again).
    func checkRootOpens(_ bootstrap: Bootstrap, sealedPackage: ArraySlice<UInt8>) throws {
        _ = try openWithRoot(bootstrap, sealedPackage)
    }

    /// The package's plaintext and the root's rollback floor.
    private func openWithRoot(_ bootstrap: Bootstrap, _ sealed: ArraySlice<UInt8>) throws -> (package: SecureBytes, floor: UInt64) {
        try root.open(sealed, aad: bootstrap.suite.packageAAD(domain: domain, bootstrapCore: bootstrap.core),
                      providerState: bootstrap.providerState)
    }

    /// A package older than the root's floor is an older copy of the store put back: it may list
    /// a removed method or be platform-only again, so it is refused before any method runs.
    private func refuseRollback(epoch: UInt64, floor: UInt64) throws {
        guard epoch < floor else { return }
        throw KeybayError(.rolledBack, "\(context) is older than its platform root remembers (its key package is epoch \(epoch); \(root.id) at \(root.location) recorded epoch \(floor) at the last change of the unlock methods): an older copy of the store was put back. Put back the newest copy of the store, or restore this copy's root together with it where the root keeps its floor in something that can be restored (a file, a keyring item; a TPM's counter cannot); otherwise start over with reset")
            .with(path: context, pluginID: root.id)
    }

    /// Records `sealed`'s epoch as the root's rollback floor. Called once a rotation's store is
    /// durable and verified (a crash before it leaves a store newer than the floor, which opens);
    /// never for record writes.
    func raiseFloor(to sealed: Sealed) throws {
        do {
            try root.raiseFloor(to: sealed.keys.epoch, providerState: sealed.bootstrap.providerState)
        } catch let e as KeybayError {
            throw KeybayError(e.code, "the change to \(context) is saved, but the platform root did not record it as the rollback floor (\(e.message)); until the next change of its methods an older copy of the store would still open")
        }
    }

    private static func envelope(_ id: [UInt8], in package: MethodsPackage, context: String) throws -> MethodEnvelope {
        guard let envelope = package.envelopes.first(where: { $0.method.methodId == id }) else {
            throw KeybayError(.methodNotFound, "no method \(hexString(id)) in \(context); it has \(package.envelopes.map { hexString($0.method.methodId) }.joined(separator: ", "))")
                .with(path: context, methodID: hexString(id))
        }
        return envelope
    }

    // MARK: Making generations

    /// The first generation of a new store: epoch 1, a fresh store id and Kstore; platform-only,
    /// or protected from the start by `first`'s method, made for `first`'s store id.
    func first(providerState: [UInt8], first: FirstMethod? = nil) throws -> Sealed {
        let storeId = first?.storeId ?? Sodium.randomBytes(Suite1.storeIdBytes)
        return try seal(storeId: storeId, epoch: 1, methods: first.map { [$0.method] } ?? [], providerState: providerState)
    }

    /// The generation after `current` with `methods` enrolled: the same store id, the next epoch
    /// and a fresh Kstore, every method sealed from its public key alone (no credential is asked
    /// for). With no methods the store is platform-only again.
    func next(after current: StoreKeys, providerState: [UInt8], methods: [MethodEnvelope.Public]) throws -> Sealed {
        precondition(methods.count <= MethodsPackage.maxMethods)
        guard current.epoch < Suite1.maxEpoch else {
            throw KeybayError(.storeFull, "\(context) has reached the last epoch; reset it to continue")
        }
        return try seal(storeId: current.storeId, epoch: current.epoch + 1, methods: methods, providerState: providerState)
    }

    /// Every record of `snapshot` re-encrypted under `sealed`'s keys, and the whole file encoded.
    func reencrypt(_ snapshot: StoreSnapshot, into sealed: Sealed) throws -> EncodedStore {
        var frames: [PendingFrame] = []
        frames.reserveCapacity(snapshot.entries.count)
        for i in snapshot.entries.indices {
            var value = try snapshot.value(at: i, context: context)
            defer { Sodium.wipe(&value) }
            frames.append(value.withUnsafeBytes { StoreEncoder.sealFrame(key: snapshot.entries[i].key, value: $0, keys: sealed.keys) })
        }
        return try StoreEncoder.encodeStore(bootstrap: sealed.bootstrap, sealedPackage: sealed.package, frames: frames,
                                            keys: sealed.keys, domain: domain)
    }

    private func seal(storeId: [UInt8], epoch: UInt64, methods: [MethodEnvelope.Public], providerState: [UInt8]) throws -> Sealed {
        let storeKey = SecureBytes(randomCount: Suite1.storeKeyBytes)
        let suite: StoreSuite = methods.isEmpty ? .platform : .methods
        let plaintext = try suite == .platform
            ? PlatformPackage(storeId: storeId, epoch: epoch, storeKey: storeKey).encode()
            : MethodsPackage(storeId: storeId, epoch: epoch, envelopes: methods.map {
                try MethodEnvelope.seal(storeKey: storeKey, to: $0, storeId: storeId, epoch: epoch)
            }).encode()
        // Grants can make a package longer than a reader takes (docs/format.md §5): refused before
        // the root seals anything.
        guard plaintext.count + XChaCha20Poly1305.overhead <= suite.maxSealedPackageBytes else {
            throw KeybayError(.storeFull, "\(context): the methods would make a key package of \(plaintext.count + XChaCha20Poly1305.overhead) bytes, more than the \(suite.maxSealedPackageBytes) a store holds; remove a method first")
                .with(reason: "package-too-large")
        }
        // The package length goes into the bootstrap, which the package's own AAD binds: a root
        // must seal to exactly plaintext + nonce + tag.
        let bootstrap = Bootstrap(suite: suite, providerState: providerState,
                                  sealedPackageLength: plaintext.count + XChaCha20Poly1305.overhead)
        let sealed = try root.seal(plaintext, aad: suite.packageAAD(domain: domain, bootstrapCore: bootstrap.core), providerState: providerState)
        guard sealed.count == bootstrap.sealedPackageLength else {
            throw KeybayError(.pluginFailed, "\(root.id) sealed a \(plaintext.count)-byte key package into \(sealed.count) bytes, expected \(bootstrap.sealedPackageLength)")
        }
        return Sealed(bootstrap: bootstrap, package: sealed,
                      keys: StoreKeys(suite: suite, storeId: storeId, epoch: epoch, storeKey: storeKey), methods: methods)
    }
}
