// SPDX-License-Identifier: Apache-2.0
import Glibc

/// Which application's store to use and where the base directories are.
/// Stores live under `<dataHome>/keybay/<applicationID>/`; the file-root key under
/// `<stateHome>/keybay/<applicationID>/`. Both default to the XDG base directories.
///
/// A value type: make one, set the `var`s, and pass it to ``KeybayStore``'s entry points. It
/// is `Sendable`; nothing in it is read again from the environment after `init`.
public struct KeybayConfiguration: Sendable, Equatable {
    /// The application whose store this is, e.g. `com.example.app`.
    public let applicationID: String
    /// The base directory of stores (absolute, no trailing slash).
    public let dataHome: String
    /// The base directory of the file-root key and other roots' state (absolute, no trailing slash).
    public let stateHome: String
    /// The root plugin that seals a **new** store's key package: a plugin id, or `auto`
    /// (inside a sandbox `portal`; outside one `secret-service` when a Secret Service answers,
    /// else `file-root`: ``automaticRoots``), decided once, when the
    /// store is created. An existing store always opens with the root it was created with, which
    /// its bootstrap names (`KeybayStatus.rootPlugin`); `KeybayStore.moveRoot` moves it.
    /// Default: `$KEYBAY_ROOT` when it is set and not empty, else `file-root`.
    public var rootPlugin: String = "file-root"
    /// Options for creating the root, when this configuration creates the store (`init --opt`),
    /// in the order the root gets them, e.g. `[("pcrs", "7")]` for `tpm2`. A name given twice,
    /// and any option for a root that takes none, is refused (`.invalidArgument`) before
    /// anything is made.
    public var rootOptions: [(String, String)] {
        get { rootOptionList.map { ($0.name, $0.value) } }
        set { rootOptionList = newValue.map { RootOption(name: $0.0, value: $0.1) } }
    }
    /// `rootOptions` stored as a type that is `Equatable` (a tuple is not).
    private var rootOptionList: [RootOption] = []
    private struct RootOption: Sendable, Equatable {
        let name: String
        let value: String
    }
    /// Refuse (`.invalidArgument`) to open or initialise an existing store whose root is not
    /// `rootPlugin` (the CLI's explicit `--root`), instead of opening it with its own root.
    public var requireRootPlugin = false
    /// The `rootPlugin` value that picks a root when the store is created: the first of
    /// `automaticRoots` whose probe says it is usable here.
    public static let automaticRoot = StoreSettings.automaticRoot
    /// What `auto` tries, in order: each root plugin's probe is asked (a root without one is
    /// usable once it loads); one that cannot be loaded is passed over. Default: inside a Flatpak
    /// or snap sandbox ``sandboxRoot`` alone; outside one `secret-service` (when a Secret Service
    /// answers), then `file-root`.
    public var automaticRoots = ["secret-service", "file-root"]
    /// The root for sandboxed apps (`portal`): what `auto` is inside a sandbox. It works only
    /// there, for the sandbox's own application id, so its stores' storage domain records that
    /// the sandbox attested the id (docs/format.md §4).
    public static let sandboxRoot = "portal"
    /// Mark the store directory and the root's state directory as excluded from backups when this
    /// configuration creates the store (`.deja-dup-ignore`, `user.xdg.robots.backup`, `nodump`;
    /// docs/security.md). Default `true`; `init --keep-in-backups` sets it to `false`.
    public var excludeFromBackups = true
    /// Where plugins are looked for; `allowExternal = false` limits it to the installation.
    public var pluginSearch = KeybayPluginSearch()
    /// Where method plugins run (docs/plugins.md, "Isolation"): `.isolated` (the default, unless
    /// `KEYBAY_PLUGIN_ISOLATION=none`) runs each in a sandboxed helper process. Root plugins
    /// always run in process. The same value as `pluginSearch.isolation`.
    public var pluginIsolation: KeybayPluginIsolation {
        get { pluginSearch.isolation }
        set { pluginSearch.isolation = newValue }
    }
    /// First-party method plugins run in process even when isolated (`pluginSearch.inProcessMethodPlugins`;
    /// default ``KeybayPluginSearch/defaultInProcessMethodPlugins``).
    public var inProcessMethodPlugins: [String] {
        get { pluginSearch.inProcessMethodPlugins }
        set { pluginSearch.inProcessMethodPlugins = newValue }
    }
    /// The keybay agent's socket (docs/agent.md). While `keybay-methods unlock` has handed a
    /// protected store to the agent, `KeybayStore.open` gives a session whose record operations
    /// go through the agent and ask nothing; an agent that does not hold the store (or none, or
    /// one of another user) changes nothing. Default: `$XDG_RUNTIME_DIR/keybay/agent.socket`
    /// when `XDG_RUNTIME_DIR` is set to an absolute path, else nil; nil never uses an agent.
    public var agentSocket: String? = Self.defaultAgentSocket()

    /// Checks the application id and resolves the base directories; reads `KEYBAY_ROOT` for
    /// ``rootPlugin``. Creates nothing.
    ///
    /// - Parameters:
    ///   - applicationID: `[A-Za-z0-9][A-Za-z0-9._-]{0,119}`, e.g. `com.example.app`.
    ///   - dataHome: absolute path; default `$XDG_DATA_HOME`, else `~/.local/share`.
    ///   - stateHome: absolute path; default `$XDG_STATE_HOME`, else `~/.local/state`.
    /// Inside a Flatpak or snap sandbox, `applicationID` must be the sandbox's own (Flatpak's
    /// `[Application] name=`, snap's `SNAP_INSTANCE_NAME`).
    ///
    /// - Throws: `.invalidArgument` for an invalid application id, one that is not the
    ///   sandbox's, a base directory that is not absolute or too long for the paths under it, no
    ///   home directory to default to, or a `KEYBAY_ROOT` that is not a plugin id or `auto`.
    public init(applicationID: String, dataHome: String? = nil, stateHome: String? = nil) throws {
        if try StoreLocation.checkApplicationID(applicationID) != nil { automaticRoots = [Self.sandboxRoot] }
        self.applicationID = applicationID
        self.dataHome = try StoreLocation.baseDirectory(explicit: dataHome, variable: "XDG_DATA_HOME", fallback: ".local/share")
        self.stateHome = try StoreLocation.baseDirectory(explicit: stateHome, variable: "XDG_STATE_HOME", fallback: ".local/state")
        if let root = getenv("KEYBAY_ROOT").map({ String(cString: $0) }), !root.isEmpty {
            guard root == Self.automaticRoot || KeybayPluginSearch.isValidPluginID(root) else {
                throw KeybayError(.invalidArgument, "KEYBAY_ROOT='\(root)' is not a root plugin id (file-root, secret-service, tpm2, auto, ...)")
            }
            rootPlugin = root
        }
    }

    /// The store's directory, `<dataHome>/keybay/<applicationID>`.
    public var storeDirectory: String { dataHome + "/keybay/" + applicationID }
    /// The store file's path in ``storeDirectory``.
    public var storePath: String { location.storePath }

    /// Where the store lives, for the storage layer.
    var location: StoreLocation { StoreLocation(dataHome: dataHome, applicationID: applicationID) }

    /// This configuration as the engine takes it.
    var settings: StoreSettings {
        StoreSettings(location: location, stateHome: stateHome, rootPlugin: rootPlugin, automaticRoots: automaticRoots,
                      requireRootPlugin: requireRootPlugin, rootOptions: rootOptions, pluginSearch: pluginSearch,
                      sandboxRoot: Self.sandboxRoot, excludeFromBackups: excludeFromBackups)
    }

    /// `$XDG_RUNTIME_DIR/keybay/agent.socket`, or nil without an absolute `XDG_RUNTIME_DIR`.
    ///
    /// - Returns: The socket path the agent listens on for this user's session, or nil.
    public static func defaultAgentSocket() -> String? {
        BaseDirectories.runtime().map { $0 + "/keybay/agent.socket" }
    }


    /// Whether `id` is a valid application id: 1–120 bytes of `[A-Za-z0-9._-]`, starting with a
    /// letter or digit.
    public static func isValidApplicationID(_ id: String) -> Bool {
        StoreLocation.isValidApplicationID(id)
    }
}

extension KeybayConfiguration {
    /// Where the API obtains every method: this configuration's plugin search.
    var methodResolver: MethodResolver { MethodResolver(search: pluginSearch) }
}

extension MethodCallContext {
    /// A call for the store of `configuration`, on the method labelled `label` (whose grants
    /// `grants` are, and whose id `unlocking` is, when it unlocks); the host hands its plugin none
    /// of the configuration's Keybay directories or its agent socket.
    init(_ configuration: KeybayConfiguration, label: String, grants: [FileGrant]? = nil, unlocking methodID: [UInt8]? = nil) {
        self.init()
        applicationID = configuration.applicationID
        self.label = label
        self.methodID = methodID.map { hexString($0) }
        files = grants.map { .unlocking($0) } ?? .none
        keybay = KeybayPaths(directories: [configuration.dataHome + "/keybay", configuration.stateHome + "/keybay"],
                             sockets: configuration.agentSocket.map { [$0] } ?? [])
    }
}
