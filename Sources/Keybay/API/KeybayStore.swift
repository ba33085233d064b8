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
    /// plugin id unless given): `prepare(_:enrolling:)`, then a shown secret (a recovery key) to
    /// `interaction.showSecret` (if it cannot take it, nothing is created), then `commit()`. The
    /// ceremony runs before anything is created, so a failed or cancelled one leaves nothing on
    /// disk; then the store and its method are written in one write. Fails with
    /// `.alreadyInitialized` or `.stateConflict` if anything exists.
    public static func initialize(_ configuration: KeybayConfiguration, enrolling plugin: String, options: [(String, String)] = [],
                                  label: String? = nil, interaction: any KeybayInteraction = NonInteractive()) throws -> KeybaySession {
        try KeybayAuth.showAndCommit(try prepare(configuration, enrolling: plugin, options: options, label: label, interaction: interaction),
                                     to: interaction).session
    }

    /// `initialize(_:enrolling:)`, from async code.
    public static func initialize(_ configuration: KeybayConfiguration, enrolling plugin: String, options: [(String, String)] = [],
                                  label: String? = nil, interaction: any KeybayInteraction = NonInteractive()) async throws -> KeybaySession {
        try await CeremonyThread.run(interaction) { ceremony in
            try KeybayAuth.showAndCommit(try prepareStore(configuration, enrolling: plugin, options: options, label: label, ceremony: ceremony,
                                                          interaction: interaction), to: ceremony).session
        }
    }

    /// The first phase of `initialize(_:enrolling:)`: on a home where nothing exists, runs
    /// `plugin`'s enrollment ceremony and creates nothing. `commit()` then creates the store with
    /// this method as its first (and returns its session); `takeBack()` after that removes the
    /// store again. A secret the plugin shows is in `shownSecret`.
    ///
    /// - Throws: `.alreadyInitialized` (a store exists), `.stateConflict` (a partial state: run
    ///   `reset`), and what `KeybayAuth.prepare(plugin:)` throws.
    public static func prepare(_ configuration: KeybayConfiguration, enrolling pluginID: String, options: [(String, String)] = [],
                               label: String? = nil, interaction: any KeybayInteraction = NonInteractive()) throws -> PreparedEnrollment {
        try prepareStore(configuration, enrolling: pluginID, options: options, label: label, ceremony: interaction, interaction: interaction)
    }

    /// `ceremony` runs the plugin; the store's session keeps `interaction`.
    static func prepareStore(_ configuration: KeybayConfiguration, enrolling pluginID: String, options: [(String, String)], label: String?,
                             ceremony: any KeybayInteraction, interaction: any KeybayInteraction) throws -> PreparedEnrollment {
        let lifecycle = try StoreLifecycle(configuration, interaction: interaction)
        // Nothing may exist: checked before the ceremony too, so nobody enrolls a secret for nothing.
        switch try lifecycle.status().state {
        case .absent: break
        case .rootOnly, .storeOnly:
            throw KeybayError(.stateConflict, "\(configuration.storePath) is in a partial state; refusing to create a store over it (run reset to start over)")
                .with(path: configuration.storePath)
        case .platformOnly, .protected:
            throw KeybayError(.alreadyInitialized, "a store already exists at \(configuration.storePath); refusing to initialise over it")
                .with(path: configuration.storePath)
        }
        let plugin = try KeybayAuth.checkedPlugin(pluginID, label: label, options: options, configuration: configuration)
        let capture = ShownSecretCapture(ceremony)
        let enrollment = try KeybayAuth.enroll(plugin, options: options, label: label ?? pluginID, configuration: configuration,
                                               interaction: capture)
        return PreparedEnrollment(step: .create(configuration, interaction: interaction, first: enrollment.first()), shownSecret: capture.secret)
    }

    /// `prepare(_:enrolling:)`, from async code.
    public static func prepare(_ configuration: KeybayConfiguration, enrolling pluginID: String, options: [(String, String)] = [],
                               label: String? = nil, interaction: any KeybayInteraction = NonInteractive()) async throws -> PreparedEnrollment {
        try await CeremonyThread.run(interaction) { ceremony in
            try prepareStore(configuration, enrolling: pluginID, options: options, label: label, ceremony: ceremony, interaction: interaction)
        }
    }

    /// Moves the existing store to the root `rootPlugin` (a plugin id or `auto`), see
    /// `KeybaySession.moveRoot(to:)`; a protected store opens with `method` first, as for any
    /// change of its key. Returns the new root, and the old root's location if it could not be removed.
    @discardableResult
    public static func moveRoot(_ configuration: KeybayConfiguration, to rootPlugin: String, options: [String: String] = [:],
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
