// SPDX-License-Identifier: Apache-2.0
import Glibc

/// Where plugins are looked for, in order :
/// 1. the host's configured directories (the CLI's `--plugin-dir`),
/// 2. `KEYBAY_PLUGIN_PATH` (colon-separated, absolute entries only),
/// 3. the install directory, `<executable dir>/../lib/keybay/plugins`; for a host that loads
///    Keybay as a shared library (`libkeybay.so.1`), `<library dir>/keybay/plugins`; then the
///    system ones, `/usr/local/lib/keybay/plugins` and `/usr/lib/keybay/plugins` (for host
///    applications installed elsewhere),
/// 4. the executable's own directory, and the shared library's (development builds: `.build/debug`).
/// With external plugins switched off only 3 and 4 are searched.
///
/// A plugin file, and the directory it is loaded from, must belong to this user or root and be
/// writable by neither group nor others, or the plugin is refused (`.pluginRefused`).
public struct KeybayPluginSearch: Sendable, Equatable {
    /// The host's own directories, searched first (absolute paths; a relative one is
    /// `.invalidArgument` when searched).
    public var directories: [String]
    /// A colon-separated list of absolute directories, searched next (`KEYBAY_PLUGIN_PATH` by
    /// default); nil or empty for none.
    public var environmentPath: String?
    /// Whether `directories` and `environmentPath` are searched at all; false limits the search
    /// to the installation.
    public var allowExternal: Bool
    /// Where method plugins run; default ``KeybayPluginIsolation/fromEnvironment``.
    public var isolation: KeybayPluginIsolation
    /// First-party method plugins that run in process even when `isolation` is `.isolated`, when
    /// they are found in the installation (never a file of that name found elsewhere); default
    /// ``defaultInProcessMethodPlugins``.
    public var inProcessMethodPlugins: [String]

    /// - Parameters:
    ///   - directories: The host's own directories, searched first.
    ///   - environmentPath: Colon-separated directories searched next; defaults to
    ///     `$KEYBAY_PLUGIN_PATH`, read when this default is evaluated.
    ///   - allowExternal: False to search the installation only.
    ///   - isolation: Where method plugins run.
    public init(directories: [String] = [], environmentPath: String? = getenv("KEYBAY_PLUGIN_PATH").map { String(cString: $0) },
                allowExternal: Bool = true, isolation: KeybayPluginIsolation = .fromEnvironment) {
        self.directories = directories
        self.environmentPath = environmentPath
        self.allowExternal = allowExternal
        self.isolation = isolation
        self.inProcessMethodPlugins = Self.defaultInProcessMethodPlugins
    }

    /// The first-party method plugins that run in process by default when they are found in the
    /// installation: tpm2-pin reaches a TPM through TCTIs (swtpm over TCP, D-Bus to tpm2-abrmd) and
    /// pkcs11 loads whatever module the user names, neither of which a sandbox declaration can
    /// describe. (The one place besides the configuration's defaults that names first-party ids.)
    public static let defaultInProcessMethodPlugins = ["tpm2-pin", "pkcs11"]

    /// Plugin ids: `[a-z0-9][a-z0-9._-]{0,63}`, checked before an id becomes a file name.
    public static func isValidPluginID(_ id: String) -> Bool {
        let b = Array(id.utf8)
        guard (1...64).contains(b.count) else { return false }
        func lowerAlnum(_ c: UInt8) -> Bool { (c >= 0x30 && c <= 0x39) || (c >= 0x61 && c <= 0x7a) }
        return lowerAlnum(b[0]) && b.dropFirst().allSatisfy { lowerAlnum($0) || $0 == 0x2e || $0 == 0x5f || $0 == 0x2d }
    }

    /// Refuses an invalid plugin id as invalid input (exit 2 in the CLI), before it is used.
    public static func validatePluginID(_ id: String) throws {
        guard isValidPluginID(id) else {
            throw KeybayError(.invalidArgument, "invalid plugin id '\(id.prefix(80))': use [a-z0-9][a-z0-9._-]{0,63}").with(reason: "invalid-plugin-id")
        }
    }

    /// The file a plugin with `id` is loaded from: `libkeybay-<id>.so`.
    public static func fileName(for id: String) -> String { "libkeybay-\(id).so" }

    /// The id in a `libkeybay-<id>.so` file name (not yet checked with isValidPluginID), or nil.
    static func pluginID(inFileName name: String) -> String? {
        guard name.hasPrefix("libkeybay-"), name.hasSuffix(".so") else { return nil }
        return String(name.dropFirst(10).dropLast(3))
    }
}
