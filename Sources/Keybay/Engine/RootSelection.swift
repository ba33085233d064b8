// SPDX-License-Identifier: Apache-2.0
import CKeybayPlugin

/// Which root plugin a store uses: the one its bootstrap names, or for a new store the
/// configured one, with `automaticRoot` resolved by the roots' probes. No root is named here:
/// the candidates come from the settings.
enum RootSelection {
    /// The keyring of root `id` for this store: its plugin, and the storage domain, whose profile
    /// is the root id.
    static func keyring(root id: String, _ settings: StoreSettings, interaction: any KeybayInteraction) throws -> Keyring {
        let plugin = try PluginLoader.load(id: id, kind: KEYBAY_KIND_ROOT, search: settings.pluginSearch)
        let assurance = plugin.id == settings.sandboxRoot ? StorageDomain.assuranceSandboxAttested : StorageDomain.assuranceHostDeclared
        let domain = StorageDomain.derive(identity: settings.applicationID, assurance: assurance, profile: plugin.id,
                                          location: "keybay/\(settings.applicationID)/")
        var root = PluginRoot(plugin: plugin, applicationID: settings.applicationID, stateHome: settings.stateHome, domain: domain)
        root.interaction = interaction
        return Keyring(root: root, domain: domain, context: settings.storePath)
    }

    /// The root the store in `read` was created with, as its bootstrap names it (`RootTag`). A
    /// configuration that insists on another root is refused.
    static func storeRoot(of read: StoreRead, _ settings: StoreSettings) throws -> String {
        let root = try RootTag.root(of: providerState(of: read.bytes, settings), context: settings.storePath)
        let asked = settings.rootPlugin
        if settings.requireRootPlugin && asked != StoreSettings.automaticRoot && asked != root {
            throw KeybayError(.invalidArgument, "the store at \(settings.storePath) is on the root \(root), not \(asked): a store always opens with the root it was created with (root move \(asked) moves it)")
                .with(path: settings.storePath, pluginID: root, reason: "other-root")
        }
        return root
    }

    /// The provider state in a store file's bootstrap.
    static func providerState(of bytes: [UInt8], _ settings: StoreSettings) throws -> [UInt8] {
        var reader = ByteReader(bytes, context: settings.storePath)
        return try Bootstrap.decode(&reader).providerState
    }

    /// `id`, or for `automaticRoot` the first of the settings' `automaticRoots` that loads and
    /// whose probe says it is usable; `.rootUnavailable` when none is.
    static func resolve(_ id: String, _ settings: StoreSettings) throws -> String {
        guard id == StoreSettings.automaticRoot else { return id }
        var reasons: [String] = []
        for candidate in settings.automaticRoots {
            do {
                let plugin = try PluginLoader.load(id: candidate, kind: KEYBAY_KIND_ROOT, search: settings.pluginSearch)
                guard let reason = plugin.probe() else { return candidate }
                reasons.append("\(candidate): \(reason)")
            } catch let e as KeybayError {
                reasons.append("\(candidate): \(e.message)")
            }
        }
        throw KeybayError(.rootUnavailable, "no root of auto (\(settings.automaticRoots.joined(separator: ", "))) is usable here: \(reasons.joined(separator: "; "))")
    }
}
