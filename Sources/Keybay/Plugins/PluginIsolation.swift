// SPDX-License-Identifier: Apache-2.0
import CKeybayPlugin
import CKeybayPluginIsolation
import Glibc

/// Where one plugin file runs, decided before any of its code runs
/// (``KeybayPluginSearch`` `placement(of:kind:foundIn:)`).
enum PluginPlacement: String {
    case inProcess = "in-process"
    case isolated
}

/// Starting a method plugin in its helper.
enum PluginIsolation {
    /// The helper, `keybay-plugin-host`: `$KEYBAY_PLUGIN_HOST` when set (an absolute path, for a
    /// host installed apart from Keybay), else `<exe>/../libexec/keybay/`, `<lib>/../libexec/keybay/`,
    /// the system libexec directories, beside the executable and the library (development
    /// builds), then the plugin directories the host or `KEYBAY_PLUGIN_PATH` names (a host built
    /// against a build directory). It is checked like a plugin file (owner, mode, no link out of
    /// its directory).
    static func helperPath(search: KeybayPluginSearch) -> String? {
        if let named = getenv("KEYBAY_PLUGIN_HOST").map({ String(cString: $0) }) {
            guard named.hasPrefix("/"), let slash = named.lastIndex(of: "/"), access(named, X_OK) == 0 else { return nil }
            return try? PluginLoader.checkedPath(named, directory: slash == named.startIndex ? "/" : String(named[..<slash]))
        }
        return installedHelperPath ?? checkedHelper(in: search.externalDirectories())
    }

    private static let helperName = "keybay-plugin-host"

    /// The helper of the installation, or of the build directory the program runs from.
    private static let installedHelperPath: String? = {
        var candidates: [String] = []
        for base in [KeybayPluginSearch.executableDirectory, KeybayPluginSearch.libraryDirectory].compactMap({ $0 }) {
            candidates.append(KeybayPluginSearch.normalise(base + "/../libexec/keybay"))
        }
        candidates += ["/usr/local/libexec/keybay", "/usr/libexec/keybay"]
        candidates += [KeybayPluginSearch.executableDirectory, KeybayPluginSearch.libraryDirectory].compactMap { $0 }
        return checkedHelper(in: candidates)
    }()

    private static func checkedHelper(in directories: [String]) -> String? {
        for directory in directories {
            let path = directory + "/" + helperName
            guard access(path, X_OK) == 0, let checked = try? PluginLoader.checkedPath(path, directory: directory) else { continue }
            return checked
        }
        return nil
    }

    /// The bound on one call while the plugin runs: `KEYBAY_PLUGIN_TIMEOUT` seconds (1–86400),
    /// default 120.
    static var callTimeoutMilliseconds: UInt32 {
        if let text = getenv("KEYBAY_PLUGIN_TIMEOUT").map({ String(cString: $0) }), let seconds = UInt32(text), (1...86_400).contains(seconds) {
            return seconds * 1000
        }
        return 120_000
    }

    /// Starts the helper for the checked plugin file `resolved`: the plugin is loaded only in its
    /// sandbox, whatever kind it turns out to be.
    static func start(_ resolved: String, displayPath: String, search: KeybayPluginSearch) throws -> OpaquePointer {
        guard let helper = helperPath(search: search) else {
            throw KeybayError(.pluginFailed, "cannot run plugin \(displayPath) isolated: keybay-plugin-host is not installed (libexec/keybay), is not in a plugin directory, or KEYBAY_PLUGIN_HOST names no usable file; KEYBAY_PLUGIN_ISOLATION=none runs plugins in process")
                .with(path: displayPath, reason: "plugin-host-missing")
        }
        var line = [CChar](repeating: 0, count: 512), reason = [CChar](repeating: 0, count: 48)
        var refused: Int32 = 0
        guard let isolated = keybay_isolation_start(helper, resolved, callTimeoutMilliseconds, &line, line.count, &reason, reason.count, &refused) else {
            let text = line.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
            let token = reason.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
            throw KeybayError(refused != 0 ? .pluginRefused : .pluginFailed, refused != 0 ? "\(text); refusing to load it" : text)
                .with(path: displayPath, reason: token)
        }
        return isolated
    }
}
