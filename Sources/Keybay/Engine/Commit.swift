// SPDX-License-Identifier: Apache-2.0
extension StoreEngine {
    /// Read-modify-write under the exclusive lock: re-read the live file, let `change` produce
    /// the new frames, write staging, fsync, rename, fsync the directory, verify.
    func commit(_ file: StoreFile, previous: Generation, change: (StoreSnapshot) throws -> [PendingFrame]?) throws -> Landed {
        try file.withLock(.exclusive) {
            guard let current = try current(file, previous: previous) else { throw try missingStore() }
            guard let frames = try change(current.snapshot) else { return Landed(generation: current, unconfirmed: nil) }
            let snapshot = current.snapshot
            let encoded = try StoreEncoder.encodeStore(bootstrap: snapshot.layout.bootstrap, sealedPackage: snapshot.sealedPackage,
                                                       frames: frames, keys: snapshot.keys, domain: keyring.domain)
            let afterRename = try file.replace(with: encoded.file)
            let keys = Keyring.Opened(keys: snapshot.keys, methods: snapshot.methods)
            return try land(encoded, in: file, afterRename: afterRename, what: "the write to \(storePath)", known: keys) { _ in keys }
        }
    }

    /// Adding, replacing or removing methods: the keyring's next generation (a fresh Kstore, the
    /// next epoch, every surviving method re-sealed from its public key alone), every record
    /// re-encrypted, all in one atomic replace. The new list is made under the lock from the live
    /// methods, and only while they are still those of `expected` (what the caller decided on,
    /// possibly before a long ceremony): a list computed earlier could bring back a method
    /// another process removed meanwhile.
    func rotate(_ file: StoreFile, previous: Generation, expecting expected: StoreSnapshot,
                change: ([MethodEnvelope.Public]) -> [MethodEnvelope.Public]) throws -> Landed {
        try file.withLock(.exclusive) {
            guard let current = try current(file, previous: previous)?.snapshot else { throw try missingStore() }
            guard current.sealedPackage.elementsEqual(expected.sealedPackage) else {
                throw KeybayError(.stateConflict, "the unlock methods of \(storePath) changed meanwhile (another session or process); try again")
            }
            let sealed = try keyring.next(after: current.keys, providerState: current.layout.bootstrap.providerState,
                                          methods: change(current.methods))
            return try writeRotation(sealed, try keyring.reencrypt(current, into: sealed), in: file)
        }
    }

    /// Every rotation (a new key package: methods added, replaced or removed, another root) ends
    /// here, under the exclusive lock: the store is made durable and verified first, then the
    /// root's rollback floor rises to the new epoch. A crash between the two leaves a store newer
    /// than the floor, which opens; the floor never gets ahead of the store on disk.
    /// `keyring` is the store's own, or for a move the new root's. A rotation that took effect
    /// but could not be confirmed durable leaves the floor where it is: the old generation may
    /// still come back after a crash, and must then open.
    func writeRotation(_ sealed: Keyring.Sealed, _ encoded: EncodedStore, in file: StoreFile, keyring: Keyring? = nil,
                       what: String? = nil) throws -> Landed {
        let keyring = keyring ?? self.keyring
        let afterRename = try file.replace(with: encoded.file)
        let landed = try land(encoded, in: file, afterRename: afterRename, what: what ?? "the change of the unlock methods of \(storePath)",
                              domain: keyring.domain, known: Keyring.Opened(keys: sealed.keys, methods: sealed.methods)) {
            try keyring.confirm(sealed, in: encoded.file, layout: $0)
        }
        guard landed.unconfirmed == nil else { return landed }
        do {
            try keyring.raiseFloor(to: sealed)
        } catch let e as KeybayError {
            // The new generation is durable and verified: the change happened. Failing now would
            // report it as not done (and lose a secret shown once, or skip removing a moved
            // store's old root). The floor lags until the next rotation raises it past this epoch.
            interaction.message("warning: " + e.message, level: .warning)
        }
        return landed
    }
}
