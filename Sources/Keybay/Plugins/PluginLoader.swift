// SPDX-License-Identifier: Apache-2.0
import CKeybayPlugin
import CKeybayPluginIsolation
import Glibc
import Synchronization

/// Finds, checks and loads plugins. A plugin file is accepted only if it and its directory are
/// owned by this user or root, writable by nobody else, and the file does not lead (through a
/// link) out of its directory; then its entry symbol, ABI version, struct size, id and kind are
/// checked. Loaded plugins stay loaded for the life of the process (Swift plugins cannot be
/// unloaded safely), cached by their resolved path.
enum PluginLoader {
    private static let cache = Mutex<[String: LoadedPlugin]>([:])

    /// Loads plugin `id` of `kind` (nil: either kind), searching `search` in order; the first
    /// directory holding `libkeybay-<id>.so` decides (a refused file is an error, not a reason
    /// to look further).
    static func load(id: String, kind: keybay_plugin_kind?, search: KeybayPluginSearch) throws -> LoadedPlugin {
        try KeybayPluginSearch.validatePluginID(id)
        let name = KeybayPluginSearch.fileName(for: id)
        let directories = try search.orderedDirectories()
        for directory in directories {
            let candidate = directory + "/" + name
            var st = stat()
            guard lstat(candidate, &st) == 0 else { continue }
            do {
                let resolved = try checkedPath(candidate, directory: directory)
                let placement = search.placement(of: id, kind: kind, foundIn: directory)
                let plugin = try loaded(resolved, displayPath: candidate, placement: placement, search: search)
                if placement == .isolated, kind == KEYBAY_KIND_METHOD, plugin.isRoot {
                    throw KeybayError(.pluginFailed, "plugin \(candidate) says in its sandbox that it is a root plugin, but it was asked for as a method; it is not run")
                        .with(path: candidate, reason: "kind-mismatch")
                }
                try plugin.expect(id: id, kind: kind)
                // A listing loads an installed file in process to learn what it is; a method a host
                // would run isolated is then used isolated, as the host would.
                if kind == nil, placement == .inProcess, !plugin.isRoot, search.isolation == .isolated,
                   !search.inProcessMethodPlugins.contains(id) {
                    return try load(id: id, kind: KEYBAY_KIND_METHOD, search: search)
                }
                return plugin
            } catch let e as KeybayError {
                throw e.with(path: candidate, pluginID: id)
            }
        }
        throw KeybayError(.pluginNotFound, "plugin '\(id)' not found: no \(name) in \(directories.joined(separator: ", ")) (KEYBAY_PLUGIN_PATH adds directories to search)")
            .with(pluginID: id)
    }

    /// The method plugin `id` on `search`.
    static func loadMethod(_ id: String, search: KeybayPluginSearch) throws -> LoadedPlugin {
        try load(id: id, kind: KEYBAY_KIND_METHOD, search: search)
    }

    /// The ids of every plugin file found in the search path (first occurrence wins).
    static func discover(search: KeybayPluginSearch) throws -> [(id: String, path: String)] {
        var seen: Set<String> = []
        var found: [(String, String)] = []
        for directory in try search.orderedDirectories() {
            guard let names = directoryEntries(directory) else { continue }
            for name in names.sorted() {
                guard let id = KeybayPluginSearch.pluginID(inFileName: name),
                      KeybayPluginSearch.isValidPluginID(id), !seen.contains(id) else { continue }
                seen.insert(id)
                found.append((id, directory + "/" + name))
            }
        }
        return found
    }

    /// Checks the directory and the file and returns the file's resolved path.
    static func checkedPath(_ path: String, directory: String) throws -> String {
        guard let realDirectory = realPath(directory) else {
            throw KeybayError(.pluginRefused, "cannot resolve plugin directory \(directory)").with(path: directory, reason: "unresolved")
        }
        try checkOwnerAndMode(realDirectory, what: "plugin directory", shown: directory, directory: true)
        guard let realFile = realPath(path) else {
            throw KeybayError(.pluginRefused, "cannot resolve plugin \(path) (a dangling link?)").with(path: path, reason: "unresolved")
        }
        let fileDirectory = realFile.lastIndex(of: "/").map { String(realFile[..<$0]) } ?? ""
        guard fileDirectory == realDirectory || (realDirectory == "/" && fileDirectory.isEmpty) else {
            throw KeybayError(.pluginRefused, "plugin \(path) is a link leading out of \(directory) (to \(realFile)); refusing to load it").with(path: path, reason: "link-out")
        }
        try checkOwnerAndMode(realFile, what: "plugin", shown: path, directory: false)
        return realFile
    }

    private static func checkOwnerAndMode(_ path: String, what: String, shown: String, directory: Bool) throws {
        var st = stat()
        guard stat(path, &st) == 0 else { throw KeybayError.posix("cannot inspect \(what)", shown) }
        if directory ? (st.st_mode & S_IFMT) != S_IFDIR : (st.st_mode & S_IFMT) != S_IFREG {
            throw KeybayError(.pluginRefused, "\(what) \(shown) is not a \(directory ? "directory" : "regular file"); refusing to load from it").with(path: shown, reason: "wrong-type")
        }
        if st.st_uid != geteuid() && st.st_uid != 0 {
            throw KeybayError(.pluginRefused, "\(what) \(shown) is owned by uid \(st.st_uid), neither this user nor root; refusing to load from it").with(path: shown, reason: "not-owner")
        }
        if st.st_mode & 0o022 != 0 {
            throw KeybayError(.pluginRefused, "\(what) \(shown) is writable by group or others (mode \(String(st.st_mode & 0o777, radix: 8))); refusing to load from it").with(path: shown, reason: "mode")
        }
    }

    private static func realPath(_ path: String) -> String? {
        guard let p = realpath(path, nil) else { return nil }
        defer { free(p) }
        return String(cString: p)
    }

    /// The plugin file `resolved` where `placement` says, from the cache or loaded now.
    private static func loaded(_ resolved: String, displayPath: String, placement: PluginPlacement, search: KeybayPluginSearch) throws -> LoadedPlugin {
        let key = resolved + "|" + placement.rawValue
        if let hit = cache.withLock({ $0[key] }) { return hit }
        let plugin = try placement == .isolated ? openIsolated(resolved, displayPath: displayPath, search: search) : open(resolved, displayPath: displayPath)
        return cache.withLock { table in
            if let raced = table[key] { return raced }
            table[key] = plugin
            return plugin
        }
    }

    /// The plugin in its helper. One that says it is a root there is described from what it said
    /// and never run: a root runs in process only when asked for as a root.
    private static func openIsolated(_ path: String, displayPath: String, search: KeybayPluginSearch) throws -> LoadedPlugin {
        let isolated = try PluginIsolation.start(path, displayPath: displayPath, search: search)
        let descriptor = keybay_isolation_descriptor(isolated)!
        guard descriptor.pointee.kind == KEYBAY_KIND_ROOT.rawValue else {
            return try LoadedPlugin(descriptor: descriptor, path: displayPath, isolation: isolated)
        }
        defer { keybay_isolation_stop(isolated) }
        return try LoadedPlugin(describing: descriptor, path: displayPath)
    }

    private static func open(_ path: String, displayPath: String) throws -> LoadedPlugin {
        guard let handle = dlopen(path, RTLD_NOW | RTLD_LOCAL) else {
            let reason = dlerror().map { String(cString: $0) } ?? "unknown error"
            throw KeybayError(.pluginRefused, "cannot load plugin \(displayPath): \(reason)").with(path: displayPath, reason: "dlopen-failed")
        }
        // Never dlclose: a Swift plugin cannot be unloaded safely, and a refused one costs little.
        guard let symbol = dlsym(handle, KEYBAY_PLUGIN_ENTRY_SYMBOL) else {
            throw KeybayError(.pluginRefused, "plugin \(displayPath) has no entry symbol \(KEYBAY_PLUGIN_ENTRY_SYMBOL)").with(path: displayPath, reason: "no-entry-symbol")
        }
        let entry = unsafeBitCast(symbol, to: keybay_plugin_entry_fn.self)
        guard let descriptor = entry() else {
            throw KeybayError(.pluginRefused, "plugin \(displayPath) returned no descriptor").with(path: displayPath, reason: "no-descriptor")
        }
        return try LoadedPlugin(descriptor: descriptor, path: displayPath)
    }
}
