import Glibc

/// The interprocess lock: flock(2) on a private lock file that is never deleted (unlinking a
/// held lock would let two processes each hold "the" lock on different inodes).
enum FileLock {
    enum Mode { case shared, exclusive }

    /// Runs `body` while holding the lock; closing the descriptor releases it.
    static func withLock<R>(in directory: PrivateDirectory, name: String, mode: Mode, _ body: () throws -> R) throws -> R {
        let f = openat(directory.fd, name, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0o600)
        if f < 0 {
            if errno == ELOOP { throw KeybayError(.insecurePermissions, "\(directory.pathOf(name)) is a symbolic link; refusing to use it") }
            throw PrivateDirectory.posixError("cannot open lock file", directory.pathOf(name))
        }
        defer { close(f) }
        try PrivateDirectory.checkPrivate(fd: f, path: directory.pathOf(name), directory: false)
        while flock(f, mode == .shared ? LOCK_SH : LOCK_EX) != 0 {
            if errno == EINTR { continue }
            throw PrivateDirectory.posixError("cannot lock", directory.pathOf(name))
        }
        return try body()
    }
}
