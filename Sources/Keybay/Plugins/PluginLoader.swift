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
        try CheckedPath.plugin.check(path, directory: directory)
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
