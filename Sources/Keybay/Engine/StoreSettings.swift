// SPDX-License-Identifier: Apache-2.0
/// What the engine needs of a configuration, as internal values: the API turns a
/// `KeybayConfiguration` into these, so nothing below the API depends on its public types.
struct StoreSettings: Sendable {
    /// The store's directory and file.
    let location: StoreLocation
    /// The base directory of the roots' state.
    let stateHome: String
    /// The root a new store gets: a plugin id, or `automaticRoot`.
    let rootPlugin: String
    /// What `automaticRoot` tries, in order (each root's probe decides).
    let automaticRoots: [String]
    /// Refuse an existing store whose root is not `rootPlugin` (unless that is `automaticRoot`).
    let requireRootPlugin: Bool
    /// Creation options for a new store's root, in order.
    let rootOptions: [(String, String)]
    /// Where plugins are looked for.
    let pluginSearch: KeybayPluginSearch
    /// The root that works only inside a sandbox, for the sandbox's own application id: its
    /// stores' storage domain has the sandbox-attested assurance.
    let sandboxRoot: String
    /// Mark a new store's directory and its root's directory as excluded from backups.
    let excludeFromBackups: Bool

    /// The `rootPlugin` value that picks the first usable root of `automaticRoots`.
    static let automaticRoot = "auto"

    var applicationID: String { location.applicationID }
    var storePath: String { location.storePath }
}
