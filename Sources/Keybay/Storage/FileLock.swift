// SPDX-License-Identifier: Apache-2.0
import Glibc

/// The interprocess lock: flock(2) on a private lock file that is never deleted (unlinking a
/// held lock would let two processes each hold "the" lock on different inodes).
enum FileLock {
    enum Mode { case shared, exclusive }

    /// Runs `body` while holding the lock; closing the descriptor releases it. Readers (`shared`)
    /// open the lock file read-only, so they work where nothing can be written; on a read-only
    /// file system that has no lock file they read unlocked: no process can write there either.
    static func withLock<R>(in directory: PrivateDirectory, name: String, mode: Mode, _ body: () throws -> R) throws -> R {
        guard let f = try open(in: directory, name: name, mode: mode) else { return try body() }
        defer { close(f) }
        while flock(f, mode == .shared ? LOCK_SH : LOCK_EX) != 0 {
            if errno == EINTR { continue }
            throw PrivateDirectory.posixError("cannot lock", directory.pathOf(name))
        }
        return try body()
    }

    /// The checked lock file's descriptor; nil for a reader on a read-only file system without one.
    private static func open(in directory: PrivateDirectory, name: String, mode: Mode) throws -> Int32? {
        let path = directory.pathOf(name)
        func opened(_ f: Int32) throws -> Int32 {
            do { try PrivateDirectory.checkPrivate(fd: f, path: path, directory: false) } catch { close(f); throw error }
            return f
        }
        func failure() -> KeybayError {
            errno == ELOOP ? KeybayError(.insecurePermissions, "\(path) is a symbolic link; refusing to use it").with(path: path, reason: "symbolic-link")
                           : PrivateDirectory.posixError("cannot open lock file", path)
        }
        if mode == .shared {
            let f = openat(directory.fd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)
            if f >= 0 { return try opened(f) }
            guard errno == ENOENT else { throw failure() }
        }
        let created = directory.createFile(name, flags: O_RDWR)
        if created >= 0 { return try opened(created) }
        if errno == EROFS && mode == .shared { return nil }
        guard errno == EEXIST else { throw failure() }
        let existing = openat(directory.fd, name, O_RDWR | O_NOFOLLOW | O_CLOEXEC)
        guard existing >= 0 else { throw failure() }
        return try opened(existing)
    }
}
