// SPDX-License-Identifier: Apache-2.0
/// What a root move did: the root the store is on now, and where the old one was left when it
/// could not be removed.
struct MovedRoot: Sendable {
    let root: any RootProvider
    let oldRootLeftAt: String?
}

extension StoreEngine {
    /// Moves the store to root `target` (`automaticRoot` allowed): the keyring's next generation
    /// sealed by the new root (a fresh Kstore, the next epoch, every method re-sealed from its
    /// public key, every record re-encrypted) in one atomic replace; the old root is removed only
    /// once the new store is durable and has read back and authenticated (and the new root's
    /// rollback floor has risen to the new epoch, as for any rotation). A kill at any moment
    /// leaves a store that opens with the old root or the new one. Before anything is made, the
    /// move is recorded beside the store (`StoreFile.recordMove`): a move cut short anywhere
    /// leaves a root the store does not use, which `status` then shows and `reset` removes with
    /// the store. Roots such a record names, and a root of the target kind the store does not
    /// refer to, are removed before the new one is made. A move that took effect but could not be
    /// confirmed durable keeps the old root (a crash may still bring back the store it opens) and
    /// says so.
    func moveRoot(_ file: StoreFile, previous: Generation, to target: String, options: [(String, String)] = [],
                  interaction: any KeybayInteraction) throws -> MovedRoot {
        try refuseRepeatedOptionNames(options) // before anything is made or recorded
        let targetID = try RootSelection.resolve(target, settings)
        guard targetID != root.id else {
            throw KeybayError(.invalidArgument, "the store at \(storePath) is already on the root \(root.id)")
                .with(path: storePath, pluginID: root.id, reason: "same-root")
        }
        let destination = try RootSelection.keyring(root: targetID, settings, interaction: interaction)
        let newRoot = destination.root
        return try file.withLock(.exclusive) { () throws -> MovedRoot in
            guard let current = try current(file, previous: previous)?.snapshot else { throw try missingStore() }
            try removeLeftoverRoots(file)
            if try newRoot.exists() { try newRoot.reset() }
            try file.recordMove(from: root.id, to: targetID)
            let state = try newRoot.create(options: options)
            let landed: Landed
            do {
                // The new root's directory (one a keyring root did not have) is marked as the
                // store's is: a backup never holds the new half while the store stays out.
                if try !file.backupMarkers().isEmpty { try setRootDirectoryBackupExclusion(true) }
                let sealed = try destination.next(after: current.keys, providerState: state, methods: current.methods)
                landed = try writeRotation(sealed, try destination.reencrypt(current, into: sealed), in: file, keyring: destination,
                                           what: "moving \(storePath) to the root \(targetID)")
            } catch {
                // Undo only the new root, and only while the live file does not refer to it.
                if let live = try? file.read(), let liveState = try? RootSelection.providerState(of: live.bytes, settings), liveState != state {
                    try? newRoot.reset()
                    try? file.removeMoveRecord()
                }
                throw error
            }
            if let unconfirmed = landed.unconfirmed {
                throw KeybayError(.io, unconfirmed.message + "; the old root \(root.id) at \(root.location) is kept until then (reset, or the next root move, removes it)",
                                  tookEffect: true).with(path: unconfirmed.path, pluginID: root.id, underlying: unconfirmed.underlying)
            }
            do {
                try root.reset()
            } catch {
                return MovedRoot(root: newRoot, oldRootLeftAt: root.location)
            }
            // With both roots settled, a record that stays names no root that exists.
            try? file.removeMoveRecord()
            return MovedRoot(root: newRoot, oldRootLeftAt: nil)
        }
    }

    /// The roots other than the store's own that an interrupted `root move` left (its record
    /// names them) and that exist.
    func leftoverRoots(_ file: StoreFile?) throws -> [any RootProvider] {
        guard let file, let move = try file.readMoveRecord() else { return [] }
        return try [move.from, move.to].filter { $0 != root.id }.compactMap { id in
            let other = try RootSelection.keyring(root: id, settings, interaction: interaction).root
            return try other.exists() ? other : nil
        }
    }

    /// Removes what `leftoverRoots` finds, then the record. Caller holds the exclusive lock.
    private func removeLeftoverRoots(_ file: StoreFile) throws {
        for other in try leftoverRoots(file) { try other.reset() }
        try file.removeMoveRecord()
    }
}
