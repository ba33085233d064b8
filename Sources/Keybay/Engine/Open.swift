// SPDX-License-Identifier: Apache-2.0
extension StoreEngine {
    /// Opens the existing store as `unlock` says, or creates one when there is nothing at all and
    /// `create` is set (never for a named method: that store must exist). A method's ceremony
    /// (a prompt, a touch) runs on the engine's read, before the lock is taken, so it never
    /// blocks other writers; the locked re-check then reuses its keys while the file keeps its
    /// identity. An open that may not create is a reader: it takes the shared lock (it works on a
    /// read-only file system) and leaves a leftover staging file to the next writer.
    func open(create: Bool, unlock: Unlock) throws -> (StoreFile, Generation) {
        let create = create && !unlock.needsExistingStore
        guard let file = try create ? storeFileCreating() : storeFile(create: false) else { throw try missingStore(unlock) }
        var unlocked: Generation?
        if unlock.mayRunCeremony, let read = found {
            do {
                unlocked = try authenticate(read, unlock: unlock)
            } catch let e as KeybayError where file.identity() != read.identity || e.code == .platformKeyInvalidated {
                // The file was replaced or removed after it was read (a racing write or reset),
                // or its root is gone (a racing reset removes the root first), so the failure
                // may be that change's, not the store's: decide under the lock, as an open
                // without a ceremony does (a protected store then asks to be opened again;
                // nothing at all is created when `create` allows it).
            }
        }
        let generation = try file.withLock(create ? .exclusive : .shared) { () throws -> Generation in
            // The generation the ceremony unlocked is taken as it is if the file did not change;
            // without a ceremony, the engine's read is, on the same condition.
            let found: Generation?
            do {
                if let unlocked {
                    found = try current(file, previous: unlocked)
                } else {
                    found = try loadLive(file)
                }
            } catch let e as KeybayError where e.code == .authenticationRequired && unlock.mayRunCeremony {
                // The method's ceremony ran on a file that another process replaced meanwhile
                // (a root move, a change of methods): open it again, with the same method.
                throw KeybayError(.keyChanged, "another process changed \(storePath) while it was being unlocked (a new store key); open it again")
            }
            if let live = found {
                // A leftover staging file is only removed once the live file has authenticated.
                if create { try file.removeLeftoverStaging() }
                return live
            }
            guard create else { throw try missingStore(unlock) }
            return try createStore(in: file).confirmed()
        }
        return (file, generation)
    }

    /// Under the lock, with no generation unlocked yet: the live file, authenticated with the
    /// root alone. The engine's read serves when the file on disk is still the one it read.
    private func loadLive(_ file: StoreFile) throws -> Generation? {
        if let found, file.identity() == found.identity { return try authenticate(found) }
        return try load(file, reusing: nil)
    }
}
