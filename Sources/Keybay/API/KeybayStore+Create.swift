// SPDX-License-Identifier: Apache-2.0
/// Creating a store: empty, or protected from its first write by a method.
extension KeybayStore {
    /// Creates a new store; fails with `.alreadyInitialized` or `.stateConflict` if anything exists.
    ///
    /// The root is ``KeybayConfiguration/rootPlugin`` (with its `rootOptions`). Unlike `open`,
    /// this never opens an existing store.
    /// - Parameters:
    ///   - configuration: Which application's store, and where.
    ///   - interaction: Who the root may ask; kept by the session.
    /// - Returns: A session on the new, empty, platform-only store.
    /// - Throws: `.alreadyInitialized`, `.stateConflict`; `.invalidArgument` for root options
    ///   the root does not take; `.pluginNotFound`, `.rootUnavailable` and the root's failures;
    ///   `.insecurePermissions`, `.io`.
    public static func initialize(_ configuration: KeybayConfiguration, interaction: any KeybayInteraction = NonInteractive()) throws -> KeybaySession {
        try initializeStore(configuration, interaction: interaction)
    }

    /// `initialize`, from async code: the same work on a thread of its own.
    ///
    /// - Parameters:
    ///   - configuration: Which application's store, and where.
    ///   - interaction: Who the root may ask; kept by the session.
    /// - Returns: A session on the new, empty, platform-only store.
    /// - Throws: What the synchronous form throws.
    public static func initialize(_ configuration: KeybayConfiguration, interaction: any KeybayInteraction = NonInteractive()) async throws -> KeybaySession {
        try await CeremonyThread.run(interaction) { _ in try initializeStore(configuration, interaction: interaction) }
    }

    static func initializeStore(_ configuration: KeybayConfiguration, interaction: any KeybayInteraction) throws -> KeybaySession {
        let engine = try StoreEngine(configuration.settings, interaction: interaction)
        let (file, landed) = try engine.initialize()
        return KeybaySession(configuration, engine: engine, file: file, generation: try landed.confirmed(), interaction: interaction)
    }

    /// Creates a new store protected from its first write by a method of `plugin` (label: the
    /// plugin id unless given): `prepare(_:enrolling:)`, `commit()`, then a shown secret (a recovery key) to
    /// `interaction.showSecret` (if it cannot take it, the new store is removed again). The
    /// ceremony runs before anything is created, so a failed or cancelled one leaves nothing on
    /// disk; then the store and its method are written in one write. Fails with
    /// `.alreadyInitialized` or `.stateConflict` if anything exists.
    ///
    /// This form blocks the calling thread during the ceremony.
    /// - Parameters:
    ///   - configuration: Which application's store, and where.
    ///   - plugin: The method plugin's id, e.g. `passphrase`.
    ///   - options: The plugin's enrollment options in order, each name at most once.
    ///   - label: The method's label (``KeybayMethod/isValidLabel(_:)``); the plugin id if nil.
    ///   - interaction: Who the plugin and the root may ask (a shown secret goes to its
    ///     ``KeybayInteraction/showSecret(_:)``); kept by the session.
    /// - Returns: A session on the new protected store.
    /// - Throws: `.alreadyInitialized`, `.stateConflict`; `.invalidArgument` for a label, an
    ///   option given twice or refused; `.methodUnavailable` when the plugin cannot work here;
    ///   the ceremony's failures; what `showSecret` throws (the store is removed again then); the
    ///   failures of `initialize(_:interaction:)`.
    public static func initialize(_ configuration: KeybayConfiguration, enrolling plugin: String, options: [(String, String)] = [],
                                  label: String? = nil, interaction: any KeybayInteraction = NonInteractive()) throws -> KeybaySession {
        try KeybayAuth.commitAndShow(try prepare(configuration, enrolling: plugin, options: options, label: label, interaction: interaction),
                                     to: interaction).session
    }

    /// `initialize(_:enrolling:)`, from async code: the ceremony runs on a thread of its own,
    /// and cancelling the calling task cancels it (nothing is written; `.cancelled`).
    ///
    /// - Parameters:
    ///   - configuration: Which application's store, and where.
    ///   - plugin: The method plugin's id, e.g. `passphrase`.
    ///   - options: The plugin's enrollment options in order, each name at most once.
    ///   - label: The method's label; the plugin id if nil.
    ///   - interaction: Who the plugin and the root may ask; kept by the session.
    /// - Returns: A session on the new protected store.
    /// - Throws: What the synchronous form throws, and `.cancelled` when the task is cancelled.
    public static func initialize(_ configuration: KeybayConfiguration, enrolling plugin: String, options: [(String, String)] = [],
                                  label: String? = nil, interaction: any KeybayInteraction = NonInteractive()) async throws -> KeybaySession {
        try await CeremonyThread.run(interaction) { ceremony in
            try KeybayAuth.commitAndShow(try prepareStore(configuration, enrolling: plugin, options: options, label: label, ceremony: ceremony,
                                                          interaction: interaction), to: ceremony).session
        }
    }

    /// The first phase of `initialize(_:enrolling:)`: on a home where nothing exists, runs
    /// `plugin`'s enrollment ceremony and creates nothing. `commit()` then creates the store with
    /// this method as its first (and returns its session); `takeBack()` after that removes the
    /// store again. A secret the plugin shows is in `shownSecret`.
    ///
    /// Blocks the calling thread during the ceremony.
    /// - Parameters:
    ///   - configuration: Which application's store, and where.
    ///   - pluginID: The method plugin's id, e.g. `recovery`.
    ///   - options: The plugin's enrollment options in order, each name at most once.
    ///   - label: The method's label; the plugin id if nil.
    ///   - interaction: Who the plugin and the root may ask; kept by the new store's session.
    /// - Returns: The enrollment, to ``PreparedEnrollment/commit()`` or
    ///   ``PreparedEnrollment/discard()``.
    /// - Throws: `.alreadyInitialized` (a store exists), `.stateConflict` (a partial state: run
    ///   `reset`), and what `KeybayAuth.prepare(plugin:)` throws.
    public static func prepare(_ configuration: KeybayConfiguration, enrolling pluginID: String, options: [(String, String)] = [],
                               label: String? = nil, interaction: any KeybayInteraction = NonInteractive()) throws -> PreparedEnrollment {
        try prepareStore(configuration, enrolling: pluginID, options: options, label: label, ceremony: interaction, interaction: interaction)
    }

    /// `ceremony` runs the plugin; the store's session keeps `interaction`.
    static func prepareStore(_ configuration: KeybayConfiguration, enrolling pluginID: String, options: [(String, String)], label: String?,
                             ceremony: any KeybayInteraction, interaction: any KeybayInteraction) throws -> PreparedEnrollment {
        let engine = try StoreEngine(configuration.settings, interaction: interaction)
        // Nothing may exist: checked before the ceremony too, so nobody enrolls a secret for nothing.
        try engine.refuseExistingState()
        let plugin = try KeybayAuth.checkedPlugin(pluginID, label: label, options: options, configuration: configuration)
        let capture = ShownSecretCapture(ceremony)
        let enrollment = try KeybayAuth.enroll(plugin, options: options, label: label ?? pluginID, configuration: configuration,
                                               interaction: capture)
        return PreparedEnrollment(step: .create(configuration, engine: engine, first: enrollment.first()), shownSecret: capture.secret)
    }

    /// `prepare(_:enrolling:)`, from async code: the ceremony runs on a thread of its own, and
    /// cancelling the calling task cancels it (`.cancelled`).
    ///
    /// - Parameters:
    ///   - configuration: Which application's store, and where.
    ///   - pluginID: The method plugin's id.
    ///   - options: The plugin's enrollment options in order, each name at most once.
    ///   - label: The method's label; the plugin id if nil.
    ///   - interaction: Who the plugin and the root may ask; kept by the new store's session.
    /// - Returns: The enrollment, not stored.
    /// - Throws: What the synchronous form throws, and `.cancelled` when the task is cancelled.
    public static func prepare(_ configuration: KeybayConfiguration, enrolling pluginID: String, options: [(String, String)] = [],
                               label: String? = nil, interaction: any KeybayInteraction = NonInteractive()) async throws -> PreparedEnrollment {
        try await CeremonyThread.run(interaction) { ceremony in
            try prepareStore(configuration, enrolling: pluginID, options: options, label: label, ceremony: ceremony, interaction: interaction)
        }
    }
}
