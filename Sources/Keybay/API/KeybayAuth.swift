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
/// ## Concurrency
///
/// `Sendable`, like its session: call it from any task. Its ceremonies use the interaction the
/// session was opened with; from async code use the `async` forms, so that a plugin waiting for
/// the user holds none of Swift's cooperative threads.
public struct KeybayAuth: Sendable {
    let session: KeybaySession

    /// The enrolled methods, in enrollment order. Calls no plugin.
    ///
    /// - Returns: The methods; empty for a platform-only store.
    /// - Throws: `.closed` after the session's `close()`, and the failures of reading the store
    ///   again when another process replaced it.
    public func list() throws -> [KeybayMethod] {
        try session.freshSnapshot().methods.map(KeybayMethod.init)
    }

    /// Enrolls a method with `plugin` (e.g. `passphrase`) and returns it. The store gets a fresh
    /// Kstore and epoch; every record is re-encrypted in one atomic replace.
    ///
    /// The plugin is probed first (an absent device fails before any ceremony), then runs its
    /// enrollment ceremony through the session's interaction (a passphrase is asked twice,
    /// ``KeybaySecretRequest/isConfirmation``). This form blocks the calling thread meanwhile.
    /// For a plugin that shows the user a secret to keep, use
    /// ``add(plugin:options:label:confirm:)``.
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
    ///   `.stateConflict`; `.closed`; `.io` (with `tookEffect` as above).
    @discardableResult
    public func add(plugin pluginID: String, options: [(String, String)] = [], label: String? = nil) throws -> KeybayMethod {
        try addMethod(plugin: pluginID, options: options, label: label).get()
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
            try addMethod(plugin: pluginID, options: options, label: label, interaction: ceremony).get()
        }
    }

    /// `add`, for a method whose plugin shows the user a secret to keep (a recovery key): once
    /// the method is stored, `confirm` gets it (to hand the secret to the user); if `confirm`
    /// throws, the method is removed again and the error rethrown, so a secret nobody received
    /// never stays a way in. `confirm` runs also when the method took effect but could not be
    /// confirmed durable (the store needs it now); that error (`tookEffect`) is thrown after it.
    ///
    /// - Parameters:
    ///   - pluginID: The method plugin's id, e.g. `recovery`.
    ///   - options: The plugin's enrollment options in order, each name at most once.
    ///   - label: The method's label; the plugin id if nil.
    ///   - confirm: Runs on the calling thread with the stored method; show the user what the
    ///     plugin passed to ``KeybayInteraction/showSecret(_:)`` here, and throw if that failed.
    /// - Returns: The new method.
    /// - Throws: What `add(plugin:options:label:)` throws, and what `confirm` throws
    ///   (after the method was removed again).
    @discardableResult
    public func add(plugin pluginID: String, options: [(String, String)] = [], label: String? = nil,
                    confirm: (KeybayMethod) throws -> Void) throws -> KeybayMethod {
        let stored = try addMethod(plugin: pluginID, options: options, label: label)
        try Self.confirming(stored.value, confirm) { try removeMethod(stored.value.id).map { throw $0 } }
        return try stored.get()
    }

    func addMethod(plugin pluginID: String, options: [(String, String)], label: String?,
                   interaction: (any KeybayInteraction)? = nil) throws -> StoredChange<KeybayMethod> {
        let current = try session.freshSnapshot()
        guard current.methods.count < MethodsPackage.maxMethods else {
            throw KeybayError(.invalidArgument, "the store already has \(MethodsPackage.maxMethods) methods, the most it can hold")
        }
        let plugin = try Self.checkedPlugin(pluginID, label: label, options: options, configuration: session.configuration)
        // A plugin may declare that a store holds at most one of its methods (a passphrase: one to remember).
        if plugin.isOnePerStore, let old = current.methods.first(where: { $0.pluginId == pluginID }) {
            throw KeybayError(.invalidArgument, "the store already has a \(pluginID) method and \(pluginID) allows one per store; to change its secret, use change \(hexString(old.methodId))")
        }
        let enrollment = try Self.enroll(plugin, options: options, label: label ?? pluginID, configuration: session.configuration,
                                         interaction: interaction ?? session.interaction)
        let method = enrollment.method(storeId: current.keys.storeId)
        let unconfirmed = try session.rotate(expecting: current) { $0 + [method] }
        return StoredChange(value: KeybayMethod(method), unconfirmed: unconfirmed)
    }

    /// Replaces method `id` with a fresh credential of the same plugin (its label unless `label`
    /// gives a new one): the new one is enrolled and the old envelope dropped in one rotation, so
    /// the store is never without the method and never holds both. Works for a plugin that
    /// allows one method per store too: that is how its secret changes.
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
        try replaceMethod(id, options: options, label: label).get().method
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
            try replaceMethod(id, options: options, label: label, interaction: ceremony).get().method
        }
    }

    /// `replace`, for a plugin that shows the user a secret to keep: once the new method is
    /// stored, `confirm` gets it; if `confirm` throws, the old method is put back in its place
    /// (from its public record: no credential is needed) and the error rethrown, so the store
    /// opens as before and never with a secret nobody received. As with `add(confirm:)`,
    /// `confirm` runs also when the change took effect but could not be confirmed durable.
    ///
    /// - Parameters:
    ///   - id: The method to replace.
    ///   - options: The plugin's enrollment options for the new credential.
    ///   - label: A new label; the old one if nil.
    ///   - confirm: Runs on the calling thread with the new method; hand the shown secret over
    ///     here, and throw if that failed.
    /// - Returns: The new method.
    /// - Throws: What the form without `confirm` throws, and what `confirm` throws (after the
    ///   old method was put back).
    @discardableResult
    public func replace(_ id: String, options: [(String, String)] = [], label: String? = nil,
                        confirm: (KeybayMethod) throws -> Void) throws -> KeybayMethod {
        let stored = try replaceMethod(id, options: options, label: label)
        let (method, old) = stored.value
        try Self.confirming(method, confirm) {
            let now = try session.freshSnapshot()
            let new = try self.method(method.id, in: now).methodId
            try session.rotate(expecting: now) { methods in methods.map { $0.methodId == new ? old : $0 } }.map { throw $0 }
        }
        return try stored.get().method
    }

    /// The new method, and the public record of the one it replaced.
    func replaceMethod(_ id: String, options: [(String, String)], label: String?,
                       interaction: (any KeybayInteraction)? = nil) throws -> StoredChange<(method: KeybayMethod, replaced: MethodEnvelope.Public)> {
        let current = try session.freshSnapshot()
        let old = try method(id, in: current)
        let plugin = try Self.checkedPlugin(old.pluginId, label: label, options: options, configuration: session.configuration)
        let enrollment = try Self.enroll(plugin, options: options, label: label ?? old.label, configuration: session.configuration,
                                         interaction: interaction ?? session.interaction)
        let method = enrollment.method(storeId: current.keys.storeId)
        let unconfirmed = try session.rotate(expecting: current) { methods in methods.map { $0.methodId == old.methodId ? method : $0 } }
        return StoredChange(value: (KeybayMethod(method), old), unconfirmed: unconfirmed)
    }

    /// Runs `confirm` on a method just stored; if it throws, `undo` (one more rotation) takes the
    /// change back and the error is rethrown. An undo that fails too is said in the error (with
    /// confirm's code, so nothing retries it), naming the method that stays.
    static func confirming(_ method: KeybayMethod, _ confirm: (KeybayMethod) throws -> Void, undo: () throws -> Void) throws {
        do {
            try confirm(method)
        } catch {
            do {
                try undo()
            } catch let undoError {
                let code = (error as? KeybayError)?.code ?? .io
                let why = (error as? KeybayError)?.message ?? "\(error)"
                let undoWhy = (undoError as? KeybayError)?.message ?? "\(undoError)"
                throw KeybayError(code, "\(why); taking the change back failed too (\(undoWhy)): method \(method.id) (\(method.plugin)) stays in the store, and its secret was not handed over; remove it with another method")
            }
            throw error
        }
    }

    /// Checks what an enrollment is given (a label, options given once) and loads its plugin, before
    /// any ceremony.
    static func checkedPlugin(_ pluginID: String, label: String?, options: [(String, String)],
                              configuration: KeybayConfiguration) throws -> LoadedPlugin {
        if let label { try KeybayMethod.validateLabel(label) }
        var names = Set<String>()
        for (name, _) in options where !names.insert(name).inserted {
            throw KeybayError(.invalidArgument, "option \(name) given twice")
        }
        return try PluginLoader.loadMethod(pluginID, for: configuration)
    }

    /// Runs `plugin`'s enrollment ceremony after asking whether it can work here at all (never
    /// prompts), so an absent device fails before any ceremony.
    static func enroll(_ plugin: LoadedPlugin, options: [(String, String)], label: String, configuration: KeybayConfiguration,
                       interaction: any KeybayInteraction) throws -> Enrollment {
        if let reason = plugin.probe() {
            throw KeybayError(.methodUnavailable, "\(plugin.id) cannot be enrolled here: \(reason)")
        }
        let (params, secret) = try plugin.enroll(options: options, interaction: interaction,
                                                 about: MethodCallContext(applicationID: configuration.applicationID, label: label))
        return Enrollment(pluginId: plugin.id, label: label, params: params, secret: secret)
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
    ///   `.pluginRefused`; `.wrongSecret` also when the secret does not derive the stored public key.
    public func verify(_ id: String) throws {
        try verifyMethod(id)
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
        let about = MethodCallContext(applicationID: session.configuration.applicationID, label: method.label)
        let secret = try session.loadMethodPlugin(method.pluginId).unwrap(params: method.params, interaction: interaction ?? session.interaction,
                                                                          about: about, forVerification: true)
        _ = try method.privateKey(secret: secret, storeId: current.keys.storeId)
    }

    /// A plugin's one-line description of a method's parameters (this loads the plugin; no
    /// ceremony, no credential).
    ///
    /// - Parameter id: The method to describe.
    /// - Returns: One line, e.g. "Argon2id v1.3, 256 MiB, t=3, p=4".
    /// - Throws: `.methodNotFound`, `.invalidArgument` for a malformed id, `.pluginNotFound`,
    ///   `.pluginRefused`, and the plugin's failure (`.malformed` for parameters it cannot read).
    public func describe(_ id: String) throws -> String {
        let method = try method(id, in: session.freshSnapshot())
        return try session.loadMethodPlugin(method.pluginId).describe(params: method.params)
    }
}

extension KeybayAuth {
    /// The enrolled method with `id`, or `.methodNotFound`.
    private func method(_ id: String, in snapshot: StoreSnapshot) throws -> MethodEnvelope.Public {
        let bytes = try MethodNames.parseMethodID(id)
        guard let method = snapshot.methods.first(where: { $0.methodId == bytes }) else {
            throw KeybayError(.methodNotFound, "no method \(id) in \(session.storePath)")
        }
        return method
    }
}

/// A method change that took effect, and why it could not be confirmed durable, if it could not
/// (thrown by `get`, or once the caller has handed over what the new method shows).
struct StoredChange<Value> {
    let value: Value
    let unconfirmed: KeybayError?

    func get() throws -> Value {
        if let unconfirmed { throw unconfirmed }
        return value
    }
}
