// SPDX-License-Identifier: Apache-2.0
import CKeybayPlugin
import Glibc

/// What a plugin found on the search path says about itself.
public struct KeybayPluginInfo: Sendable {
    /// The plugin id, from its file name `libkeybay-<id>.so`.
    public let id: String
    /// The plugin file's path.
    public let path: String
    /// `root` or `method`; nil if the plugin was refused.
    public let kind: String?
    /// The plugin's display name; nil if it was refused.
    public let name: String?
    /// The plugin's version text; nil if it was refused.
    public let version: String?
    /// Why not, when not available or refused.
    public let reason: String?
    /// The options the plugin takes (for enrollment, or a root's creation), with a help line
    /// each; empty if it was refused.
    public let options: [(name: String, help: String)]
    /// The plugin says its method needs hardware to be present (a security key).
    public let needsDevice: Bool
    /// Usable here (its probe said so; a root without a probe is usable once loaded).
    public var available: Bool { reason == nil }

    init(_ plugin: LoadedPlugin, path: String, reason: String?) {
        (id, self.path, kind, name, version, self.reason, options, needsDevice) =
            (plugin.id, path, plugin.isRoot ? "root" : "method", plugin.name, plugin.version, reason, plugin.options, plugin.needsDevice)
    }

    init(refused id: String, path: String, reason: String) {
        (self.id, self.path, kind, name, version, self.reason, options, needsDevice) = (id, path, nil, nil, nil, reason, [], false)
    }
}

/// The plugins on the search path (``KeybayPluginSearch``), without a store. Loading a plugin
/// runs its code in this process: only plugins that pass the loader's checks (owner, mode,
/// directory, descriptor) are loaded.
///
/// Every entry point is synchronous and may be called from any thread.
public enum KeybayPlugins {
    /// Every plugin on the search path, loaded and probed. Probing never prompts.
    ///
    /// - Parameter search: Where to look.
    /// - Returns: One entry per plugin file found; a plugin that was refused or cannot work
    ///   here says why in ``KeybayPluginInfo/reason``.
    /// - Throws: `.invalidArgument` for a search directory that is not absolute.
    public static func list(search: KeybayPluginSearch = KeybayPluginSearch()) throws -> [KeybayPluginInfo] {
        try PluginLoader.discover(search: search).map { found in
            do {
                let plugin = try PluginLoader.load(id: found.id, kind: nil, search: search)
                return KeybayPluginInfo(plugin, path: found.path, reason: plugin.probe())
            } catch {
                return KeybayPluginInfo(refused: found.id, path: found.path, reason: (error as? KeybayError)?.message ?? "\(error)")
            }
        }
    }

    /// The ids and paths of every plugin on the search path, without loading any.
    ///
    /// - Parameter search: Where to look.
    /// - Returns: Each plugin's id and the path of the file that would be loaded for it.
    /// - Throws: What ``list(search:)`` throws.
    public static func discover(search: KeybayPluginSearch = KeybayPluginSearch()) throws -> [(id: String, path: String)] {
        try PluginLoader.discover(search: search)
    }

    /// Finds, checks and loads one plugin (no probe); returns what it says about itself.
    ///
    /// - Parameters:
    ///   - id: The plugin id (``KeybayPluginSearch/isValidPluginID(_:)``).
    ///   - search: Where to look.
    /// - Returns: What the plugin says about itself (`reason` is nil).
    /// - Throws: `.invalidArgument` for an invalid id or search directory, `.pluginNotFound`,
    ///   `.pluginRefused` (a check failed: owner, mode, a link out of its directory, the entry
    ///   symbol, the descriptor).
    @discardableResult
    public static func load(_ id: String, search: KeybayPluginSearch = KeybayPluginSearch()) throws -> KeybayPluginInfo {
        let plugin = try PluginLoader.load(id: id, kind: nil, search: search)
        return KeybayPluginInfo(plugin, path: plugin.path, reason: nil)
    }

    /// Runs the calibration of a method plugin that tunes a cost to this machine (it declares
    /// `KEYBAY_FLAG_CALIBRATES`; the passphrase plugin does): its enrollment without a store, on
    /// a throwaway secret, then one timed unlock with the parameters it chose.
    ///
    /// Synchronous: it runs for as long as the calibration takes (seconds) on the calling
    /// thread. The plugin's messages (calibration progress) go to `interaction`; its questions
    /// for a secret are answered by Keybay with a fixed throwaway text, never asked.
    /// - Parameters:
    ///   - id: A method plugin that calibrates.
    ///   - options: Enrollment options, as for `KeybayAuth.add(plugin:options:label:)`.
    ///   - search: Where to look.
    ///   - interaction: Receives the plugin's messages; its `isCancelled` ends the calibration.
    /// - Returns: The plugin's description of the parameters it chose, and how long one unlock
    ///   with them took, in seconds.
    /// - Throws: `.unsupported` for a plugin that does not calibrate, `.cancelled`, and what
    ///   ``load(_:search:)`` throws.
    public static func benchmark(plugin id: String, options: [(String, String)] = [], search: KeybayPluginSearch = KeybayPluginSearch(),
                                 interaction: any KeybayInteraction) throws -> (parameters: String, unlockSeconds: Double) {
        let plugin = try MethodResolver(search: search).method(id)
        guard plugin.calibrates else {
            throw KeybayError(.unsupported, "\(id) does not calibrate a cost to this machine; benchmark runs only plugins that do")
                .with(pluginID: id, reason: "no-calibration")
        }
        let throwaway = ThrowawaySecret(forwardingTo: interaction)
        let (params, _, grants) = try plugin.enroll(options: options, interaction: throwaway, about: .none)
        var start = timespec(), end = timespec()
        clock_gettime(CLOCK_MONOTONIC, &start)
        _ = try plugin.unwrap(params: params, interaction: throwaway, about: .unlocking(grants))
        clock_gettime(CLOCK_MONOTONIC, &end)
        let seconds = Double(end.tv_sec - start.tv_sec) + Double(end.tv_nsec - start.tv_nsec) / 1e9
        return (try plugin.describe(params: params), seconds)
    }
}

/// Supplies a fixed, meaningless secret and passes messages on (for benchmarking).
private struct ThrowawaySecret: KeybayInteraction {
    let forwardingTo: any KeybayInteraction
    func askSecret(_ request: KeybaySecretRequest, into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
        let text = Array("keybay benchmark".utf8)
        buffer.copyBytes(from: text)
        return text.count
    }
    func message(_ text: String, level: KeybayMessageLevel) { forwardingTo.message(text, level: level) }
    var isCancelled: Bool { forwardingTo.isCancelled }
}
