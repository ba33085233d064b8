// SPDX-License-Identifier: Apache-2.0
import CKeybayPlugin

/// Entry points. `open` and `initialize` come in two forms: synchronous ones, for programs with
/// their own threads (the CLI: no concurrency runtime, no worker threads at start-up), which may
/// block while a plugin involves the user (an unlock method's prompt or touch), and `async` ones,
/// which do the same work on a thread of their own, so that a waiting plugin never holds one of
/// Swift's cooperative threads; cancelling their task cancels the ceremony (`.cancelled`).
/// Record operations on the session are synchronous and never prompt.
///
/// Every failure is a ``KeybayError``. The `interaction` each entry point takes is who the
/// plugins it runs may ask (``KeybayInteraction``); the default, ``NonInteractive``, asks
/// nobody, so anything that needs the user throws `.interactionRequired`. The session an
/// `open` or `initialize` returns keeps that interaction for its ``KeybaySession/auth``
/// operations and its root.
///
/// ## Concurrency
///
/// All entry points may be called from any thread or task at once; two processes, or two
/// sessions of one process, opening the same store each get a session, and their writes are
/// serialised by the store's lock file. Call the `async` forms from async code: the
/// synchronous ones block their thread while a plugin waits for the user, and a plugin runs
/// one call at a time, so a second call needing the same plugin waits for the first.
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
    ///
    /// This form runs on the calling thread and blocks it while the method's plugin involves
    /// the user (a passphrase prompt, a wait for a touch).
    /// - Parameters:
    ///   - configuration: Which application's store, and where.
    ///   - method: The id of the enrolled method to unlock with; nil for a platform-only store.
    ///   - createIfAbsent: Create root and store when neither exists (ignored with `method`).
    ///   - interaction: Who the method's plugin and the root may ask; kept by the session.
    /// - Returns: An open session.
    /// - Throws: `.authenticationRequired`, `.protectionMismatch`, `.storeNotFound`,
    ///   `.stateConflict`, `.platformKeyInvalidated` as above; `.invalidArgument` for a
    ///   malformed method id; `.methodNotFound`; the ceremony's failures (`.wrongSecret`,
    ///   `.cancelled`, `.interactionRequired`, `.timedOut`, `.locked`, `.methodUnavailable`,
    ///   `.pinRequired`); `.pluginNotFound`, `.pluginRefused`; `.rootUnavailable`,
    ///   `.rolledBack`; `.integrity`, `.malformed`, `.unsupported`, `.insecurePermissions`, `.io`.
    public static func open(_ configuration: KeybayConfiguration, method: String? = nil, createIfAbsent: Bool = true,
                            interaction: any KeybayInteraction = NonInteractive()) throws -> KeybaySession {
        try openStore(configuration, unlock: unlock(configuration, method: method, ceremony: interaction), reopen: LocalReopen(method),
                      createIfAbsent: createIfAbsent, interaction: interaction)
    }

    /// `open`, from async code.
    ///
    /// The same work as the synchronous form, on a thread of its own: a plugin waiting for the
    /// user holds none of Swift's cooperative threads. Cancelling the calling task cancels the
    /// ceremony (the plugin sees ``KeybayInteraction/isCancelled``, a question not yet asked is
    /// not asked) and the call throws `.cancelled`.
    /// - Parameters:
    ///   - configuration: Which application's store, and where.
    ///   - method: The id of the enrolled method to unlock with; nil for a platform-only store.
    ///   - createIfAbsent: Create root and store when neither exists (ignored with `method`).
    ///   - interaction: Who the method's plugin and the root may ask; kept by the session.
    /// - Returns: An open session.
    /// - Throws: What the synchronous form throws, and `.cancelled` when the task is cancelled.
    public static func open(_ configuration: KeybayConfiguration, method: String? = nil, createIfAbsent: Bool = true,
                            interaction: any KeybayInteraction = NonInteractive()) async throws -> KeybaySession {
        try await CeremonyThread.run(interaction) { ceremony in
            try openStore(configuration, unlock: unlock(configuration, method: method, ceremony: ceremony), reopen: LocalReopen(method),
                          createIfAbsent: createIfAbsent, interaction: interaction)
        }
    }

    /// Opens the store however it is protected, reading it once: a platform-only store as
    /// `open(_:)` does (created when there is nothing and `createIfAbsent`), a protected one with
    /// the method whose id `choose` returns. `choose` is called only for a protected store, with
    /// its methods as `status().methods` lists them; it may ask the user.
    ///
    /// - Parameters:
    ///   - configuration: Which application's store, and where.
    ///   - choose: Given the enrolled methods (at least one), returns the id of one of them;
    ///     what it throws is rethrown.
    ///   - createIfAbsent: Create root and store when neither exists.
    ///   - interaction: Who the chosen method's plugin and the root may ask; kept by the session.
    /// - Returns: An open session.
    /// - Throws: What `open(_:method:createIfAbsent:interaction:)` throws, save
    ///   `.authenticationRequired` and `.protectionMismatch`.
    public static func open(_ configuration: KeybayConfiguration, choosingMethod choose: @escaping ([KeybayMethod]) throws -> String,
                            createIfAbsent: Bool = true, interaction: any KeybayInteraction = NonInteractive()) throws -> KeybaySession {
        try openStore(configuration, unlock: unlock(configuration, choosing: choose, ceremony: interaction), reopen: .choosing(choose),
                      createIfAbsent: createIfAbsent, interaction: interaction)
    }

    /// `open(_:choosingMethod:)`, from async code (`choose` runs on the ceremony's thread).
    ///
    /// Cancelling the calling task cancels the ceremony; the call then throws `.cancelled`.
    /// - Parameters:
    ///   - configuration: Which application's store, and where.
    ///   - choose: Given the enrolled methods, returns the id of one of them; it runs on
    ///     Keybay's thread, not the caller's, hence `@Sendable`.
    ///   - createIfAbsent: Create root and store when neither exists.
    ///   - interaction: Who the chosen method's plugin and the root may ask; kept by the session.
    /// - Returns: An open session.
    /// - Throws: What the synchronous form throws, and `.cancelled` when the task is cancelled.
    public static func open(_ configuration: KeybayConfiguration, choosingMethod choose: @escaping @Sendable ([KeybayMethod]) throws -> String,
                            createIfAbsent: Bool = true, interaction: any KeybayInteraction = NonInteractive()) async throws -> KeybaySession {
        try await CeremonyThread.run(interaction) { ceremony in
            try openStore(configuration, unlock: unlock(configuration, choosing: choose, ceremony: ceremony), reopen: .choosing(choose),
                          createIfAbsent: createIfAbsent, interaction: interaction)
        }
    }

    /// The session keeps `interaction` for later method operations; `unlock` carries the one
    /// this open's ceremony uses. A store the agent holds gives a session that reads through it
    /// (nothing is read or asked here); `reopen` is how that session opens the store itself when
    /// `auth` needs the key.
    static func openStore(_ configuration: KeybayConfiguration, unlock: Unlock, reopen: LocalReopen, createIfAbsent: Bool,
                          interaction: any KeybayInteraction) throws -> KeybaySession {
        if let agent = heldByAgent(configuration) {
            return KeybaySession(configuration, agent: agent, reopen: reopen, interaction: interaction)
        }
        let engine = try StoreEngine(configuration.settings, interaction: interaction)
        let (file, generation) = try engine.open(create: createIfAbsent, unlock: unlock)
        return KeybaySession(configuration, engine: engine, file: file, generation: generation, interaction: interaction)
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
            try configuration.methodResolver.method(method.pluginId)
                .unwrap(params: method.params, interaction: interaction, about: MethodCallContext(configuration, label: method.label, grants: method.grants, unlocking: method.methodId))
        }
    }

    /// Moves the existing store to the root `rootPlugin` (a plugin id or `auto`), see
    /// `KeybaySession.moveRoot(to:)`; a protected store opens with `method` first, as for any
    /// change of its key. Returns the new root, and the old root's location if it could not be removed.
    ///
    /// Synchronous: it blocks while a method's ceremony or the roots involve the user.
    /// - Parameters:
    ///   - configuration: Which application's store; it must exist (nothing is created).
    ///   - rootPlugin: The root plugin to move to, or ``KeybayConfiguration/automaticRoot``.
    ///   - options: The new root's creation options.
    ///   - method: For a protected store, the method to open it with.
    ///   - interaction: Who the method's plugin and both roots may ask.
    /// - Returns: The root the store is on now, and where the old one was left if it stayed.
    /// - Throws: What `open` and ``KeybaySession/moveRoot(to:options:)`` throw.
    @discardableResult
    public static func moveRoot(_ configuration: KeybayConfiguration, to rootPlugin: String, options: [(String, String)] = [],
                                method: String? = nil, interaction: any KeybayInteraction = NonInteractive()) throws -> KeybayRootMove {
        try open(configuration, method: method, createIfAbsent: false, interaction: interaction).moveRoot(to: rootPlugin, options: options)
    }

    /// What is on disk, without creating or unlocking anything.
    ///
    /// It loads the root plugin and asks it whether its key exists, with no interaction: a root
    /// that needs the user first (a locked `secret-service` keyring) makes it throw
    /// `.interactionRequired` rather than report a state. No method plugin is loaded.
    /// - Parameter configuration: Which application's store, and where.
    /// - Returns: The state, paths, root and enrolled methods.
    /// - Throws: `.interactionRequired` as above; `.pluginNotFound`, `.rootUnavailable` and the
    ///   root's failures; `.malformed`, `.unsupported` for a store file it cannot read;
    ///   `.insecurePermissions`, `.io`.
    public static func status(_ configuration: KeybayConfiguration) throws -> KeybayStatus {
        let engine = try StoreEngine(configuration.settings)
        let inspection = try engine.inspect()
        return KeybayStatus(inspection, storePath: engine.storePath, unlocked: agentUnlock(configuration, inspection))
    }

    /// `status`, with each enrolled method's one-line description from its plugin ("Argon2id
    /// v1.3, 256 MiB, t=3, p=4"). Unlike `status` this loads each method's plugin (no probe, no
    /// ceremony, no credential needed).
    ///
    /// - Parameter configuration: Which application's store, and where.
    /// - Returns: The status, and each method with its description or why there is none (a
    ///   plugin that is missing or fails does not fail the call).
    /// - Throws: What ``status(_:)`` throws.
    public static func describeMethods(_ configuration: KeybayConfiguration) throws -> (status: KeybayStatus, methods: [KeybayMethodDescription]) {
        let inspection = try StoreEngine(configuration.settings).inspect()
        return (KeybayStatus(inspection, storePath: configuration.storePath, unlocked: agentUnlock(configuration, inspection)), inspection.methods.map { envelope in
            do {
                let plugin = try configuration.methodResolver.method(envelope.pluginId)
                var method = KeybayMethod(envelope)
                method.needsDevice = plugin.needsDevice
                return KeybayMethodDescription(method: method, description: try plugin.describe(params: envelope.params), failure: nil)
            } catch {
                return KeybayMethodDescription(method: KeybayMethod(envelope), description: nil,
                                               failure: error as? KeybayError ?? KeybayError(.pluginFailed, "\(error)"))
            }
        })
    }

    /// Removes the store and its platform root (keeps the lock file). Explicit, idempotent,
    /// needs no credential; every record is lost. `interaction` is who the root may ask (a locked
    /// keyring's item can only be deleted once it is unlocked).
    ///
    /// Do not use a session of the store afterwards. Safe to call when nothing exists.
    /// - Parameters:
    ///   - configuration: Which application's store, and where.
    ///   - interaction: Who the root may ask (``KeybayInteraction/confirm(_:)`` for a locked
    ///     keyring); with the default, a locked keyring throws `.interactionRequired` and
    ///     nothing is removed.
    /// - Throws: `.interactionRequired`, the root's failures, `.insecurePermissions`, `.io`.
    public static func reset(_ configuration: KeybayConfiguration, interaction: any KeybayInteraction = NonInteractive()) throws {
        try StoreEngine(configuration.settings, interaction: interaction, forReset: true).reset()
    }
}
