// SPDX-License-Identifier: Apache-2.0
/// The backup markers of a store's two directories (docs/format.md §2.1), as read back.
struct BackupMarkers: Sendable, Equatable {
    /// The store directory's.
    let store: [BackupMarker]
    /// The root's state directory's (none when the root keeps no directory, as on a keyring).
    let root: [BackupMarker]
}

extension StoreEngine {
    /// The root's state directory, when it exists.
    private func rootDirectory() throws -> PrivateDirectory? {
        try BackupExclusion.rootDirectory(stateHome: settings.stateHome, applicationID: settings.applicationID)
    }

    /// The markers in place, read from the file system; never changes anything.
    func backupMarkers() throws -> BackupMarkers {
        BackupMarkers(store: try storeFile(create: false)?.backupMarkers() ?? [],
                      root: try rootDirectory().map(BackupExclusion.markers) ?? [])
    }

    /// Sets or removes the markers of the root's state directory, when the root has one.
    func setRootDirectoryBackupExclusion(_ excluded: Bool) throws {
        guard let directory = try rootDirectory() else { return }
        if excluded { try BackupExclusion.exclude(directory) } else { try BackupExclusion.include(directory) }
    }

    /// `backup exclude|include`: sets or removes the markers of an existing store's directories;
    /// the markers in place afterwards.
    func setBackupExclusion(_ excluded: Bool) throws -> BackupMarkers {
        guard found != nil, let file = try storeFile(create: false) else { throw try missingStore() }
        try file.setBackupExclusion(excluded)
        try setRootDirectoryBackupExclusion(excluded)
        return try backupMarkers()
    }
}
