// SPDX-License-Identifier: Apache-2.0
import CKeybayAgent
import Glibc

/// Where the agent listens: the socket systemd passed it (socket activation, `LISTEN_FDS`), or
/// one it binds itself at `$XDG_RUNTIME_DIR/keybay/agent.socket`. Either way the directory is
/// this user's and 0700 (the runtime directory too: owned by this user, nothing for group or
/// others), and the socket 0600. A lock file beside the socket, held for the agent's life,
/// makes a second agent refuse to start instead of taking the socket over; a socket file left
/// by an agent that died is replaced. Connections from another uid are closed unanswered.
final class AgentListener {
    static let directoryName = "keybay"
    static let socketName = "agent.socket"
    static let lockName = "agent.lock"

    let fd: Int32
    /// The socket's path.
    let path: String
    /// Whether the agent bound the socket itself (then it removes it when it ends).
    private let bound: Bool
    private let lock: Int32
    private let socketIdentity: (device: UInt64, inode: UInt64)

    /// Another agent holds the lock.
    struct AlreadyRunning: Error { let path: String }

    private init(fd: Int32, path: String, bound: Bool, lock: Int32) throws {
        var st = stat()
        guard stat(path, &st) == 0, st.st_mode & S_IFMT == S_IFSOCK else {
            throw KeybayError.posix("cannot inspect the agent's socket", path)
        }
        (self.fd, self.path, self.bound, self.lock) = (fd, path, bound, lock)
        socketIdentity = (UInt64(st.st_dev), UInt64(st.st_ino))
    }

    /// The listening socket: the one systemd passed when `LISTEN_PID` is this process and
    /// `LISTEN_FDS` is 1, else one bound at `$XDG_RUNTIME_DIR/keybay/agent.socket`.
    static func open() throws -> AgentListener {
        let runtime = try runtimeDirectory()
        let directory = try privateDirectory(in: runtime)
        let lock = try takeLock(directory)
        do {
            if let passed = try passedSocket() {
                let path = try socketPath(of: passed)
                guard path == directory.pathOf(socketName) else {
                    throw KeybayError(.invalidArgument, "the socket systemd passed is \(path), not \(directory.pathOf(socketName))")
                }
                try checkSocketMode(path)
                return try AgentListener(fd: passed, path: path, bound: false, lock: lock)
            }
            return try bind(in: directory, lock: lock)
        } catch {
            Glibc.close(lock)
            throw error
        }
    }

    /// `XDG_RUNTIME_DIR`, which must be an absolute path to a directory of this user that
    /// group and others cannot use (the base directory spec's 0700).
    static func runtimeDirectory() throws -> String {
        guard let value = getenv("XDG_RUNTIME_DIR").map({ String(cString: $0) }), value.hasPrefix("/") else {
            throw KeybayError(.invalidArgument, "XDG_RUNTIME_DIR is not set to an absolute path: the agent has no private place for its socket")
        }
        var st = stat()
        guard stat(value, &st) == 0 else { throw KeybayError.posix("cannot inspect XDG_RUNTIME_DIR", value) }
        guard st.st_mode & S_IFMT == S_IFDIR, st.st_uid == geteuid(), st.st_mode & 0o077 == 0 else {
            throw KeybayError(.insecurePermissions, "XDG_RUNTIME_DIR \(value) is not a directory of this user with mode 0700 (uid \(st.st_uid), mode \(String(st.st_mode & 0o777, radix: 8))); refusing to listen there")
                .with(path: value)
        }
        return value
    }

    /// `<runtime>/keybay`, created 0700 if missing; refused when it is a link, not ours or open
    /// to others.
    private static func privateDirectory(in runtime: String) throws -> PrivateDirectory {
        guard let directory = try PrivateDirectory.open(base: runtime, components: [directoryName], create: true) else {
            throw KeybayError(.io, "cannot open \(runtime)/\(directoryName)")
        }
        return directory
    }

    private static func takeLock(_ directory: PrivateDirectory) throws -> Int32 {
        let f = openat(directory.fd, lockName, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard f >= 0 else { throw KeybayError.posix("cannot open", directory.pathOf(lockName)) }
        do {
            try PrivateDirectory.checkPrivate(fd: f, path: directory.pathOf(lockName), directory: false)
        } catch {
            Glibc.close(f)
            throw error
        }
        guard flock(f, LOCK_EX | LOCK_NB) == 0 else {
            let code = errno
            Glibc.close(f)
            if code == EWOULDBLOCK { throw AlreadyRunning(path: directory.pathOf(socketName)) }
            errno = code
            throw KeybayError.posix("cannot lock", directory.pathOf(lockName))
        }
        return f
    }

    /// Descriptor 3 when systemd passed one listening socket to this very process.
    private static func passedSocket() throws -> Int32? {
        defer { unsetenv("LISTEN_PID"); unsetenv("LISTEN_FDS"); unsetenv("LISTEN_FDNAMES") }
        guard let pid = getenv("LISTEN_PID").flatMap({ Int32(String(cString: $0)) }), pid == getpid(),
              let count = getenv("LISTEN_FDS").flatMap({ Int(String(cString: $0)) }) else { return nil }
        guard count == 1 else { throw KeybayError(.invalidArgument, "systemd passed \(count) sockets; the agent takes one") }
        func option(_ name: Int32) -> Int32 {
            var value: Int32 = -1
            var length = socklen_t(MemoryLayout<Int32>.size)
            return getsockopt(3, SOL_SOCKET, name, &value, &length) == 0 ? value : -1
        }
        guard option(SO_DOMAIN) == AF_UNIX, option(SO_TYPE) == Int32(SOCK_STREAM.rawValue), option(SO_ACCEPTCONN) == 1 else {
            throw KeybayError(.invalidArgument, "descriptor 3 from systemd is not a listening Unix stream socket")
        }
        _ = fcntl(3, F_SETFD, FD_CLOEXEC)
        return 3
    }

    private static func socketPath(of fd: Int32) throws -> String {
        var address = sockaddr_un()
        var length = socklen_t(MemoryLayout<sockaddr_un>.size)
        let named = withUnsafeMutablePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) } }
        guard named == 0 else { throw KeybayError.posix("cannot name the passed socket", "descriptor \(fd)") }
        return withUnsafeBytes(of: address.sun_path) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
    }

    private static func checkSocketMode(_ path: String) throws {
        var st = stat()
        guard lstat(path, &st) == 0 else { throw KeybayError.posix("cannot inspect", path) }
        guard st.st_mode & S_IFMT == S_IFSOCK, st.st_uid == geteuid(), st.st_mode & 0o077 == 0 else {
            throw KeybayError(.insecurePermissions, "\(path) is not a socket of this user with mode 0600; refusing to listen on it").with(path: path)
        }
    }

    /// Binds a new socket (0600) at the socket's name, replacing a socket a dead agent left (the
    /// lock says no agent runs); anything else at that name is refused.
    private static func bind(in directory: PrivateDirectory, lock: Int32) throws -> AgentListener {
        let path = directory.pathOf(socketName)
        var st = stat()
        if fstatat(directory.fd, socketName, &st, AT_SYMLINK_NOFOLLOW) == 0 {
            guard st.st_mode & S_IFMT == S_IFSOCK else {
                throw KeybayError(.insecurePermissions, "\(path) exists and is not a socket; refusing to replace it").with(path: path)
            }
            guard unlinkat(directory.fd, socketName, 0) == 0 else { throw KeybayError.posix("cannot remove the stale socket", path) }
        }
        guard let address = UnixSocket.address(path) else {
            throw KeybayError(.invalidArgument, "\(path) is too long for a socket address (\(path.utf8.count) bytes)")
        }
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw KeybayError.posix("cannot make a socket for", path) }
        let previous = umask(0o177)
        let bound = UnixSocket.withAddress(address) { Glibc.bind(fd, $0, $1) }
        umask(previous)
        guard bound == 0, fchmodat(directory.fd, socketName, 0o600, 0) == 0, listen(fd, 64) == 0 else {
            let e = KeybayError.posix("cannot listen on", path)
            Glibc.close(fd)
            throw e
        }
        do {
            return try AgentListener(fd: fd, path: path, bound: true, lock: lock)
        } catch {
            Glibc.close(fd)
            throw error
        }
    }

    /// Whether the socket file at `path` is still the one this agent listens on (removed at
    /// logout with the runtime directory, or taken over: then the agent ends).
    var stillInPlace: Bool {
        var st = stat()
        return lstat(path, &st) == 0 && UInt64(st.st_dev) == socketIdentity.device && UInt64(st.st_ino) == socketIdentity.inode
    }

    /// The next connection from a process of this user; one of another uid is closed unanswered
    /// (`refused` gets its uid). Nil when there was nothing to accept or it was refused.
    func accept(refused: (uid_t) -> Void) -> Int32? {
        let connection = keybay_accept(fd)
        guard connection >= 0 else { return nil }
        var uid: uid_t = 0, pid: pid_t = 0
        guard keybay_peer_credentials(connection, &uid, &pid) == 0, uid == geteuid() else {
            Glibc.close(connection)
            refused(uid)
            return nil
        }
        return connection
    }

    /// Stops listening; removes the socket it bound if it is still the one in place.
    func stop() {
        if bound && stillInPlace { unlink(path) }
        Glibc.close(fd)
        Glibc.close(lock)
    }
}
