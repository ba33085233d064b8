// SPDX-License-Identifier: Apache-2.0
/// One application's store directory, and the only code that touches it: the interprocess
/// lock, reading the live file, the durable replace and create-only write, reading back what
/// was written, and removing the store. It knows bytes and file names, nothing of keys.
struct StoreFile: Sendable {
    static let liveName = "keybay.v2.store"
    static let stagingName = "keybay.v2.stage"
    static let lockName = "keybay.v2.lock"
    /// Names the roots of a `root move` while it runs (docs/format.md, "The move record").
    static let moveName = "keybay.v2.move"

    private let directory: PrivateDirectory
    /// The live file's path, for messages.
    let path: String

    /// The backup markers the store directory carries, read back (BackupExclusion).
    func backupMarkers() throws -> [BackupMarker] { try BackupExclusion.markers(directory) }

    /// Sets (`excluded`) or removes the store directory's backup markers; the markers in place.
    @discardableResult
    func setBackupExclusion(_ excluded: Bool) throws -> [BackupMarker] {
        if excluded { return try BackupExclusion.exclude(directory) }
        try BackupExclusion.include(directory)
        return []
    }

    /// Opens `<dataHome>/keybay/<app>/`, creating it when `create` is set; nil if it is missing.
    static func open(_ location: StoreLocation, create: Bool) throws -> StoreFile? {
        guard let directory = try PrivateDirectory.open(base: location.dataHome, components: ["keybay", location.applicationID],
                                                        create: create) else { return nil }
        return StoreFile(directory: directory, path: location.storePath)
    }

    /// Runs `body` under the interprocess lock (the lock file is never deleted).
    func withLock<R>(_ mode: FileLock.Mode, _ body: () throws -> R) throws -> R {
        try FileLock.withLock(in: directory, name: Self.lockName, mode: mode, body)
    }

    /// The whole live file and its identity, or nil if there is none.
    func read() throws -> (bytes: [UInt8], identity: FileIdentity)? {
        try directory.read(Self.liveName, maxBytes: StoreLayout.maxTotalBytes)
    }

    /// The live file's first `count` bytes (a header), or nil if there is none.
    func readPrefix(_ count: Int) throws -> [UInt8]? {
        try directory.read(Self.liveName, maxBytes: StoreLayout.maxTotalBytes, prefix: count)?.bytes
    }

    /// The identity of the live file now (nil if it is gone), to notice a replacement with one stat.
    func identity() -> FileIdentity? {
        directory.identity(of: Self.liveName)
    }

    func hasLiveFile() throws -> Bool {
        try directory.contains(Self.liveName)
    }

    /// Durable replace of the live file (staging file, fsync, rename, directory fsync). Throws
    /// when nothing changed; returns why the new file, once in place, is not known durable.
    func replace(with bytes: [UInt8]) throws -> KeybayError? {
        try directory.replace(Self.liveName, stagingName: Self.stagingName, with: bytes)
    }

    /// Create-only write of the live file: it never overwrites one. Throws and returns as `replace`.
    func create(with bytes: [UInt8]) throws -> KeybayError? {
        try directory.createExclusive(Self.liveName, stagingName: Self.stagingName, with: bytes)
    }

    /// The identity of the live file if it holds exactly `expected`, else nil.
    func readBack(equals expected: [UInt8]) throws -> FileIdentity? {
        try directory.readBack(Self.liveName, equals: expected)
    }

    /// Removes a staging file left by an interrupted write; call only once the live file has
    /// authenticated, and only holding the exclusive lock.
    func removeLeftoverStaging() throws {
        guard try directory.contains(Self.stagingName) else { return }
        try directory.removeIfPresent(Self.stagingName)
        try directory.sync()
    }

    /// What could stop `removeStore` halfway (a directory that is not empty at the staging name),
    /// found before anything is removed; an empty one goes now.
    func clearStagingDirectory() throws {
        try directory.removeIfEmptyDirectory(Self.stagingName)
    }

    /// Removes the live and staging files (never the lock file: unlinking a held lock splits
    /// mutual exclusion). `clearStagingDirectory` has dealt with a directory at the staging name.
    func removeStore() throws {
        try directory.removeIfPresent(Self.liveName)
        try directory.removeIfPresent(Self.stagingName)
        try directory.sync()
    }

    /// Records, durably and under the exclusive lock, that the store is moving from root `from` to
    /// root `to`: two plugin ids, each followed by a newline.
    func recordMove(from: String, to: String) throws {
        if let unconfirmed = try directory.replace(Self.moveName, stagingName: Self.stagingName, with: Array("\(from)\n\(to)\n".utf8)) {
            throw unconfirmed
        }
    }

    /// The roots a move record names, or nil if there is none; anything but two valid plugin
    /// ids is `.malformed`.
    func readMoveRecord() throws -> (from: String, to: String)? {
        guard let bytes = try directory.read(Self.moveName, maxBytes: 512)?.bytes else { return nil }
        let lines = bytes.split(separator: 0x0a, omittingEmptySubsequences: false).map { String(decoding: $0, as: UTF8.self) }
        guard lines.count == 3, lines[2].isEmpty, MethodNames.isValidPluginID(lines[0]), MethodNames.isValidPluginID(lines[1]) else {
            throw KeybayError(.malformed, "\(directory.pathOf(Self.moveName)) is not a move record (two root plugin ids, one a line); remove it by hand once the roots it named are settled")
        }
        return (lines[0], lines[1])
    }

    func removeMoveRecord() throws {
        guard try directory.contains(Self.moveName) else { return }
        try directory.removeIfPresent(Self.moveName)
        try directory.sync()
    }

    /// The lock file is not secret: a wrong mode (an old umask's) is repaired, so that `reset`
    /// can always take the lock.
    func repairLockMode() throws {
        try directory.repairMode(of: Self.lockName, to: 0o600)
    }
}
