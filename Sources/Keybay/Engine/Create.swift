// SPDX-License-Identifier: Apache-2.0
extension StoreEngine {
    /// `init`: creates a store only when there is nothing at all, platform-only or protected from
    /// its first write by `first` (whose ceremony the caller ran before anything was created).
    /// A store whose link happened but could not be confirmed durable comes back with why.
    func initialize(first: FirstMethod? = nil) throws -> (StoreFile, Landed) {
        let file = try storeFileCreating()
        let landed = try file.withLock(.exclusive) { () throws -> Landed in
            if try file.hasLiveFile() {
                throw KeybayError(.alreadyInitialized, "a store already exists at \(storePath); refusing to initialise over it").with(path: storePath)
            }
            return try createStore(in: file, first: first)
        }
        return (file, landed)
    }

    /// Refuses, before a first method's ceremony, a home where anything exists: nobody enrolls
    /// a secret for a store that cannot be made. `initialize` checks again under the lock.
    func refuseExistingState() throws {
        let rootExists = try root.exists()
        switch (found != nil, rootExists) {
        case (false, false):
            return
        case (true, true):
            throw KeybayError(.alreadyInitialized, "a store already exists at \(storePath); refusing to initialise over it")
                .with(path: storePath)
        default:
            throw KeybayError(.stateConflict, "\(storePath) is in a partial state; refusing to create a store over it (run reset to start over)")
                .with(path: storePath)
        }
    }

    /// The store file for a write that may create the store. Its directories and lock file are
    /// made only after `checkCreatable`: a root that does not take the options, or that answers
    /// `exists` with an error (no Secret Service), leaves nothing on disk. What only creating
    /// finds out (a refused option value, a TPM that `exists` does not reach) leaves the empty
    /// directory and lock file.
    func storeFileCreating() throws -> StoreFile {
        if let file = try storeFile(create: false) { return file }
        try root.checkCreatable(options: settings.rootOptions)
        return try storeFile(create: true)!
    }

    /// Caller holds the exclusive lock and has seen no live file. A failure before the store's
    /// link leaves nothing (the root made here is removed again); from the link on, the store
    /// exists, and a failure is returned as unconfirmed.
    func createStore(in file: StoreFile, first: FirstMethod? = nil) throws -> Landed {
        if try root.exists() { throw try missingStore() }
        // Both directories are marked before the store exists, so a backup never holds a new
        // store; kept in backups, markers left from an earlier store (reset keeps the
        // directories) are removed.
        try file.setBackupExclusion(settings.excludeFromBackups)
        let providerState: [UInt8]
        do {
            providerState = try root.create(options: settings.rootOptions)
            try setRootDirectoryBackupExclusion(settings.excludeFromBackups)
        } catch {
            // A root that failed halfway (its file linked, its directory's fsync failed) is
            // ours: there was none under the lock. Nothing refers to it.
            if (try? root.exists()) == true { try? root.reset() }
            throw error
        }
        let sealed: Keyring.Sealed, encoded: EncodedStore, afterLink: KeybayError?
        do {
            sealed = try keyring.first(providerState: providerState, first: first)
            encoded = try StoreEncoder.encodeStore(bootstrap: sealed.bootstrap, sealedPackage: sealed.package, frames: [],
                                                   keys: sealed.keys, domain: keyring.domain)
            afterLink = try file.create(with: encoded.file)
        } catch {
            // Undo only our own root, and only while no store refers to it.
            try? root.reset()
            throw error
        }
        return try land(encoded, in: file, afterRename: afterLink, what: "creating the store \(storePath)",
                        known: Keyring.Opened(keys: sealed.keys, methods: sealed.methods)) {
            try keyring.confirm(sealed, in: encoded.file, layout: $0)
        }
    }
}
