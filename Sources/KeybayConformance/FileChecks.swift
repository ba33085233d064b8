// SPDX-License-Identifier: Apache-2.0
import CKeybayPlugin
import Glibc
import Keybay

/// The checks of any file given: it exists and is named as a plugin (listed only when they
/// fail), then its id, that it loads, and its descriptor's texts.
enum FileChecks {
    static let table: [Check] = [
        Check("exists", { "\($0.path) exists" }, appliesTo: Applies.always, quietWhenPassing: true) { run in
            var st = stat()
            guard lstat(run.path, &st) == 0 else { return Verdict.fail("lstat: \(String(cString: strerror(errno)))").then(.unlisted) }
            return .pass()
        },
        Check("file-name", "file name is libkeybay-<id>.so", appliesTo: Applies.always, quietWhenPassing: true) { run in
            run.id == nil ? Verdict.fail("the file is named '\(run.fileName)'").then(.unlisted) : .pass()
        },
        Check("id", { "id '\($0.id ?? "")' matches [a-z0-9][a-z0-9._-]{0,63}" }, appliesTo: Applies.always) { run in
            .check(KeybayPluginSearch.isValidPluginID(try run.needs(run.id, "id")), "use lowercase letters, digits, '.', '_' and '-', at most 64")
        },
        Check("loads", "loads: file and directory checks, entry symbol, ABI version \(KEYBAY_PLUGIN_ABI_VERSION), descriptor size, id, kind",
              appliesTo: Applies.always) { run in
            do {
                let plugin = try PluginUnderCheck(id: try run.needs(run.id, "id"), directory: directory(of: run.path), isolation: run.isolation)
                run.plugin = plugin
                // Where the checks below run it, as a host would (KEYBAY_PLUGIN_ISOLATION).
                return .pass(plugin.isIsolated ? "isolated, in keybay-plugin-host" : "in process")
            } catch {
                return Verdict.fail("\(error)").then(.unlisted)
            }
        },
        Check("name-version", "name and version are set", appliesTo: Applies.always) { run in
            let plugin = try run.needs(run.plugin, "loaded plugin")
            let named = "name '\(plugin.name)', version '\(plugin.version)'"
            return .check(!plugin.name.isEmpty && !plugin.version.isEmpty, named, shown: named)
        },
        Check("options", "options have names and help", appliesTo: Applies.always) { run in
            let bad = try run.needs(run.plugin, "loaded plugin").options.enumerated().filter { $0.element.name.isEmpty || $0.element.help.isEmpty }
            return .check(bad.isEmpty, bad.map { "option \($0.offset + 1) ('\($0.element.name)') has \($0.element.name.isEmpty ? "no name" : "no help")" }
                .joined(separator: "; "))
        },
    ]

    /// The absolute directory holding `path` (the loader is given that directory alone).
    static func directory(of path: String) -> String {
        let directory = path.contains("/") ? String(path[..<path.lastIndex(of: "/")!]) : "."
        return directory.hasPrefix("/") ? directory : (currentDirectory() + "/" + directory)
    }

    private static func currentDirectory() -> String {
        var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        return getcwd(&buffer, buffer.count).map { String(cString: $0) } ?? "."
    }
}
