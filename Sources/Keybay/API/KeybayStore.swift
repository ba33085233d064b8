import CKeybayPlugin

/// Entry points. `open` and `initialize` come in two forms: synchronous ones, for programs with
/// their own threads (the CLI: no concurrency runtime, no worker threads at start-up), and
/// `async` ones, which run the same work; both may block while a plugin involves the user (an
/// unlock method's prompt or touch). Record operations on the session are synchronous and never
/// prompt.
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
        try openStore(configuration, method: method, createIfAbsent: createIfAbsent, interaction: interaction)
    }

    /// `open`, from async code.
    public static func open(_ configuration: KeybayConfiguration, method: String? = nil, createIfAbsent: Bool = true,
                            interaction: any KeybayInteraction = NonInteractive()) async throws -> KeybaySession {
        try openStore(configuration, method: method, createIfAbsent: createIfAbsent, interaction: interaction)
    }

    /// Opens the store however it is protected, reading it once: a platform-only store as
    /// `open(_:)` does (created when there is nothing and `createIfAbsent`), a protected one with
    /// the method whose id `choose` returns. `choose` is called only for a protected store, with
    /// its methods as `status().methods` lists them; it may ask the user.
    public static func open(_ configuration: KeybayConfiguration, choosingMethod choose: @escaping ([KeybayMethod]) throws -> String,
                            createIfAbsent: Bool = true, interaction: any KeybayInteraction = NonInteractive()) throws -> KeybaySession {
        try openStore(configuration, choosing: choose, createIfAbsent: createIfAbsent, interaction: interaction)
    }

    /// `open(_:choosingMethod:)`, from async code.
    public static func open(_ configuration: KeybayConfiguration, choosingMethod choose: @escaping ([KeybayMethod]) throws -> String,
                            createIfAbsent: Bool = true, interaction: any KeybayInteraction = NonInteractive()) async throws -> KeybaySession {
        try openStore(configuration, choosing: choose, createIfAbsent: createIfAbsent, interaction: interaction)
    }

    /// A method named by id, or chosen once the store's methods are known, or none.
    static func openStore(_ configuration: KeybayConfiguration, method: String? = nil,
                          choosing choose: (([KeybayMethod]) throws -> String)? = nil, createIfAbsent: Bool,
                          interaction: any KeybayInteraction) throws -> KeybaySession {
        let location = try StoreLocation(configuration)
        /// Runs the ceremony of the method with id `id` and opens its envelope.
        func unlock(_ id: String, _ envelopes: [MethodEnvelope], _ storeId: [UInt8], _ epoch: UInt64) throws -> SecureBytes {
            let wanted = try KeybayMethod.parseID(id)
            guard let envelope = envelopes.first(where: { $0.method.methodId == wanted }) else {
                throw KeybayError(.methodNotFound, "no method \(id) in \(configuration.storePath); it has \(envelopes.map { hexString($0.method.methodId) }.joined(separator: ", "))")
            }
            let plugin = try PluginLoader.loadMethod(envelope.method.pluginId, for: configuration)
            let secret = try plugin.unwrap(params: envelope.method.params, interaction: interaction)
            return try envelope.open(secret: secret, storeId: storeId, epoch: epoch)
        }
        var key = PackageKey.platform
        if let method {
            _ = try KeybayMethod.parseID(method) // a malformed id is refused before anything is read
            key = .method { try unlock(method, $0, $1, $2) }
        } else if let choose {
            key = .platformOrMethod { envelopes, storeId, epoch in
                try unlock(try choose(envelopes.map { KeybayMethod($0.method) }), envelopes, storeId, epoch)
            }
        }
        let (dir, generation) = try location.open(create: createIfAbsent && method == nil, key: key)
        return KeybaySession(location: location, directory: dir, generation: generation, interaction: interaction)
    }

    /// Creates a new store; fails with `.alreadyInitialized` or `.stateConflict` if anything exists.
    public static func initialize(_ configuration: KeybayConfiguration, interaction: any KeybayInteraction = NonInteractive()) throws -> KeybaySession {
        try initializeStore(configuration, interaction: interaction)
    }

    /// `initialize`, from async code.
    public static func initialize(_ configuration: KeybayConfiguration, interaction: any KeybayInteraction = NonInteractive()) async throws -> KeybaySession {
        try initializeStore(configuration, interaction: interaction)
    }

    static func initializeStore(_ configuration: KeybayConfiguration, interaction: any KeybayInteraction) throws -> KeybaySession {
        let location = try StoreLocation(configuration)
        let (dir, generation) = try location.initialize()
        return KeybaySession(location: location, directory: dir, generation: generation, interaction: interaction)
    }

    /// What is on disk, without creating or unlocking anything.
    public static func status(_ configuration: KeybayConfiguration) throws -> KeybayStatus {
        try StoreLocation(configuration).status()
    }

    /// Removes the store and its platform root (keeps the lock file). Explicit, idempotent,
    /// needs no credential; every record is lost.
    public static func reset(_ configuration: KeybayConfiguration) throws {
        try StoreLocation(configuration).reset()
    }
}
