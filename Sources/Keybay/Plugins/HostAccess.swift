// SPDX-License-Identifier: Apache-2.0
import CKeybayPlugin
import Glibc

/// What open_file may open during one plugin call.
enum FileAccess: Sendable {
    /// Nothing: probe, describe, root operations.
    case none
    /// The file an option the user gave names (enroll); what is opened is recorded as a grant.
    case enrolling([(String, String)])
    /// The method's recorded grants (unwrap, verify).
    case unlocking([FileGrant])
}

/// Keybay's own directories and the agent's sockets: what the host never opens or connects for a
/// plugin, whatever the plugin declared or the user named.
struct KeybayPaths: Sendable {
    var directories: [String] = []
    var sockets: [String] = []

    /// Keybay's directories under the environment's base directories (`XDG_DATA_HOME`,
    /// `XDG_STATE_HOME`, else the home directory's), its runtime directory
    /// (`$XDG_RUNTIME_DIR/keybay`, where the agent listens) and the agent's default socket.
    static func fromEnvironment() -> KeybayPaths {
        var paths = KeybayPaths()
        for (variable, fallback) in [("XDG_DATA_HOME", ".local/share"), ("XDG_STATE_HOME", ".local/state")] {
            if let base = try? BaseDirectories.resolved(explicit: nil, variable: variable, fallback: fallback) { paths.directories.append(base + "/keybay") }
        }
        if let runtime = BaseDirectories.runtime() {
            paths.directories.append(runtime + "/keybay")
            paths.sockets.append(runtime + "/keybay/agent.socket")
        }
        return paths
    }

    /// Whether the resolved path `resolved` lies in one of the directories (resolved too).
    func contains(_ resolved: String) -> Bool {
        directories.contains { directory in
            [KeybayPluginSearch.normalise(directory), CheckedPath.realPath(directory)].compactMap { $0 }.contains {
                resolved == $0 || resolved.hasPrefix($0 == "/" ? "/" : $0 + "/")
            }
        }
    }
}

/// Serves open_file and connect_socket for one plugin call: opens only a file the user named
/// (at enroll, in an option; at unlock, as the method's grant recorded), connects only to a socket
/// the plugin declared, and never to Keybay's own files and sockets or the session bus
/// (docs/plugins.md, "Host services").
final class HostAccess {
    /// A refusal: the status the service answers, and the error (a line, a reason, the path) the
    /// plugin's call reports when the plugin passes the status on.
    struct Refusal: Error {
        let status: keybay_status
        let error: KeybayError
    }

    let plugin: String
    let files: FileAccess
    /// The plugin's `unix:` entries, as declared.
    let sockets: [String]
    private let configured: KeybayPaths?
    /// The files opened at enroll, recorded for the method.
    private(set) var granted: [FileGrant] = []

    init(plugin: String, files: FileAccess, sockets: [String], keybay: KeybayPaths?) {
        self.plugin = plugin
        self.files = files
        self.sockets = sockets
        self.configured = keybay
    }

    /// What the host never hands out: the configuration's and the environment's.
    private var keybay: KeybayPaths {
        var paths = KeybayPaths.fromEnvironment()
        paths.directories += configured?.directories ?? []
        paths.sockets += configured?.sockets ?? []
        return paths
    }

    private func refuse(_ status: keybay_status, _ reason: String, _ line: String, path: String? = nil) -> Refusal {
        Refusal(status: status, error: KeybayError(.pluginFailed, line).with(path: path, reason: reason))
    }

    // MARK: Files

    /// A read-only descriptor of the file option `option` names (see `FileAccess`).
    func openFile(_ option: String) throws(Refusal) -> Int32 {
        let path: String
        var recording: [FileGrant]?
        switch files {
        case .none:
            throw refuse(KEYBAY_ERR_UNSUPPORTED, "no-file-grant", "\(plugin) asked the host for the file of option '\(option)' outside enroll, unwrap and verify")
        case .enrolling(let options):
            guard let value = options.first(where: { $0.0 == option })?.1 else {
                throw refuse(KEYBAY_ERR_INVALID_OPTION, "option-not-given", "\(plugin) needs a file: --opt \(option)=/absolute/path")
            }
            let grant = FileGrant(option: option, path: value)
            guard grant.isWellFormed else {
                throw refuse(KEYBAY_ERR_INVALID_OPTION, "not-absolute", MethodNames.isValidPluginID(option)
                             ? "the file of option '\(option)' must be an absolute path shorter than \(PATH_MAX) bytes, not '\(value.prefix(200))'"
                             : "the host opens files only for options named [a-z0-9][a-z0-9._-]{0,63}, not '\(option.prefix(64))'")
            }
            let recorded = granted.contains(grant) ? granted : granted + [grant]
            guard recorded.count <= FileGrant.maxCount, FileGrant.encodedBytes(recorded) <= FileGrant.maxBytes else {
                throw refuse(KEYBAY_ERR_INVALID_OPTION, "grant-limit",
                             "\(plugin) asked for more files than the host records for a method (\(FileGrant.maxCount), their paths at most \(FileGrant.maxBytes) bytes in all)", path: value)
            }
            (path, recording) = (value, recorded)
        case .unlocking(let grants):
            guard let grant = grants.first(where: { $0.option == option }) else {
                throw refuse(KEYBAY_ERR_UNSUPPORTED, "no-file-grant",
                             "this \(plugin) method holds no file for option '\(option)': it was enrolled before Keybay recorded the files it opens for a plugin; enroll it again (keybay-methods change METHOD-ID --opt \(option)=FILE, run once with KEYBAY_PLUGIN_ISOLATION=none)")
            }
            path = grant.path
        }
        let fd = try open(path, enrolling: recording != nil)
        granted = recording ?? granted
        return fd
    }

    /// Opens `path` read-only after the loader's checks; statuses as docs/plugins.md gives them.
    private func open(_ path: String, enrolling: Bool) throws(Refusal) -> Int32 {
        func status(_ reason: String?) -> keybay_status {
            switch reason {
            case "no-file", "unresolved": enrolling ? KEYBAY_ERR_INVALID_OPTION : KEYBAY_ERR_NOT_AVAILABLE
            case "wrong-type": enrolling ? KEYBAY_ERR_INVALID_OPTION : KEYBAY_ERR_INSECURE
            case "not-owner", "mode", "link-out", "hard-link", "keybay-file": KEYBAY_ERR_INSECURE
            default: KEYBAY_ERR_IO
            }
        }
        func refusal(_ e: KeybayError) -> Refusal {
            Refusal(status: status(e.reason), error: e.with(path: path, reason: "unreadable"))
        }
        func checking<T>(_ body: () throws -> T) throws(Refusal) -> T {
            do { return try body() } catch { throw refusal(error as? KeybayError ?? KeybayError(.io, "\(error)")) }
        }
        var st = stat()
        guard lstat(path, &st) == 0 else {
            let code = errno
            let missing = code == ENOENT || code == ENOTDIR
            throw refusal(KeybayError(.io, missing ? "no file at \(path)" : "cannot inspect \(path): \(String(cString: strerror(code)))")
                .with(path: path, underlying: .errno(code), reason: missing ? "no-file" : "unreadable"))
        }
        let resolved = try checking { try CheckedPath.userFile.check(path, directory: CheckedPath.directory(of: path)) }
        guard !keybay.contains(resolved) else {
            let shown = resolved == path ? path : "\(path) (\(resolved))"
            throw refusal(KeybayError(.insecurePermissions, "file \(shown) is inside Keybay's own directories; the host opens none of their files for a plugin")
                .with(reason: "keybay-file"))
        }
        let fd = Glibc.open(resolved, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY | O_NONBLOCK)
        guard fd >= 0 else {
            let code = errno
            throw refusal(KeybayError(.io, "cannot open \(path): \(String(cString: strerror(code)))")
                .with(underlying: .errno(code), reason: code == ENOENT ? "no-file" : "unreadable"))
        }
        // What was opened is checked again: the path may have changed since it was looked at.
        do throws(Refusal) {
            try checking {
                guard fstat(fd, &st) == 0 else { throw KeybayError.posix("cannot inspect", path) }
                try CheckedPath.userFile.checkOwnerAndMode(st, what: "file", shown: path, directory: false)
                guard st.st_nlink == 1 else {
                    throw KeybayError(.insecurePermissions, "file \(path) has \(st.st_nlink) names (hard links), and another may lie inside Keybay's directories; the host opens no such file for a plugin")
                        .with(reason: "hard-link")
                }
            }
        } catch {
            close(fd)
            throw error
        }
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK)
        return fd
    }

    // MARK: Sockets

    /// A stream socket connected to the declared `unix:` socket `declared` (as declared).
    func connectSocket(_ declared: String) throws(Refusal) -> Int32 {
        guard sockets.contains(declared) else {
            throw refuse(KEYBAY_ERR_UNSUPPORTED, "undeclared-socket", "\(plugin) asked the host to connect to \(declared.prefix(200)), which it does not declare (unix:\(declared.prefix(200)))")
        }
        var target = declared
        if declared.hasPrefix(DeclaredSockets.runtimeDirectory + "/") {
            guard let runtime = BaseDirectories.runtime() else {
                throw refuse(KEYBAY_ERR_NOT_AVAILABLE, "no-runtime-directory", "\(plugin) needs the socket \(declared), but XDG_RUNTIME_DIR is not set to an absolute path")
            }
            target = runtime + declared.dropFirst(DeclaredSockets.runtimeDirectory.count)
        }
        guard let resolved = CheckedPath.realPath(target) else {
            throw refuse(KEYBAY_ERR_NOT_AVAILABLE, "no-socket", "nothing listens at \(target)", path: target)
        }
        let keybay = keybay
        if keybay.contains(resolved) || keybay.sockets.contains(where: { Self.isSameFile(resolved, $0) }) {
            throw refuse(KEYBAY_ERR_INSECURE, "keybay-socket", "\(target) is a socket of Keybay's own (its agent's); the host connects no plugin to it", path: target)
        }
        if Self.sessionBusSockets().contains(where: { Self.isSameFile(resolved, $0) }) {
            throw refuse(KEYBAY_ERR_INSECURE, "session-bus", "\(target) is the session bus; the host connects no plugin to it", path: target)
        }
        do throws(UnixSocket.Failure) {
            let fd = try UnixSocket.connect(resolved, timeout: 5)
            var none = timeval()
            setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &none, socklen_t(MemoryLayout<timeval>.size))
            setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &none, socklen_t(MemoryLayout<timeval>.size))
            return fd
        } catch {
            switch error {
            case .failed(_, let code) where code == ENOENT || code == ECONNREFUSED:
                throw refuse(KEYBAY_ERR_NOT_AVAILABLE, "no-socket", "nothing listens at \(target)", path: target)
            case .failed(let what, let code):
                throw refuse(KEYBAY_ERR_IO, "connect-failed", "cannot \(what) \(target): \(String(cString: strerror(code)))", path: target)
            case .tooLong:
                throw refuse(KEYBAY_ERR_IO, "connect-failed", "\(resolved) is too long for a socket address", path: target)
            }
        }
    }

    /// The session bus's sockets: `$XDG_RUNTIME_DIR/bus` and every `unix:path=` of
    /// `DBUS_SESSION_BUS_ADDRESS` (its values %-escaped, addresses separated by `;`).
    static func sessionBusSockets() -> [String] {
        var paths = BaseDirectories.runtime().map { [$0 + "/bus"] } ?? []
        let address = getenv("DBUS_SESSION_BUS_ADDRESS").map { String(cString: $0) } ?? ""
        for entry in address.split(separator: ";") where entry.hasPrefix("unix:") {
            for pair in entry.dropFirst(5).split(separator: ",") where pair.hasPrefix("path=") {
                paths.append(unescaped(pair.dropFirst(5)))
            }
        }
        return paths
    }

    /// A D-Bus address value with its `%XX` escapes decoded (one that does not decode is kept as written).
    static func unescaped(_ value: Substring) -> String {
        var bytes: [UInt8] = []
        var i = value.utf8.startIndex
        let utf8 = value.utf8
        while i < utf8.endIndex {
            if utf8[i] == 0x25, let end = utf8.index(i, offsetBy: 3, limitedBy: utf8.endIndex),
               let byte = UInt8(String(decoding: utf8[utf8.index(after: i)..<end], as: UTF8.self), radix: 16) {
                bytes.append(byte)
                i = end
            } else {
                bytes.append(utf8[i])
                i = utf8.index(after: i)
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// Whether `a` and `b` name the same file (device and inode), or resolve to the same path.
    static func isSameFile(_ a: String, _ b: String) -> Bool {
        var x = stat(), y = stat()
        if stat(a, &x) == 0, stat(b, &y) == 0 { return x.st_dev == y.st_dev && x.st_ino == y.st_ino }
        return CheckedPath.realPath(a) ?? a == CheckedPath.realPath(b) ?? b
    }
}

/// A method plugin's `unix:` declaration entries: the sockets the host's connect_socket may
/// connect to. Each is a plain absolute path below `/run` (not `/run` itself), or
/// `$XDG_RUNTIME_DIR/` and a plain relative path (below the user's runtime directory, expanded
/// when the host connects). Plain: no empty, `.` or `..` component.
enum DeclaredSockets {
    static let runtimeDirectory = "$XDG_RUNTIME_DIR"
    /// Entries past this many are not read (the helper refuses a longer declaration).
    static let maxEntries = 32

    /// The `unix:` entries of `d`'s sandbox declaration; a malformed one is `.pluginRefused`
    /// (`sandbox-declaration`).
    static func of(_ d: keybay_plugin, path: String) throws -> [String] {
        guard let list = d.sandbox else { return [] }
        var sockets: [String] = []
        for i in 0..<maxEntries {
            guard let entry = list[i] else { break }
            guard strncmp(entry, "unix:", 5) == 0 else { continue }
            let declared = String(cString: entry + 5)
            guard isWellFormed(declared) else {
                throw KeybayError(.pluginRefused, "plugin \(path): the sandbox entry 'unix:\(declared.prefix(255))' is refused: a unix: socket is a path below /run, or below \(runtimeDirectory)/; refusing to load it")
                    .with(path: path, reason: "sandbox-declaration")
            }
            sockets.append(declared)
        }
        return sockets
    }

    static func isWellFormed(_ declared: String) -> Bool {
        guard declared.utf8.count <= 255 else { return false }
        let rest: Substring
        if declared.hasPrefix("/run/") { rest = declared.dropFirst(5) }
        else if declared.hasPrefix(runtimeDirectory + "/") { rest = declared.dropFirst(runtimeDirectory.count + 1) }
        else { return false }
        return rest.split(separator: "/", omittingEmptySubsequences: false).allSatisfy { !$0.isEmpty && $0 != "." && $0 != ".." }
    }
}
