// SPDX-License-Identifier: Apache-2.0
// In the vocabulary below every layer, beside KeybayError: an error lists methods
// (``KeybayError/methods``) and an interaction chooses among them. What reads them from a store is
// in API/KeybayMethod+Store.swift.
/// One enrolled unlock method, as listed without calling any plugin (``KeybayAuth/list()``,
/// ``KeybayStatus/methods``).
public struct KeybayMethod: Sendable, Equatable {
    /// 16 random bytes as 32 lowercase hex characters.
    public let id: String
    /// The plugin that unlocks it, e.g. `passphrase`.
    public let plugin: String
    /// The label given at enrollment (the plugin id unless one was given). It may hold characters
    /// a display should escape when written by an older version (``misleadsWhenShown(_:)``).
    public let label: String
    /// Whether its plugin needs hardware present to unlock (a security key, a smart card), as
    /// the plugin declares; nil where it was not read (``KeybayStatus/methods``, ``KeybayAuth/list()``)
    /// or the plugin could not be loaded. Filled in for ``KeybayInteraction/chooseMethod(_:)``
    /// and ``KeybayStore/describeMethods(_:)``.
    public internal(set) var needsDevice: Bool?

    init(id: String, plugin: String, label: String, needsDevice: Bool? = nil) {
        self.id = id
        self.plugin = plugin
        self.label = label
        self.needsDevice = needsDevice
    }
}
