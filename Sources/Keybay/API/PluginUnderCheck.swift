// SPDX-License-Identifier: Apache-2.0
import CKeybayPlugin

/// What `plugin-check` (the KeybayConformance target) may do with one plugin file: load it
/// through the real loader and call each operation as the core does. Package access: the CLI's
/// conformance run uses it; the library's public interface has none of it.
package final class PluginUnderCheck: @unchecked Sendable {
    private let plugin: LoadedPlugin

    /// Loads `libkeybay-<id>.so` from `directory` (absolute) alone, with every loader check, where
    /// a host would run it under `isolation`. A root plugin outside the installation is only
    /// described from its sandbox (no listing runs a third-party file in process): its operations
    /// are checked only with isolation off.
    package init(id: String, directory: String, isolation: KeybayPluginIsolation = .fromEnvironment) throws {
        let loaded = try PluginLoader.load(id: id, kind: nil, search: KeybayPluginSearch(directories: [directory], environmentPath: nil, isolation: isolation))
        guard !loaded.isDescribedOnly else {
            throw KeybayError(.unsupported, "plugin \(loaded.path) is a root plugin (it says so in its sandbox), and a root runs in process: plugin-check runs a root outside the installation only with isolation off (KEYBAY_PLUGIN_ISOLATION=none)")
                .with(path: loaded.path, pluginID: id, reason: "root-not-isolated")
        }
        plugin = loaded
    }

    /// The id in a `libkeybay-<id>.so` file name (not yet checked), or nil: the loader's rule.
    package static func id(inFileName name: String) -> String? { KeybayPluginSearch.pluginID(inFileName: name) }

    package var name: String { plugin.name }
    package var version: String { plugin.version }
    package var options: [(name: String, help: String)] { plugin.options }
    package var isRoot: Bool { plugin.isRoot }
    /// The plugin runs in its sandboxed helper (a method plugin, unless isolation is off).
    package var isIsolated: Bool { plugin.isIsolated }
    package var isInteractive: Bool { plugin.isInteractive }
    /// The root offers `root_protection`.
    package var offersProtection: Bool { plugin.descriptor.pointee.root_protection != nil }

    /// `probe` with `interaction` as its host (it must never ask).
    package func probe(_ interaction: any KeybayInteraction) throws {
        try plugin.call(interaction, "probe") { d, h in d.pointee.probe(h) }
    }

    /// An enrollment: its parameters, M, and the files the host opened for it (open_file).
    package struct Enrolled: Sendable {
        package let params: [UInt8]
        package let secret: SecureBytes
        let grants: [FileGrant]
    }

    package func enroll(options: [(String, String)], interaction: any KeybayInteraction) throws -> Enrolled {
        let (params, secret, grants) = try plugin.enroll(options: options, interaction: interaction)
        return Enrolled(params: params, secret: secret, grants: grants)
    }

    /// unwrap of `params` (the enrolled ones unless given), the host opening the files `enrolled` was granted.
    package func unwrap(_ enrolled: Enrolled, params: [UInt8]? = nil, interaction: any KeybayInteraction, forVerification: Bool = false) throws -> SecureBytes {
        try plugin.unwrap(params: params ?? enrolled.params, interaction: interaction, about: .unlocking(enrolled.grants), forVerification: forVerification)
    }

    package func describe(params: [UInt8]) throws -> String {
        try plugin.describe(params: params)
    }

    /// Describes `params`, hands the buffer back to `free_buffer` unread and returns what
    /// `free_buffer` left in it; nil when describe failed or handed out no buffer (after a
    /// failure the out-buffer is the plugin's, never freed by the host).
    package func bufferLeftByFreeBuffer(describing params: [UInt8]) -> (dataLeft: Bool, length: Int)? {
        var text = keybay_buffer()
        let described = (try? plugin.call(NonInteractive(), "could not describe its parameters") { d, h in LoadedPlugin.describe(d, h, params, &text) }) != nil
        guard described, text.data != nil else { return nil }
        plugin.discard(&text)
        return (text.data != nil, text.length)
    }

    /// The plugin as the root of application `applicationID` with its state under `stateHome`.
    package func root(applicationID: String, stateHome: String, domain: [UInt8]) -> RootUnderCheck {
        RootUnderCheck(root: PluginRoot(plugin: plugin, applicationID: applicationID, stateHome: stateHome, domain: domain))
    }
}

/// A root plugin's operations as the core calls them (provider states are the core's, tagged).
package struct RootUnderCheck {
    fileprivate let root: PluginRoot

    package var keepsFloor: Bool { root.keepsFloor }
    package var location: String { root.location }
    package var protection: String? { root.protection }
    package func exists() throws -> Bool { try root.exists() }
    package func create() throws -> [UInt8] { try root.create(options: .init()) }
    package func seal(_ secret: SecureBytes, aad: [UInt8], providerState: [UInt8]) throws -> [UInt8] {
        try root.seal(secret, aad: aad, providerState: providerState)
    }
    package func open(_ sealed: [UInt8], aad: [UInt8], providerState: [UInt8]) throws -> (package: SecureBytes, floor: UInt64) {
        try root.open(sealed[...], aad: aad, providerState: providerState)
    }
    package func raiseFloor(to epoch: UInt64, providerState: [UInt8]) throws { try root.raiseFloor(to: epoch, providerState: providerState) }
    package func reset() throws { try root.reset() }
}
