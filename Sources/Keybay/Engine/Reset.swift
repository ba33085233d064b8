// SPDX-License-Identifier: Apache-2.0
extension StoreEngine {
    /// Removes the store, its staging file and the root; keeps the lock file. Idempotent, needs
    /// no credential. Both sides are checked before anything is removed (the data directory when
    /// it is opened, the root's location by asking whether the root exists), so a refusal on one
    /// side never leaves the other half-deleted.
    ///
    /// The root goes first: removing it is what may fail for reasons no check foresees (a
    /// locked keyring whose item cannot be deleted), and then nothing is removed; a failure
    /// after it leaves a store without its root, which `reset` clears when run again.
    ///
    /// Roots an interrupted `root move` left go too. The root is removed under the store's lock
    /// even when there is no store directory yet: a store being created meanwhile makes its root
    /// under that lock, and removing its half-made root from outside made the creation fail.
    func reset() throws {
        var file = try storeFile(create: false)
        let rootExists = try root.exists()
        if file == nil {
            guard rootExists else { return }
            file = try StoreFile.open(settings.location, create: true)
        }
        guard let file else { return }
        try file.repairLockMode()
        try file.withLock(.exclusive) {
            try file.clearStagingDirectory()
            let leftovers = try leftoverRoots(file)
            try root.reset()
            for other in leftovers { try other.reset() }
            try file.removeStore()
            try file.removeMoveRecord()
        }
    }
}
