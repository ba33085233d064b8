// SPDX-License-Identifier: Apache-2.0
import Glibc

/// The loader's checks on a file and the directory it is named in, for what Keybay loads (a
/// plugin, the helper) and for what it opens on a plugin's behalf (open_file): the directory and
/// the file belong to this user or root and are writable by neither group nor others, the file is
/// a regular file, and it does not lead (through a link) out of its directory.
struct CheckedPath {
    /// What is checked, for messages: "plugin" and "plugin directory", or "file" and "directory".
    let noun: String
    /// What a refusal is: `.pluginRefused` for a plugin, `.insecurePermissions` for a file.
    let code: KeybayError.Code
    /// How a refusal of the file or its directory ends ("refusing to load from it"), and of a
    /// link out of the directory ("refusing to load it").
    let refusing: String, refusingLink: String

    /// A plugin file, or the helper: refused with `.pluginRefused`.
    static let plugin = CheckedPath(noun: "plugin", code: .pluginRefused, refusing: "refusing to load from it", refusingLink: "refusing to load it")
    /// A file a plugin has the host open for it (open_file).
    static let userFile = CheckedPath(noun: "file", code: .insecurePermissions, refusing: "the host opens no such file for a plugin",
                                      refusingLink: "the host opens no such file for a plugin")

    /// Checks the directory and the file and returns the file's resolved path. The reasons:
    /// `unresolved`, `wrong-type`, `not-owner`, `mode`, `link-out` (docs/plugins.md).
    func check(_ path: String, directory: String) throws -> String {
        guard let realDirectory = Self.realPath(directory) else {
            throw KeybayError(code, "cannot resolve \(noun) directory \(directory)").with(path: directory, reason: "unresolved")
        }
        try checkOwnerAndMode(realDirectory, what: "\(noun) directory", shown: directory, directory: true)
        guard let realFile = Self.realPath(path) else {
            throw KeybayError(code, "cannot resolve \(noun) \(path) (a dangling link?)").with(path: path, reason: "unresolved")
        }
        let fileDirectory = realFile.lastIndex(of: "/").map { String(realFile[..<$0]) } ?? ""
        guard fileDirectory == realDirectory || (realDirectory == "/" && fileDirectory.isEmpty) else {
            throw KeybayError(code, "\(noun) \(path) is a link leading out of \(directory) (to \(realFile)); \(refusingLink)").with(path: path, reason: "link-out")
        }
        try checkOwnerAndMode(realFile, what: noun, shown: path, directory: false)
        return realFile
    }

    /// The owner and mode of what `st` describes, which the message calls `what` `shown`.
    func checkOwnerAndMode(_ st: stat, what: String, shown: String, directory: Bool) throws {
        if directory ? (st.st_mode & S_IFMT) != S_IFDIR : (st.st_mode & S_IFMT) != S_IFREG {
            throw KeybayError(code, "\(what) \(shown) is not a \(directory ? "directory" : "regular file"); \(refusing)").with(path: shown, reason: "wrong-type")
        }
        if st.st_uid != geteuid() && st.st_uid != 0 {
            throw KeybayError(code, "\(what) \(shown) is owned by uid \(st.st_uid), neither this user nor root; \(refusing)").with(path: shown, reason: "not-owner")
        }
        if st.st_mode & 0o022 != 0 {
            throw KeybayError(code, "\(what) \(shown) is writable by group or others (mode \(String(st.st_mode & 0o777, radix: 8))); \(refusing)").with(path: shown, reason: "mode")
        }
    }

    private func checkOwnerAndMode(_ path: String, what: String, shown: String, directory: Bool) throws {
        var st = stat()
        guard stat(path, &st) == 0 else { throw KeybayError.posix("cannot inspect \(what)", shown) }
        try checkOwnerAndMode(st, what: what, shown: shown, directory: directory)
    }

    /// `path` with every link resolved, or nil when it cannot be (a dangling link, nothing there).
    static func realPath(_ path: String) -> String? {
        guard let p = realpath(path, nil) else { return nil }
        defer { free(p) }
        return String(cString: p)
    }

    /// The directory `path` is named in: `/` for a file at the top.
    static func directory(of path: String) -> String {
        guard let slash = path.lastIndex(of: "/"), slash != path.startIndex else { return "/" }
        return String(path[..<slash])
    }
}
