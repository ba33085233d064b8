// SPDX-License-Identifier: Apache-2.0
import CKeybayImage
import CKeybayPlugin
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

    /// The ordered list of directories.
    func orderedDirectories() throws -> [String] {
        var result: [String] = []
        if allowExternal {
            for d in directories {
                guard d.hasPrefix("/") else {
                    throw KeybayError(.invalidArgument, "plugin directory \(d) is not an absolute path").with(reason: "relative-plugin-path")
                }
                result.append(d)
            }
            if let env = environmentPath, !env.isEmpty {
                for entry in env.split(separator: ":", omittingEmptySubsequences: true) {
                    guard entry.hasPrefix("/") else {
                        throw KeybayError(.invalidArgument, "KEYBAY_PLUGIN_PATH entry '\(entry)' is not an absolute path; refusing to search it")
                            .with(reason: "relative-plugin-path")
                    }
                    result.append(String(entry))
                }
            }
        }
        for d in Self.installationDirectories where !result.contains(d) { result.append(d) }
        return result
    }

    /// Items 3 and 4 of the search: where Keybay's own plugins are installed.
    static let installationDirectories: [String] = {
        var installation: [String] = []
        if let exeDir = executableDirectory { installation.append(normalise(exeDir + "/../lib/keybay/plugins")) }
        if let libDir = libraryDirectory { installation.append(libDir + "/keybay/plugins") }
        installation += systemDirectories
        for d in [executableDirectory, libraryDirectory].compactMap({ $0 }) where !installation.contains(d) { installation.append(d) }
        return installation
    }()

    /// Where plugin `id` runs when found in `directory` and asked for as `kind` (nil: a listing or
    /// a check, which do not know the kind), decided before any of its code runs. A root runs in
    /// process: the user named it (`--root`, or the store it made records it). A method runs
    /// isolated unless isolation is off or it is a first-party plugin on the in-process list found
    /// in the installation. A listing loads an installed file in process, and any other file only
    /// in the sandbox.
    func placement(of id: String, kind: keybay_plugin_kind?, foundIn directory: String) -> PluginPlacement {
        if kind == KEYBAY_KIND_ROOT || isolation == .inProcess { return .inProcess }
        let installed = Self.isInstallationDirectory(directory)
        if kind == KEYBAY_KIND_METHOD { return installed && inProcessMethodPlugins.contains(id) ? .inProcess : .isolated }
        return installed ? .inProcess : .isolated
    }

    /// Whether `directory` is one of the installation directories (items 3 and 4), compared as
    /// resolved paths: `.build/release` and the `.build/<triple>/release` it links to are one.
    static func isInstallationDirectory(_ directory: String) -> Bool {
        guard let real = CheckedPath.realPath(directory) else { return false }
        return resolvedInstallationDirectories.contains(real)
    }

    private static let resolvedInstallationDirectories: Set<String> = Set(installationDirectories.compactMap(CheckedPath.realPath))

    /// The directories named outside the installation (items 1 and 2), in search order; empty when
    /// external plugins are off. A relative entry is skipped here (searching refuses it).
    func externalDirectories() -> [String] {
        guard allowExternal else { return [] }
        let named = environmentPath.map { $0.split(separator: ":").map(String.init) } ?? []
        return (directories + named).filter { $0.hasPrefix("/") }
    }

    static let systemDirectories = ["/usr/local/lib/keybay/plugins", "/usr/lib/keybay/plugins"]

    static let executablePath: String? = {
        var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        let n = readlink("/proc/self/exe", &buffer, buffer.count - 1)
        guard n > 0 else { return nil }
        return String(decoding: buffer[0..<n].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }()

    static let executableDirectory: String? = {
        guard let path = executablePath, let slash = path.lastIndex(of: "/") else { return nil }
        return slash == path.startIndex ? "/" : String(path[..<slash])
    }()

    /// The directory of the shared library this code is in, when it is not the executable
    /// (a host linking `libkeybay.so.1`); nil when Keybay is linked into the executable.
    static let libraryDirectory: String? = {
        guard let image = keybay_image_path() else { return nil }
        defer { free(image) }
        let path = String(cString: image)
        guard let slash = path.lastIndex(of: "/"), path != executablePath else { return nil }
        return slash == path.startIndex ? "/" : String(path[..<slash])
    }()

    /// Folds `a/b/../c` textually (the directory is checked on disk afterwards anyway).
    static func normalise(_ path: String) -> String {
        var parts: [Substring] = []
        for p in path.split(separator: "/") {
            if p == "." { continue }
            if p == ".." { if !parts.isEmpty { parts.removeLast() }; continue }
            parts.append(p)
        }
        return "/" + parts.joined(separator: "/")
    }

    /// Plugin ids: `[a-z0-9][a-z0-9._-]{0,63}`, checked before an id becomes a file name.
    public static func isValidPluginID(_ id: String) -> Bool { MethodNames.isValidPluginID(id) }

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
