/// Entry points. `open` and `initialize` are `async` because later they may involve the user
/// (unlock methods); record operations on the session are synchronous and never prompt.
public enum KeybayStore {
    /// Opens the application's store. With nothing on disk and `createIfAbsent`, creates the
    /// platform root and an empty store, verifies it and opens it. Any other state is never
    /// initialised over: a root without a store is a `.stateConflict`, a store without its root
    /// `.platformKeyInvalidated`; only `reset` gets out of those.
    public static func open(_ configuration: KeybayConfiguration, createIfAbsent: Bool = true) async throws -> KeybaySession {
        let location = try StoreLocation(configuration)
        let (dir, generation) = try location.open(create: createIfAbsent)
        return KeybaySession(location: location, directory: dir, generation: generation)
    }

    /// Creates a new store; fails with `.alreadyInitialized` or `.stateConflict` if anything exists.
    public static func initialize(_ configuration: KeybayConfiguration) async throws -> KeybaySession {
        let location = try StoreLocation(configuration)
        let (dir, generation) = try location.initialize()
        return KeybaySession(location: location, directory: dir, generation: generation)
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
