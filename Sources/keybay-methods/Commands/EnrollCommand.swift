// SPDX-License-Identifier: Apache-2.0
import Keybay

/// `enroll PLUGIN [--label L] [--opt NAME=VALUE ...]`, and `enroll PLUGIN --help`.
extension Command {
    /// Adds a method to the store; with nothing on disk, creates the store and its first method
    /// in one write, after the ceremony (a failed one leaves nothing behind).
    static func enroll(_ c: Context) throws -> Int32 {
        let a = c.a
        try a.expect(["PLUGIN"])
        let plugin = a.positionals[0]
        // Invalid input is refused before anything is read or created.
        try KeybayPluginSearch.validatePluginID(plugin)
        if let label = a.label { try KeybayMethod.validateLabel(label) }
        c.interaction.enrolling = plugin
        let session: KeybaySession
        do {
            session = try unlock(a, c.interaction, createIfAbsent: false)
        } catch let e as KeybayError where e.code == .storeNotFound && a.method == nil {
            let prepared = try KeybayStore.prepare(configuration(a), enrolling: plugin, options: a.options, label: a.label,
                                                   interaction: c.interaction)
            try StoredEnrollment.commitAndPrint(c, prepared, enrolledAs: "created the store with", undone: "the store it created was removed again")
            return Exit.success
        }
        defer { session.close() }
        let prepared = try session.auth.prepare(plugin: plugin, options: a.options, label: a.label)
        try StoredEnrollment.commitAndPrint(c, prepared, enrolledAs: "enrolled",
                                            undone: "the \(prepared.method.plugin) method \(prepared.method.id) was removed again")
        return Exit.success
    }

    /// `enroll PLUGIN --help`: the enroll usage and the options that plugin declares (loading it,
    /// without a probe).
    static func enrollHelp(_ a: Arguments, plugin id: String) throws -> Int32 {
        try KeybayPluginSearch.validatePluginID(id)
        let plugin = try KeybayPlugins.load(id, search: search(a))
        guard plugin.kind == "method" else {
            throw KeybayError(.invalidArgument, "\(id) at \(plugin.path) is a \(plugin.kind ?? "refused") plugin, not an unlock method")
        }
        var text = "usage: keybay-methods enroll \(id) [--label L] [--opt NAME=VALUE ...]\n"
        text += "\(id): \(plugin.name ?? id) \(plugin.version ?? "") (\(plugin.path))\n"
        text += plugin.options.isEmpty ? "it takes no --opt options\n"
            : "options:\n" + plugin.options.map { "  --opt \($0.name)=…  \($0.help)\n" }.joined()
        Output.out(text)
        return Exit.success
    }
}
