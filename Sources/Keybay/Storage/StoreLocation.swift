// SPDX-License-Identifier: Apache-2.0
/// Where one application's store lives: `<dataHome>/keybay/<applicationID>/`, and the live
/// file's path in it (for messages).
struct StoreLocation: Sendable {
    let dataHome: String
    let applicationID: String

    /// The live file's path.
    var storePath: String { dataHome + "/keybay/" + applicationID + "/" + StoreFile.liveName }
}

extension StoreLocation {
    /// Whether `id` is a valid application id: 1–120 bytes of `[A-Za-z0-9._-]`, starting with a
    /// letter or digit.
    static func isValidApplicationID(_ id: String) -> Bool {
        let bytes = Array(id.utf8)
        guard (1...120).contains(bytes.count) else { return false }
        func alnum(_ b: UInt8) -> Bool { (b >= 0x30 && b <= 0x39) || (b >= 0x41 && b <= 0x5a) || (b >= 0x61 && b <= 0x7a) }
        return alnum(bytes[0]) && bytes.dropFirst().allSatisfy { alnum($0) || $0 == 0x2e || $0 == 0x5f || $0 == 0x2d }
    }

    /// Checks an application id, and inside a Flatpak or snap sandbox that it is the sandbox's
    /// own; returns the sandbox, if any.
    static func checkApplicationID(_ id: String) throws -> ApplicationSandbox? {
        guard isValidApplicationID(id) else {
            throw KeybayError(.invalidArgument, "invalid application id: use 1–120 characters of [A-Za-z0-9._-], starting with a letter or digit")
        }
        let sandbox = try ApplicationSandbox.current()
        if let sandbox, sandbox.applicationID != id {
            throw KeybayError(.invalidArgument, "the application id \(id) is not this \(sandbox.kind.rawValue) sandbox's own (\(sandbox.applicationID)): inside a sandbox a store is the sandbox's application's")
        }
        return sandbox
    }

    /// The longest base directory: with "/keybay/", a 120-byte application id and the longest
    /// file name under it ("file-root.key.stage"), every path stays below PATH_MAX (4096).
    static let maxBaseDirectoryBytes = 4095 - 8 - 120 - 20

    /// A base directory as `BaseDirectories.resolved` gives it, refused when paths under it would be too long.
    static func baseDirectory(explicit: String?, variable: String, fallback: String) throws -> String {
        let directory = try BaseDirectories.resolved(explicit: explicit, variable: variable, fallback: fallback)
        guard directory.utf8.count <= maxBaseDirectoryBytes else {
            throw KeybayError(.invalidArgument, "base directory \(directory.prefix(64))… is \(directory.utf8.count) bytes long, limit \(maxBaseDirectoryBytes): paths under it would exceed PATH_MAX")
        }
        return directory
    }
}
