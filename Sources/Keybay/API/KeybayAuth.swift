// SPDX-License-Identifier: Apache-2.0
/// The unlock methods of an open store. `list` never calls a plugin; `add`, `replace`, `remove`
/// and `verify` involve the user only through the session's interaction handler, and only `add`,
/// `replace` and `verify` run a plugin ceremony: `remove` re-seals the survivors from their
/// public keys.
/// Like `KeybayStore.open`, each comes synchronous (blocking while the user is involved) and
/// `async` (the same work on a thread of its own; cancelling the task cancels the ceremony).
///
/// Get it from ``KeybaySession/auth``. Every change of methods (`add`, `replace`, `remove`)
/// gives the store a fresh store key and the next epoch, re-encrypts every record and replaces
/// the store file in one atomic write; it fails with `.stateConflict` when another session or
/// process changed the methods meanwhile (try again). A change that took effect but could not be
/// confirmed durable throws `.io` with `tookEffect` set: the session holds the new store.
/// Another process's session of the same store then gets `.keyChanged` and must open it again.
///
/// An enrollment comes in one phase (`add`, `replace`) or two: `prepare(plugin:)` or
/// `prepare(replacing:)` runs the ceremony and stores nothing, ``PreparedEnrollment/commit()``
/// stores it, and ``PreparedEnrollment/takeBack()`` undoes a commit whose shown secret (a
/// recovery key) could not be handed over.
///
/// ## Concurrency
///
/// `Sendable`, like its session: call it from any task. Its ceremonies use the interaction the
/// session was opened with (or the one `prepare` is given); from async code use the `async`
/// forms, so that a plugin waiting for the user holds none of Swift's cooperative threads.
public struct KeybayAuth: Sendable {
    let session: KeybaySession

    /// The enrolled methods, in enrollment order. Calls no plugin.
    ///
    /// - Returns: The methods; empty for a platform-only store.
    /// - Throws: `.closed` after the session's `close()`, and the failures of reading the store
    ///   again when another process replaced it.
    public func list() throws -> [KeybayMethod] {
        try session.methods().map(KeybayMethod.init)
    }

    /// Enrolls a method with `plugin` (e.g. `passphrase`) and returns it: `prepare`, `commit`,
    /// then a secret the plugin shows (a recovery key) goes to the interaction's `showSecret`
    /// (a host that cannot show it gets no method: the enrollment is taken back). The store gets a fresh Kstore and
    /// epoch; every record is re-encrypted in one atomic replace.
    ///
    /// The plugin is probed first (an absent device fails before any ceremony), then runs its
    /// enrollment ceremony through the session's interaction (a passphrase is asked twice,
    /// ``KeybaySecretRequest/isConfirmation``). This form blocks the calling thread meanwhile.
    /// A secret the plugin shows reaches ``KeybayInteraction/showSecret(_:)`` once the method is
    /// stored (``PreparedEnrollment/commit(showingSecretWith:)``); if `showSecret` throws, the
    /// method is removed again.
    /// - Parameters:
    ///   - pluginID: The method plugin's id, e.g. `passphrase`.
    ///   - options: The plugin's enrollment options in order (e.g. `("memory-kib", "65536")`),
    ///     each name at most once.
    ///   - label: The method's label (``KeybayMethod/isValidLabel(_:)``); the plugin id if nil.
    /// - Returns: The new method.
    /// - Throws: `.invalidArgument` for a label, an option given twice or refused, a second
    ///   method of a plugin that allows one per store, or a store already holding 32 methods;
    ///   `.pluginNotFound`, `.pluginRefused`; `.methodUnavailable`; the ceremony's failures
    ///   (`.cancelled`, `.interactionRequired`, `.wrongSecret` when the two entries differ);
    ///   what `showSecret` throws (the method is taken back then); `.stateConflict`; `.closed`;
    ///   `.io` (with `tookEffect` as above).
    @discardableResult
    public func add(plugin pluginID: String, options: [(String, String)] = [], label: String? = nil) throws -> KeybayMethod {
        try Self.commitAndShow(try prepare(plugin: pluginID, options: options, label: label), to: session.interaction).method
    }

    /// `add`, from async code: the ceremony runs on a thread of its own, and cancelling the
    /// calling task cancels it (nothing is written; `.cancelled`).
    ///
    /// - Parameters:
    ///   - pluginID: The method plugin's id, e.g. `passphrase`.
    ///   - options: The plugin's enrollment options in order, each name at most once.
    ///   - label: The method's label; the plugin id if nil.
    /// - Returns: The new method.
    /// - Throws: What the synchronous form throws.
    @discardableResult
    public func add(plugin pluginID: String, options: [(String, String)] = [], label: String? = nil) async throws -> KeybayMethod {
        try await CeremonyThread.run(session.interaction) { ceremony in
            try Self.commitAndShow(try prepare(plugin: pluginID, options: options, label: label, interaction: ceremony), to: ceremony).method
        }
    }

    /// Replaces method `id` with a fresh credential of the same plugin (its label unless `label`
    /// gives a new one): the new one is enrolled and the old envelope dropped in one rotation, so
    /// the store is never without the method and never holds both. Works for a plugin that
    /// allows one method per store too: that is how its secret changes. A shown secret goes to
    /// `showSecret` once the new one is stored, as for `add`.
    ///
    /// The old method's credential is not asked for; the new one's enrollment ceremony runs
    /// through the session's interaction, blocking the calling thread.
    /// - Parameters:
    ///   - id: The method to replace (``KeybayMethod/id``).
    ///   - options: The plugin's enrollment options for the new credential.
    ///   - label: A new label; the old one if nil.
    /// - Returns: The new method (a new id).
    /// - Throws: `.methodNotFound`, `.invalidArgument` for a malformed id, and what
    ///   `add(plugin:options:label:)` throws.
    @discardableResult
    public func replace(_ id: String, options: [(String, String)] = [], label: String? = nil) throws -> KeybayMethod {
        try Self.commitAndShow(try prepare(replacing: id, options: options, label: label), to: session.interaction).method
    }

    /// `replace`, from async code: the ceremony runs on a thread of its own, and cancelling the
    /// calling task cancels it (nothing is changed; `.cancelled`).
    ///
    /// - Parameters:
    ///   - id: The method to replace.
    ///   - options: The plugin's enrollment options for the new credential.
    ///   - label: A new label; the old one if nil.
    /// - Returns: The new method.
    /// - Throws: What the synchronous form throws.
    @discardableResult
    public func replace(_ id: String, options: [(String, String)] = [], label: String? = nil) async throws -> KeybayMethod {
        try await CeremonyThread.run(session.interaction) { ceremony in
            try Self.commitAndShow(try prepare(replacing: id, options: options, label: label, interaction: ceremony), to: ceremony).method
        }
    }

    /// Removes a method; with none left the store is platform-only again. Needs no credential
    /// and calls no method plugin: the survivors are re-sealed from their public keys.
    ///
    /// - Parameter id: The method to remove (``KeybayMethod/id``).
    /// - Throws: `.methodNotFound`, `.invalidArgument` for a malformed id, `.stateConflict`,
    ///   `.closed`, the root's failures, `.io` (with `tookEffect` as above).
    public func remove(_ id: String) throws {
        if let unconfirmed = try removeMethod(id) { throw unconfirmed }
    }

    /// `remove`, from async code, on a thread of its own (the root may still involve the user).
    ///
    /// - Parameter id: The method to remove.
    /// - Throws: What the synchronous form throws.
    public func remove(_ id: String) async throws {
        try await CeremonyThread.run(session.interaction) { _ in if let unconfirmed = try removeMethod(id) { throw unconfirmed } }
    }

    /// Why the removal, which took effect, could not be confirmed durable, if it could not.
    func removeMethod(_ id: String) throws -> KeybayError? {
        let current = try session.freshSnapshot()
        let gone = try method(id, in: current).methodId
        return try session.rotate(expecting: current) { $0.filter { $0.methodId != gone } }
    }

    /// Runs a method's ceremony and checks the secret against its stored public key, without
    /// changing anything. Blocks the calling thread during the ceremony.
    ///
    /// - Parameter id: The method to check (``KeybayMethod/id``).
    /// - Throws: `.methodNotFound`, `.invalidArgument` for a malformed id; the ceremony's
    ///   failures (`.wrongSecret`, `.cancelled`, `.interactionRequired`, …); `.pluginNotFound`,
    ///   `.pluginRefused`; `.wrongSecret` also when the secret does not derive the stored key.
    public func verify(_ id: String) throws {
        try verifyMethod(id)
    }

    /// `verify`, asking through `interaction` instead of the session's (a host that opened the
    /// store asking nobody, and verifies a method it enrolled with an interaction of its own).
    ///
    /// - Parameters:
    ///   - id: The method to check.
    ///   - interaction: Who the method's plugin asks.
    /// - Throws: What `verify(_:)` throws.
    public func verify(_ id: String, interaction: any KeybayInteraction) throws {
        try verifyMethod(id, interaction: interaction)
    }

    /// `verify`, from async code: the ceremony runs on a thread of its own, and cancelling the
    /// calling task cancels it (`.cancelled`).
    ///
    /// - Parameter id: The method to check.
    /// - Throws: What the synchronous form throws.
    public func verify(_ id: String) async throws {
        try await CeremonyThread.run(session.interaction) { ceremony in try verifyMethod(id, interaction: ceremony) }
    }

    func verifyMethod(_ id: String, interaction: (any KeybayInteraction)? = nil) throws {
        let current = try session.freshSnapshot()
        let method = try method(id, in: current)
        let about = MethodCallContext(session.configuration, label: method.label, grants: method.grants, unlocking: method.methodId)
        do {
            let secret = try session.loadMethodPlugin(method.pluginId).verify(params: method.params, interaction: interaction ?? session.interaction,
                                                                              about: about)
            _ = try method.privateKey(secret: secret, storeId: current.keys.storeId)
        } catch let e as KeybayError {
            throw e.with(methodID: id)
        }
    }

    /// A plugin's one-line description of a method's parameters (this loads the plugin; no
    /// ceremony, no credential).
    ///
    /// - Parameter id: The method to describe.
    /// - Returns: One line, e.g. "Argon2id v1.3, 256 MiB, t=3, p=4".
    /// - Throws: `.methodNotFound`, `.invalidArgument` for a malformed id, `.pluginNotFound`,
    ///   `.pluginRefused`, and the plugin's failure (`.malformed` for parameters it cannot read).
    public func describe(_ id: String) throws -> String {
        let method = try method(id, among: session.methods())
        return try session.loadMethodPlugin(method.pluginId).describe(params: method.params)
    }
}

extension KeybayAuth {
    /// The enrolled method with `id`, or `.methodNotFound`.
    func method(_ id: String, in snapshot: StoreSnapshot) throws -> MethodEnvelope.Public {
        try method(id, among: snapshot.methods)
    }

    func method(_ id: String, among methods: [MethodEnvelope.Public]) throws -> MethodEnvelope.Public {
        let bytes = try MethodNames.parseMethodID(id)
        guard let method = methods.first(where: { $0.methodId == bytes }) else {
            throw KeybayError(.methodNotFound, "no method \(id) in \(session.storePath)").with(path: session.storePath, methodID: id)
        }
        return method
    }
}
