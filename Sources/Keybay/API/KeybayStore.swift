import CKeybayPlugin

/// Entry points. `open` and `initialize` come in two forms: synchronous ones, for programs with
/// their own threads (the CLI: no concurrency runtime, no worker threads at start-up), which may
/// block while a plugin involves the user (an unlock method's prompt or touch), and `async` ones,
/// which do the same work on a thread of their own, so that a waiting plugin never holds one of
/// Swift's cooperative threads; cancelling their task cancels the ceremony (`.cancelled`).
/// Record operations on the session are synchronous and never prompt.
public enum KeybayStore {
    /// Opens the application's store. With nothing on disk and `createIfAbsent`, creates the
    /// platform root and an empty store, verifies it and opens it. Any other state is never
    /// initialised over: a root without a store is a `.stateConflict`, a store without its root
    /// `.platformKeyInvalidated`; only `reset` gets out of those.
    ///
    /// A store protected by methods opens only with `method` (an id from `status().methods` or
    /// `auth.list()`): its plugin runs its ceremony through `interaction`. Without `method` such
    /// a store throws `.authenticationRequired`; with `method` a platform-only store throws
    /// `.protectionMismatch`, and nothing at all is `.storeNotFound` (nothing is created).
    public static func open(_ configuration: KeybayConfiguration, method: String? = nil, createIfAbsent: Bool = true,
                            interaction: any KeybayInteraction = NonInteractive()) throws -> KeybaySession {
        try openStore(configuration, unlock: unlock(configuration, method: method, ceremony: interaction),
                      createIfAbsent: createIfAbsent, interaction: interaction)
    }

    /// `open`, from async code.
    public static func open(_ configuration: KeybayConfiguration, method: String? = nil, createIfAbsent: Bool = true,
                            interaction: any KeybayInteraction = NonInteractive()) async throws -> KeybaySession {
        try await CeremonyThread.run(interaction) { ceremony in
            try openStore(configuration, unlock: unlock(configuration, method: method, ceremony: ceremony),
                          createIfAbsent: createIfAbsent, interaction: interaction)
        }
    }

    /// Opens the store however it is protected, reading it once: a platform-only store as
    /// `open(_:)` does (created when there is nothing and `createIfAbsent`), a protected one with
    /// the method whose id `choose` returns. `choose` is called only for a protected store, with
    /// its methods as `status().methods` lists them; it may ask the user.
    public static func open(_ configuration: KeybayConfiguration, choosingMethod choose: @escaping ([KeybayMethod]) throws -> String,
                            createIfAbsent: Bool = true, interaction: any KeybayInteraction = NonInteractive()) throws -> KeybaySession {
        try openStore(configuration, unlock: unlock(configuration, choosing: choose, ceremony: interaction),
                      createIfAbsent: createIfAbsent, interaction: interaction)
    }

    /// `open(_:choosingMethod:)`, from async code (`choose` runs on the ceremony's thread).
    public static func open(_ configuration: KeybayConfiguration, choosingMethod choose: @escaping @Sendable ([KeybayMethod]) throws -> String,
                            createIfAbsent: Bool = true, interaction: any KeybayInteraction = NonInteractive()) async throws -> KeybaySession {
        try await CeremonyThread.run(interaction) { ceremony in
            try openStore(configuration, unlock: unlock(configuration, choosing: choose, ceremony: ceremony),
                          createIfAbsent: createIfAbsent, interaction: interaction)
        }
    }

    /// The session keeps `interaction` for later method operations; `unlock` carries the one
    /// this open's ceremony uses.
    static func openStore(_ configuration: KeybayConfiguration, unlock: Unlock, createIfAbsent: Bool,
                          interaction: any KeybayInteraction) throws -> KeybaySession {
        let lifecycle = try StoreLifecycle(configuration, interaction: interaction)
        let (file, generation) = try lifecycle.open(create: createIfAbsent, unlock: unlock)
        return KeybaySession(lifecycle: lifecycle, file: file, generation: generation, interaction: interaction)
    }

    /// The unlock a named method (or none) asks for; a malformed id is refused before anything is read.
    static func unlock(_ configuration: KeybayConfiguration, method: String?, ceremony interaction: any KeybayInteraction) throws -> Unlock {
        guard let method else { return .platform }
        return .method(id: try MethodNames.parseMethodID(method), ceremony: ceremony(configuration, interaction))
    }

    static func unlock(_ configuration: KeybayConfiguration, choosing choose: @escaping ([KeybayMethod]) throws -> String,
                       ceremony interaction: any KeybayInteraction) -> Unlock {
        .choosing(choose: { try MethodNames.parseMethodID(choose($0.map(KeybayMethod.init))) },
                  ceremony: ceremony(configuration, interaction))
    }

    /// Loads the method's plugin and runs its unlock ceremony.
    static func ceremony(_ configuration: KeybayConfiguration, _ interaction: any KeybayInteraction) -> MethodCeremony {
        { method in
            try PluginLoader.loadMethod(method.pluginId, for: configuration)
                .unwrap(params: method.params, interaction: interaction, about: MethodCallContext(applicationID: configuration.applicationID, label: method.label))
        }
    }

    /// Creates a new store; fails with `.alreadyInitialized` or `.stateConflict` if anything exists.
    public static func initialize(_ configuration: KeybayConfiguration, interaction: any KeybayInteraction = NonInteractive()) throws -> KeybaySession {
        try initializeStore(configuration, interaction: interaction)
    }

    /// `initialize`, from async code.
    public static func initialize(_ configuration: KeybayConfiguration, interaction: any KeybayInteraction = NonInteractive()) async throws -> KeybaySession {
        try await CeremonyThread.run(interaction) { _ in try initializeStore(configuration, interaction: interaction) }
    }

    static func initializeStore(_ configuration: KeybayConfiguration, interaction: any KeybayInteraction) throws -> KeybaySession {
        let lifecycle = try StoreLifecycle(configuration, interaction: interaction)
        let (file, landed) = try lifecycle.initialize()
        return KeybaySession(lifecycle: lifecycle, file: file, generation: try landed.confirmed(), interaction: interaction)
    }

    /// Creates a new store protected from its first write by a method of `plugin` (label: the
    /// plugin id unless given). The plugin's enrollment ceremony runs before anything is created,
    /// so a failed or cancelled one leaves nothing on disk; then the store and its method are
    /// written in one write. Fails with `.alreadyInitialized` or `.stateConflict` if anything exists.
    public static func initialize(_ configuration: KeybayConfiguration, enrolling plugin: String, options: [(String, String)] = [],
                                  label: String? = nil, interaction: any KeybayInteraction = NonInteractive()) throws -> KeybaySession {
        try initializeStore(configuration, enrolling: plugin, options: options, label: label, ceremony: interaction, interaction: interaction).get()
    }

    /// `initialize(_:enrolling:)`, for a plugin that shows the user a secret to keep (a recovery
    /// key): once the store is written, `confirm` gets its method; if `confirm` throws, the store
    /// is removed again (nothing existed before it) and the error rethrown, as `auth.add(confirm:)`
    /// does for an existing store; `confirm` runs also when the store was created but could not
    /// be confirmed durable, and that error (`tookEffect`) is thrown after it.
    public static func initialize(_ configuration: KeybayConfiguration, enrolling plugin: String, options: [(String, String)] = [],
                                  label: String? = nil, interaction: any KeybayInteraction = NonInteractive(),
                                  confirm: (KeybayMethod) throws -> Void) throws -> KeybaySession {
        let stored = try initializeStore(configuration, enrolling: plugin, options: options, label: label, ceremony: interaction,
                                         interaction: interaction)
        let session = stored.value
        try KeybayAuth.confirming(try session.auth.list()[0], confirm) {
            session.close()
            try reset(configuration)
        }
        return try stored.get()
    }

    /// `initialize(_:enrolling:)`, from async code.
    public static func initialize(_ configuration: KeybayConfiguration, enrolling plugin: String, options: [(String, String)] = [],
                                  label: String? = nil, interaction: any KeybayInteraction = NonInteractive()) async throws -> KeybaySession {
        try await CeremonyThread.run(interaction) { ceremony in
            try initializeStore(configuration, enrolling: plugin, options: options, label: label, ceremony: ceremony, interaction: interaction).get()
        }
    }

    static func initializeStore(_ configuration: KeybayConfiguration, enrolling pluginID: String, options: [(String, String)], label: String?,
                                ceremony: any KeybayInteraction, interaction: any KeybayInteraction) throws -> StoredChange<KeybaySession> {
        let lifecycle = try StoreLifecycle(configuration, interaction: interaction)
        // Nothing may exist: checked before the ceremony too, so nobody enrolls a secret for nothing.
        switch try lifecycle.status().state {
        case .absent: break
        case .rootOnly, .storeOnly:
            throw KeybayError(.stateConflict, "\(configuration.storePath) is in a partial state; refusing to create a store over it (run reset to start over)")
        case .platformOnly, .protected:
            throw KeybayError(.alreadyInitialized, "a store already exists at \(configuration.storePath); refusing to initialise over it")
        }
        let plugin = try KeybayAuth.checkedPlugin(pluginID, label: label, options: options, configuration: configuration)
        let enrollment = try KeybayAuth.enroll(plugin, options: options, label: label ?? pluginID, configuration: configuration,
                                               interaction: ceremony)
        let (file, landed) = try lifecycle.initialize(enrollment: enrollment)
        return StoredChange(value: KeybaySession(lifecycle: lifecycle, file: file, generation: landed.generation, interaction: interaction),
                            unconfirmed: landed.unconfirmed)
    }

    /// Moves the existing store to the root `rootPlugin` (a plugin id or `auto`), see
    /// `KeybaySession.moveRoot(to:)`; a protected store opens with `method` first, as for any
    /// change of its key. Returns the new root, and the old root's location if it could not be removed.
    @discardableResult
    public static func moveRoot(_ configuration: KeybayConfiguration, to rootPlugin: String, options: [(String, String)] = [],
                                method: String? = nil, interaction: any KeybayInteraction = NonInteractive()) throws -> KeybayRootMove {
        try open(configuration, method: method, createIfAbsent: false, interaction: interaction).moveRoot(to: rootPlugin, options: options)
    }

    /// What is on disk, without creating or unlocking anything.
    public static func status(_ configuration: KeybayConfiguration) throws -> KeybayStatus {
        try StoreLifecycle(configuration).status()
    }

    /// `status`, with each enrolled method's one-line description from its plugin ("Argon2id
    /// v1.3, 256 MiB, t=3, p=4"). Unlike `status` this loads each method's plugin (no probe, no
    /// ceremony, no credential needed).
    public static func describeMethods(_ configuration: KeybayConfiguration) throws -> (status: KeybayStatus, methods: [KeybayMethodDescription]) {
        try StoreLifecycle(configuration).describeMethods()
    }

    /// Removes the store and its platform root (keeps the lock file). Explicit, idempotent,
    /// needs no credential; every record is lost. `interaction` is who the root may ask (a locked
    /// keyring's item can only be deleted once it is unlocked).
    public static func reset(_ configuration: KeybayConfiguration, interaction: any KeybayInteraction = NonInteractive()) throws {
        try StoreLifecycle(configuration, interaction: interaction, forReset: true).reset()
    }
}
