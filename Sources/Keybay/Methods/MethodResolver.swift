// SPDX-License-Identifier: Apache-2.0
import CKeybayPlugin

/// Where every method comes from: a method id names its plugin, found on the plugin search the
/// configuration gives (the one place the core loads a plugin as a method; `LayeringTests`
/// checks it). Root plugins are refused as methods, unknown ids are `.pluginNotFound`, and a
/// refused file `.pluginRefused`, as the loader decides.
struct MethodResolver: Sendable {
    let search: KeybayPluginSearch

    /// The method plugin `pluginID`.
    func method(_ pluginID: String) throws -> any MethodProvider {
        PluginMethod(plugin: try PluginLoader.load(id: pluginID, kind: KEYBAY_KIND_METHOD, search: search))
    }
}
