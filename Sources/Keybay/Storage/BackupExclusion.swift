// SPDX-License-Identifier: Apache-2.0
import CKeybayFileAttributes
import Glibc

/// A convention by which backup tools skip a directory. Keybay marks the store directory and
/// the root's state directory with every one the file system takes, because a backup that holds
/// both halves is a full copy of every secret, and one that holds only one half restores a store
/// that cannot open (docs/security.md). Not `CACHEDIR.TAG`: it tells cleaners that the contents
/// can be regenerated, and a store cannot be.
enum BackupMarker: String, Sendable, CaseIterable {
    /// An empty file `.deja-dup-ignore` in the directory: Déjà Dup skips such directories by
    /// default (it passes `--exclude-if-present` to duplicity and restic); `tar --exclude-tag`.
    case dejaDupIgnore = ".deja-dup-ignore"
    /// The extended attribute `user.xdg.robots.backup` = `false` (borg 2 reads it), where the
    /// file system takes user extended attributes.
    case robotsBackupAttribute = "user.xdg.robots.backup"
    /// The `nodump` file attribute (`chattr +d`; borg's `--exclude-nodump`, dump), where the file
    /// system has it.
    case nodump = "nodump"
}

/// Sets, reads back and removes the backup markers of a Keybay directory, through its
/// descriptor (never a path that could be swapped).
enum BackupExclusion {
    static let attributeValue: [UInt8] = Array("false".utf8)

    /// The root's state directory, `<stateHome>/keybay/<applicationID>`, when it exists (a root
    /// on a keyring has none).
    static func rootDirectory(stateHome: String, applicationID: String) throws -> PrivateDirectory? {
        try PrivateDirectory.open(base: stateHome, components: ["keybay", applicationID], create: false)
    }

    /// Sets every marker the directory's file system takes, then reads them back: the markers in
    /// place. A marker the file system does not support is left out; any other failure throws.
    @discardableResult
    static func exclude(_ directory: PrivateDirectory) throws -> [BackupMarker] {
        try createIgnoreFile(directory)
        try setAttribute(directory)
        try setNodump(directory, true)
        return try markers(directory)
    }

    /// Removes every marker; afterwards none is in place (read back, or this throws).
    static func include(_ directory: PrivateDirectory) throws {
        try directory.removeIfPresent(BackupMarker.dejaDupIgnore.rawValue)
        if keybay_remove_attribute(directory.fd, BackupMarker.robotsBackupAttribute.rawValue) != 0 && errno != ENODATA && !unsupported(errno) {
            throw KeybayError.posix("cannot remove the extended attribute \(BackupMarker.robotsBackupAttribute.rawValue) of", directory.path)
        }
        try setNodump(directory, false)
        let left = try markers(directory)
        guard left.isEmpty else {
            throw KeybayError(.io, "\(directory.path) still carries the backup markers \(left.map(\.rawValue).joined(separator: ", ")) after they were removed").with(path: directory.path)
        }
    }

    /// The markers in place, read from the file system: the ignore file (a regular file of this
    /// user), the attribute holding exactly `false`, the nodump flag set.
    static func markers(_ directory: PrivateDirectory) throws -> [BackupMarker] {
        var found: [BackupMarker] = []
        var st = stat()
        if fstatat(directory.fd, BackupMarker.dejaDupIgnore.rawValue, &st, AT_SYMLINK_NOFOLLOW) == 0 {
            if st.st_mode & S_IFMT == S_IFREG && st.st_uid == geteuid() { found.append(.dejaDupIgnore) }
        } else if errno != ENOENT {
            throw KeybayError.posix("cannot inspect", directory.pathOf(BackupMarker.dejaDupIgnore.rawValue))
        }
        var value = [UInt8](repeating: 0, count: 16)
        let length = keybay_get_attribute(directory.fd, BackupMarker.robotsBackupAttribute.rawValue, &value, value.count)
        if length >= 0 {
            if Array(value[0..<length]) == attributeValue { found.append(.robotsBackupAttribute) }
        } else if errno != ENODATA && errno != ERANGE && !unsupported(errno) {
            throw KeybayError.posix("cannot read the extended attribute \(BackupMarker.robotsBackupAttribute.rawValue) of", directory.path)
        }
        if try nodump(directory) == true { found.append(.nodump) }
        return found
    }

    // MARK: -

    private static func unsupported(_ code: Int32) -> Bool {
        code == ENOTSUP || code == EOPNOTSUPP || code == ENOTTY || code == ENOSYS || code == EINVAL
    }

    /// Empty, 0600, created without following links; one that is there already is kept (it is
    /// checked when read back).
    private static func createIgnoreFile(_ directory: PrivateDirectory) throws {
        let name = BackupMarker.dejaDupIgnore.rawValue
        let fd = openat(directory.fd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
        if fd < 0 {
            guard errno == EEXIST else { throw KeybayError.posix("cannot create", directory.pathOf(name)) }
            return
        }
        let synced = fsync(fd) == 0
        close(fd)
        guard synced else { throw KeybayError.posix("cannot fsync", directory.pathOf(name)) }
        try directory.sync()
    }

    private static func setAttribute(_ directory: PrivateDirectory) throws {
        let name = BackupMarker.robotsBackupAttribute.rawValue
        if keybay_set_attribute(directory.fd, name, attributeValue, attributeValue.count) != 0 && !unsupported(errno) {
            throw KeybayError.posix("cannot set the extended attribute \(name) of", directory.path)
        }
    }

    /// Whether the nodump flag is set, or nil where the file system has no such flags.
    private static func nodump(_ directory: PrivateDirectory) throws -> Bool? {
        var on: Int32 = 0
        if keybay_get_nodump(directory.fd, &on) != 0 {
            if unsupported(errno) { return nil }
            throw KeybayError.posix("cannot read the file attributes of", directory.path)
        }
        return on != 0
    }

    private static func setNodump(_ directory: PrivateDirectory, _ on: Bool) throws {
        guard let current = try nodump(directory), current != on else { return }
        if keybay_set_nodump(directory.fd, on ? 1 : 0) != 0 && !unsupported(errno) {
            throw KeybayError.posix("cannot \(on ? "set" : "clear") the nodump attribute of", directory.path)
        }
    }
}
