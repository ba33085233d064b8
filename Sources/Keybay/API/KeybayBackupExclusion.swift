// SPDX-License-Identifier: Apache-2.0
/// The backup markers in place on a store's directories, read back from the file system
/// (docs/format.md §2.1): each named as on disk, `.deja-dup-ignore` (the file),
/// `user.xdg.robots.backup` (the extended attribute, `false`) and `nodump` (the file attribute).
/// A marker the file system does not support is never listed.
public struct KeybayBackupExclusion: Sendable, Equatable {
    /// The markers of the store directory, `<dataHome>/keybay/<app>`.
    public let storeDirectory: [String]
    /// The markers of the root's state directory, `<stateHome>/keybay/<app>` (none when the root
    /// keeps no directory there, as on a keyring).
    public let rootDirectory: [String]

    init(_ markers: BackupMarkers) {
        storeDirectory = markers.store.map(\.rawValue)
        rootDirectory = markers.root.map(\.rawValue)
    }
}

extension KeybayStore {
    /// Marks an existing store's directory and its root's state directory as excluded from
    /// backups (`excluded`), or removes the markers (`false`: the store is kept in backups), then
    /// reads them back. Needs no credential and opens nothing.
    ///
    /// - Parameters:
    ///   - configuration: Which application's store, and where.
    ///   - excluded: Set the markers (`true`) or remove them.
    /// - Returns: The markers in place afterwards.
    /// - Throws: `.storeNotFound` (or `.stateConflict` for a root without a store) when there is
    ///   no store; `.insecurePermissions`, `.io`.
    public static func setBackupExclusion(_ configuration: KeybayConfiguration, excluded: Bool) throws -> KeybayBackupExclusion {
        KeybayBackupExclusion(try StoreEngine(configuration.settings).setBackupExclusion(excluded))
    }
}
