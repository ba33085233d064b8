// SPDX-License-Identifier: Apache-2.0
/// What is on disk for one application, found without creating, unlocking or repairing anything.
public struct KeybayStatus: Sendable, Equatable {
    /// What exists for the application; the raw value is how `keybay-methods status` names it.
    public enum State: String, Sendable {
        /// Neither a store nor a root: `open()` will create both.
        case absent
        /// A store sealed by the platform root alone.
        case platformOnly = "platform-only"
        /// A store that also needs an unlock method.
        case protected
        /// A root but no store (interrupted init, partial restore): only `reset` gets out.
        case rootOnly = "root-only"
        /// A store but no root: the platform key is gone and the store cannot be opened.
        case storeOnly = "store-only"
    }

    /// What exists.
    public let state: State
    /// The store file's path (``KeybayConfiguration/storePath``), whether or not it exists.
    public let storePath: String
    /// The root the store on disk was created with (its bootstrap names it); with no store, the
    /// root a new one would get.
    public let rootPlugin: String
    /// Where that root keeps its key (a path, a keyring item).
    public let rootLocation: String
    /// The enrolled methods of a protected store (listed with the root alone, no plugin called).
    public let methods: [KeybayMethod]
    /// A sentence on what the root protects against, shown by `status`.
    public let rootProtection: String
    /// Roots that an interrupted `root move` left behind and the store does not use (the root it
    /// moved from, or the one it was moving to); `reset` removes them with the store.
    public let leftoverRoots: [LeftoverRoot]
    /// The backup markers on the store's and the root's directories, read back.
    public let backupExclusion: KeybayBackupExclusion
    /// Whether the keybay agent holds the store unlocked (`keybay-methods unlock`, asked only for
    /// a protected store); nil when it does not, or no agent answers.
    public let unlocked: Unlocked?

    /// How long the agent holds a store unlocked.
    public struct Unlocked: Sendable, Equatable {
        /// When the agent forgets the store, in seconds since the Unix epoch; nil when it holds it
        /// until `keybay-methods lock` or until it ends (`unlock --for 0`).
        public let until: Int64?
    }

    /// A root the store does not use.
    public struct LeftoverRoot: Sendable, Equatable {
        /// The root plugin's id.
        public let plugin: String
        /// Where it keeps its key.
        public let location: String
    }
}

extension KeybayStatus {
    /// The public form of what the engine found.
    init(_ inspection: StoreInspection, storePath: String, unlocked: Unlocked?) {
        let state: State = switch inspection.state {
        case .absent: .absent
        case .platformOnly: .platformOnly
        case .protected: .protected
        case .rootOnly: .rootOnly
        case .storeOnly: .storeOnly
        }
        self.init(state: state, storePath: storePath, rootPlugin: inspection.root.id, rootLocation: inspection.root.location,
                  methods: inspection.methods.map(KeybayMethod.init), rootProtection: inspection.protectionNote,
                  leftoverRoots: inspection.leftoverRoots.map { LeftoverRoot(plugin: $0.id, location: $0.location) },
                  backupExclusion: KeybayBackupExclusion(inspection.backupMarkers), unlocked: unlocked)
    }
}
