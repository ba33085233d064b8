// SPDX-License-Identifier: Apache-2.0
import CKeybayImage
import CKeybayPlugin
import Glibc

/// The search itself: the order of its directories, where a plugin found in one runs, and
/// where this program and its library are (the type is declared in API/Vocabulary).
extension KeybayPluginSearch {
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
}
