// SPDX-License-Identifier: Apache-2.0
import Glibc

/// The XDG base directories as the environment gives them: what a configuration defaults to, and
/// where the host looks for Keybay's own directories whatever configuration a call serves.
enum BaseDirectories {
    /// `explicit` when given (absolute), else `$variable` when absolute (the XDG spec says a
    /// relative value is invalid and must be ignored), else the home directory and `fallback`;
    /// without a trailing `/`.
    static func resolved(explicit: String?, variable: String, fallback: String) throws -> String {
        if let explicit {
            guard explicit.hasPrefix("/") else {
                throw KeybayError(.invalidArgument, "base directory \(explicit) is not an absolute path")
            }
            return trimmed(explicit)
        }
        if let value = getenv(variable).map({ String(cString: $0) }), value.hasPrefix("/") {
            return trimmed(value)
        }
        guard let home = homeDirectory() else {
            throw KeybayError(.invalidArgument, "neither \(variable) nor a home directory is set")
        }
        return trimmed(home) + "/" + fallback
    }

    /// `$XDG_RUNTIME_DIR` when it is absolute, without a trailing `/`.
    static func runtime() -> String? {
        guard let runtime = getenv("XDG_RUNTIME_DIR").map({ String(cString: $0) }), runtime.hasPrefix("/") else { return nil }
        return trimmed(runtime)
    }

    private static func homeDirectory() -> String? {
        if let h = getenv("HOME").map({ String(cString: $0) }), h.hasPrefix("/") { return h }
        guard let pw = getpwuid(geteuid()), let dir = pw.pointee.pw_dir else { return nil }
        let s = String(cString: dir)
        return s.hasPrefix("/") ? s : nil
    }

    static func trimmed(_ path: String) -> String {
        var p = Substring(path)
        while p.count > 1 && p.hasSuffix("/") { p = p.dropLast() }
        return String(p)
    }
}
