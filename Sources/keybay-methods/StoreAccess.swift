// SPDX-License-Identifier: Apache-2.0
import Glibc
import Keybay

/// How a command reaches its store: the configuration its options make, the plugin search, and
/// the open by the library's policy.
extension Command {
    static func search(_ a: Arguments) -> KeybayPluginSearch {
        KeybayPluginSearch(directories: a.pluginDirectories)
    }

    /// The command's configuration; only a command the table marks `servedByAgent` may be served
    /// by the agent (`throughAgent` false: none is).
    static func configuration(_ a: Arguments, throughAgent: Bool? = nil) throws -> KeybayConfiguration {
        guard let app = a.app ?? getenv("KEYBAY_APP_ID").map({ String(cString: $0) }), !app.isEmpty else {
            throw Arguments.UsageError(message: "no application id: pass --app ID or set KEYBAY_APP_ID")
        }
        var config = try KeybayConfiguration(applicationID: app)
        config.pluginSearch = search(a)
        // $KEYBAY_ROOT is the configuration's own default; --root overrides it.
        if let root = a.root {
            guard root == KeybayConfiguration.automaticRoot || KeybayPluginSearch.isValidPluginID(root) else {
                throw Arguments.UsageError(message: "'\(root)' is not a root plugin id (file-root, secret-service, auto, ...)")
            }
            config.rootPlugin = root
        }
        // An explicit --root that disagrees with an existing store is refused; $KEYBAY_ROOT only
        // chooses the root of new stores.
        config.requireRootPlugin = a.root != nil
        if !(throughAgent ?? CommandTable.named(a.command ?? "")?.servedByAgent ?? false) { config.agentSocket = nil }
        return config
    }

    /// Opens the store by the library's policy (`KeybayOpenPolicy`): `--method`, the store's only
    /// method, or one the user picks; never tries credentials in turn. A wrong secret typed into
    /// a pinentry is asked for again, with the error shown, up to three tries in all (gpg-agent's
    /// way); one from a descriptor or the terminal fails at once (`mayAskAgain`).
    static func unlock(_ a: Arguments, _ interaction: CommandInteraction, createIfAbsent: Bool,
                       requireMethod: Bool = false, throughAgent: Bool? = nil) throws -> KeybaySession {
        let config = try configuration(a, throughAgent: throughAgent)
        // The unlock descriptors are the named method's, before its ceremony asks.
        if let method = a.method { interaction.unlocks(with: method) }
        let session = try KeybayStore.open(config, policy: KeybayOpenPolicy(method: a.method, createIfAbsent: createIfAbsent, tries: 3),
                                           interaction: interaction)
        if requireMethod && !session.isProtected {
            session.close()
            throw KeybayError(.protectionMismatch, "\(config.storePath) has no unlock methods to verify")
        }
        return session
    }
}
