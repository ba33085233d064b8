// SPDX-License-Identifier: Apache-2.0
import Glibc

/// A directory Keybay owns: opened component by component without following links, owned by
/// the effective user, no group or other permission bits. Every file inside is reached through
/// the directory's descriptor, so a path swapped underneath cannot redirect a read or a write.
/// Looser or foreign state is refused with the path and the reason, never repaired.
final class PrivateDirectory: @unchecked Sendable {
    let fd: Int32
    let path: String

    private init(fd: Int32, path: String) {
        self.fd = fd
        self.path = path
    }

    deinit { close(fd) }

    /// Opens `base/components...`. `base` is the user's XDG directory and may itself be a link;
    /// the components below it are Keybay's and must be real private directories.
    /// Returns nil when something is missing and `create` is false.
    static func open(base: String, components: [String], create: Bool) throws -> PrivateDirectory? {
        if create { try makeBaseDirectory(base) }
        var current = Glibc.open(base, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if current < 0 {
            if errno == ENOENT && !create { return nil }
            throw posixError("cannot open directory", base)
        }
        var path = base
        for component in components {
            path += "/" + component
            var next = openat(current, component, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
            if next < 0 && errno == ENOENT && create {
                if mkdirat(current, component, 0o700) == 0 {
                    // Exactly 0700 whatever the umask (the parent is ours: nothing can swap the entry).
                    if fchmodat(current, component, 0o700, 0) != 0 {
                        let e = posixError("cannot set the mode of", path)
                        close(current)
                        throw e
                    }
                } else if errno != EEXIST {
                    let e = posixError("cannot create directory", path)
                    close(current)
                    throw e
                }
                next = openat(current, component, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
            }
            let openErrno = errno
            close(current)
            if next < 0 {
                if openErrno == ENOENT && !create { return nil }
                if openErrno == ELOOP || openErrno == ENOTDIR {
                    throw KeybayError(.insecurePermissions, "\(path) is a symbolic link or not a directory; refusing to use it").with(path: path, reason: "symbolic-link")
                }
                errno = openErrno
                throw posixError("cannot open directory", path)
            }
            do {
                try checkPrivate(fd: next, path: path, directory: true)
            } catch {
                close(next)
                throw error
            }
            current = next
        }
        return PrivateDirectory(fd: current, path: path)
    }

    /// `mkdir -p` for the XDG base directory (new levels get 0700).
    private static func makeBaseDirectory(_ base: String) throws {
        var st = stat()
        if stat(base, &st) == 0 { return }
        var prefix = ""
        for part in base.split(separator: "/", omittingEmptySubsequences: true) {
            prefix += "/" + part
            if mkdir(prefix, 0o700) == 0 {
                // The umask may have taken bits away: a new level is exactly 0700.
                guard chmod(prefix, 0o700) == 0 else { throw posixError("cannot set the mode of", prefix) }
            } else if errno != EEXIST {
                throw posixError("cannot create directory", prefix)
            }
        }
    }

    /// Refuses anything not owned by us or open to group/others; returns what fstat said.
    @discardableResult
    static func checkPrivate(fd: Int32, path: String, directory: Bool) throws -> stat {
        var st = stat()
        guard fstat(fd, &st) == 0 else { throw posixError("cannot inspect", path) }
        let kind = st.st_mode & S_IFMT
        if directory ? kind != S_IFDIR : kind != S_IFREG {
            throw KeybayError(.insecurePermissions, "\(path) is not a \(directory ? "directory" : "regular file"); refusing to use it").with(path: path, reason: "wrong-type")
        }
        if st.st_uid != geteuid() {
            throw KeybayError(.insecurePermissions, "\(path) is owned by uid \(st.st_uid), not by this user (uid \(geteuid())); refusing to use it").with(path: path, reason: "not-owner")
        }
        if st.st_mode & 0o077 != 0 {
            let mode = String(st.st_mode & 0o777, radix: 8)
            throw KeybayError(.insecurePermissions, "\(path) has mode \(mode), expected \(directory ? "0700" : "0600"); refusing to use it (fix the permissions by hand)")
                .with(path: path, reason: "mode")
        }
        return st
    }

    func pathOf(_ name: String) -> String { path + "/" + name }

    /// Whether an entry of that name exists (a link counts: opening it will then be refused).
    func contains(_ name: String) throws -> Bool {
        var st = stat()
        if fstatat(fd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 { return true }
        if errno == ENOENT { return false }
        throw Self.posixError("cannot inspect", pathOf(name))
    }

    /// Identity of the entry now at `name`, to notice a replaced file cheaply.
    func identity(of name: String) -> FileIdentity? {
        var st = stat()
        guard fstatat(fd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 else { return nil }
        return FileIdentity(st)
    }

    /// Opens an existing private file (with what fstat said of it), or returns nil if there is none.
    func openFile(_ name: String, flags: Int32) throws -> (fd: Int32, stat: stat)? {
        let f = openat(fd, name, flags | O_NOFOLLOW | O_CLOEXEC)
        if f < 0 {
            if errno == ENOENT { return nil }
            if errno == ELOOP { throw KeybayError(.insecurePermissions, "\(pathOf(name)) is a symbolic link; refusing to use it").with(path: pathOf(name), reason: "symbolic-link") }
            throw Self.posixError("cannot open", pathOf(name))
        }
        do { return (f, try Self.checkPrivate(fd: f, path: pathOf(name), directory: false)) } catch { close(f); throw error }
    }

    /// Reads a whole private file of at most `maxBytes` (or only its first `prefix` bytes), or
    /// nil if there is none.
    func read(_ name: String, maxBytes: Int, prefix: Int? = nil) throws -> (bytes: [UInt8], identity: FileIdentity)? {
        guard let (f, st) = try openFile(name, flags: O_RDONLY) else { return nil }
        defer { close(f) }
        guard Int(st.st_size) <= maxBytes else {
            throw KeybayError(.malformed, "\(pathOf(name)) is \(st.st_size) bytes, larger than any valid file of its kind (\(maxBytes))").with(path: pathOf(name))
        }
        let size = min(Int(st.st_size), prefix ?? Int.max)
        // Not zero-filled first: every byte is read into (a short read throws and drops the array).
        let bytes = try [UInt8](unsafeUninitializedCapacity: size) { buf, initialized in
            try readFully(f, name, into: UnsafeMutableRawBufferPointer(buf), at: 0)
            initialized = size
        }
        return (bytes, FileIdentity(st))
    }

    /// Whether the private file `name` holds exactly `expected`, compared chunk by chunk (no
    /// second copy of a large file in memory); its identity if it does, nil if it does not or
    /// is missing.
    func readBack(_ name: String, equals expected: [UInt8]) throws -> FileIdentity? {
        guard let (f, st) = try openFile(name, flags: O_RDONLY) else { return nil }
        defer { close(f) }
        guard Int(st.st_size) == expected.count else { return nil }
        let chunk = UnsafeMutableRawBufferPointer.allocate(byteCount: 256 * 1024, alignment: 64)
        defer { chunk.deallocate() }
        return try expected.withUnsafeBytes { wanted -> FileIdentity? in
            var done = 0
            while done < wanted.count {
                let piece = UnsafeMutableRawBufferPointer(rebasing: chunk[0..<min(chunk.count, wanted.count - done)])
                try readFully(f, name, into: piece, at: done)
                if memcmp(piece.baseAddress!, wanted.baseAddress! + done, piece.count) != 0 { return nil }
                done += piece.count
            }
            return FileIdentity(st)
        }
    }

    /// Fills `buffer` from `offset`; a file that ends first shrank while it was read.
    private func readFully(_ f: Int32, _ name: String, into buffer: UnsafeMutableRawBufferPointer, at offset: Int) throws {
        var done = 0
        while done < buffer.count {
            let n = pread(f, buffer.baseAddress! + done, buffer.count - done, off_t(offset + done))
            if n < 0 { if errno == EINTR { continue }; throw Self.posixError("cannot read", pathOf(name)) }
            if n == 0 { throw KeybayError(.io, "\(pathOf(name)) shrank while it was read").with(path: pathOf(name)) }
            done += n
        }
    }

    /// Durable replace: write `name.stage`-style staging file, fsync it, rename it over `name`,
    /// fsync the directory. A crash at any point leaves the old or the new file, never a torn one.
    /// Throws only while nothing has changed (before the rename); once the new file is in place,
    /// a failing directory fsync is returned instead: the new file is `name` now.
    func replace(_ name: String, stagingName: String, with bytes: [UInt8]) throws -> KeybayError? {
        try removeIfPresent(stagingName)
        try writeNew(stagingName, bytes)
        guard renameat(fd, stagingName, fd, name) == 0 else {
            let e = Self.posixError("cannot rename staging file over", pathOf(name))
            _ = unlinkat(fd, stagingName, 0)
            throw e
        }
        return syncFailure()
    }

    /// Create-only: the file appears complete under `name` or not at all, and an existing
    /// `name` is never overwritten (link(2) fails with EEXIST). Like `replace`, throws only
    /// before the link; a failure after it is returned.
    func createExclusive(_ name: String, stagingName: String, with bytes: [UInt8]) throws -> KeybayError? {
        try removeIfPresent(stagingName)
        try writeNew(stagingName, bytes)
        let linked = linkat(fd, stagingName, fd, name, 0) == 0
        let linkErrno = errno
        guard linked else {
            _ = unlinkat(fd, stagingName, 0)
            errno = linkErrno
            if linkErrno == EEXIST { throw KeybayError(.stateConflict, "\(pathOf(name)) already exists; refusing to overwrite it").with(path: pathOf(name)) }
            throw Self.posixError("cannot create", pathOf(name))
        }
        // The staging name is a second link to the live file now; one left behind is the next
        // writer's to clear (it removes a leftover staging file first).
        _ = unlinkat(fd, stagingName, 0)
        return syncFailure()
    }

    /// `sync()`'s failure, returned rather than thrown.
    private func syncFailure() -> KeybayError? {
        do { try sync(); return nil } catch let e as KeybayError { return e } catch { return KeybayError(.io, "\(error)") }
    }

    /// Creates `name` (never an existing one, never through a link) with exactly mode 0600,
    /// whatever the umask. Returns the descriptor, or -1 with `errno` set as `openat` sets it.
    func createFile(_ name: String, flags: Int32) -> Int32 {
        let f = openat(fd, name, flags | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard f >= 0, fchmod(f, 0o600) != 0 else { return f }
        let code = errno
        close(f)
        _ = unlinkat(fd, name, 0)
        errno = code
        return -1
    }

    /// Writes a new 0600 file and fsyncs it; on failure the partial file is removed.
    private func writeNew(_ name: String, _ bytes: [UInt8]) throws {
        let f = createFile(name, flags: O_WRONLY)
        guard f >= 0 else { throw Self.posixError("cannot create", pathOf(name)) }
        var failure: KeybayError?
        bytes.withUnsafeBytes { buf in
            var done = 0
            while done < buf.count {
                let n = write(f, buf.baseAddress! + done, buf.count - done)
                if n < 0 { if errno == EINTR { continue }; failure = Self.posixError("cannot write", pathOf(name)); return }
                done += n
            }
        }
        if failure == nil && fsync(f) != 0 { failure = Self.posixError("cannot fsync", pathOf(name)) }
        if close(f) != 0 && failure == nil { failure = Self.posixError("cannot close", pathOf(name)) }
        if let failure {
            _ = unlinkat(fd, name, 0)
            throw failure
        }
    }

    /// Gives our own regular file `name` exactly `mode` (for a file that is not secret, such as
    /// the lock file, whose mode an earlier umask may have spoilt); anything else is left alone.
    func repairMode(of name: String, to mode: mode_t) throws {
        var st = stat()
        guard fstatat(fd, name, &st, AT_SYMLINK_NOFOLLOW) == 0, st.st_mode & S_IFMT == S_IFREG, st.st_uid == geteuid(),
              st.st_mode & 0o7777 != mode else { return }
        guard fchmodat(fd, name, mode, 0) == 0 else { throw Self.posixError("cannot set the mode of", pathOf(name)) }
    }

    /// Removes the file `name` if present; idempotent. (A directory there is an error:
    /// `removeIfEmptyDirectory` deals with one where Keybay's own names may hold it.)
    func removeIfPresent(_ name: String) throws {
        if unlinkat(fd, name, 0) == 0 || errno == ENOENT { return }
        throw Self.posixError("cannot remove", pathOf(name))
    }

    /// Removes `name` if it is an empty directory; leaves anything else (nothing, a file) alone;
    /// a directory that is not empty is named for the user to remove.
    func removeIfEmptyDirectory(_ name: String) throws {
        if unlinkat(fd, name, AT_REMOVEDIR) == 0 || errno == ENOENT || errno == ENOTDIR { return }
        guard errno == ENOTEMPTY || errno == EEXIST else { throw Self.posixError("cannot remove", pathOf(name)) }
        throw KeybayError(.io, "\(pathOf(name)) is a directory that is not empty (Keybay never makes one there); remove it by hand").with(path: pathOf(name), reason: "stage-not-empty")
    }

    /// fsync of the directory makes renames, links and unlinks in it durable.
    func sync() throws {
        guard fsync(fd) == 0 else { throw Self.posixError("cannot fsync directory", path) }
    }

    static func posixError(_ what: String, _ path: String) -> KeybayError { KeybayError.posix(what, path) }
}
