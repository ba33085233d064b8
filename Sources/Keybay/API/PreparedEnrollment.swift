// SPDX-License-Identifier: Apache-2.0
import Synchronization

/// An enrollment whose ceremony has run (the plugin asked, the user answered) but that is not
/// stored yet: the first phase of `KeybayAuth.prepare` and `KeybayStore.prepare`.
///
/// `commit()` stores it in one rotation (on a fresh home: creates the store with it as its first
/// method); `discard()` drops it. A plugin that shows the user a secret to keep (a recovery key)
/// does not reach the host's `showSecret` during the ceremony: the secret is in `shownSecret`,
/// and only the new store accepts it. Hand it over after `commit()`; if that fails, `takeBack()`
/// removes the method again, so a secret nobody received never stays a way in.
///
/// `Sendable`: its state is behind a lock. Each of `commit`, `discard` and `takeBack` takes
/// effect once; the method's secret itself is never kept (only its public envelope).
public final class PreparedEnrollment: Sendable {
    /// The method as it will be stored: its id, plugin and label.
    public let method: KeybayMethod
    /// What the plugin asked to show the user once (a recovery key), in guarded memory; nil for a
    /// method that shows nothing.
    public let shownSecret: KeybayShownSecret?
    private let step: Step
    private let progress = Mutex<Progress>(.prepared)

    /// What `commit` does.
    enum Step: Sendable {
        /// Adds `method` to the session's store, whose methods must still be those of `expecting`.
        case add(KeybaySession, expecting: StoreSnapshot, method: MethodEnvelope.Public)
        /// Puts `method` in the place of `old`.
        case replace(KeybaySession, expecting: StoreSnapshot, old: MethodEnvelope.Public, method: MethodEnvelope.Public)
        /// Creates the store with `first` as its only method, with the engine that found the home
        /// empty (it checks again under the lock).
        case create(KeybayConfiguration, engine: StoreEngine, first: FirstMethod)
    }

    private enum Progress: Sendable {
        case prepared, committed(KeybaySession), discarded, takenBack
    }

    init(step: Step, shownSecret: KeybayShownSecret?) {
        self.step = step
        self.shownSecret = shownSecret
        switch step {
        case .add(_, _, let method), .replace(_, _, _, let method): self.method = KeybayMethod(method)
        case .create(_, _, let first): self.method = KeybayMethod(first.method)
        }
    }

    /// Stores the method and returns the session of its store: the one it was prepared on, or
    /// for a fresh home the new store's. Synchronous (a write; the root may ask through the
    /// session's interaction, e.g. a locked keyring).
    ///
    /// - Throws: `.stateConflict` when another process changed the store's methods since
    ///   `prepare` (prepare again); `.alreadyInitialized`/`.stateConflict` when a fresh home is no
    ///   longer empty; `.io` with `tookEffect` when the method was stored but could not be
    ///   confirmed durable: it is in the store, so hand over `shownSecret` all the same (and
    ///   `takeBack()` works); any other error: nothing was stored. `.closed` after `discard()`,
    ///   and a second `commit()` is `.invalidArgument`.
    @discardableResult
    public func commit() throws -> KeybaySession {
        try progress.withLock { progress in
            guard case .prepared = progress else { throw Self.used(progress, "commit") }
            let (session, unconfirmed) = try store()
            // Committed even when unconfirmed: the method is in the store, and takeBack works.
            progress = .committed(session)
            if let unconfirmed { throw unconfirmed }
            return session
        }
    }

    /// Stores the enrollment, then hands the secret it shows (if any) to `show`, and takes the
    /// enrollment back if `show` fails: the one order every front end uses (the one-phase
    /// enrollments, the CLI, the C API's `keybay_enroll`).
    ///
    /// Why this order: a secret is shown only once it opens the store, so a user never keeps a
    /// recovery key for a method a failed write never stored; and a secret that may not have
    /// reached the user is not left as a way in. Showing first would leave the user holding a
    /// secret that opens nothing whenever the commit fails after it.
    ///
    /// - Parameter show: Hands the secret to the user; called at most once, after the commit
    ///   (also when it took effect unconfirmed). What it throws is rethrown once the enrollment
    ///   is taken back.
    /// - Returns: The session of the method's store.
    /// - Throws: What ``commit()`` throws (when it took effect, after `show` ran); what `show`
    ///   throws; `.io` with `tookEffect` and the method's id when `show` failed and taking the
    ///   enrollment back failed too (the method stays in the store, its secret with nobody).
    @discardableResult
    public func commit(showingSecretWith show: (KeybayShownSecret) throws -> Void) throws -> KeybaySession {
        guard let shown = shownSecret else { return try commit() }
        var unconfirmed: KeybayError?
        let session: KeybaySession
        do {
            session = try commit()
        } catch let e as KeybayError where e.tookEffect {
            // Stored all the same: the secret opens the store, so it is handed over.
            unconfirmed = e
            guard case .committed(let s) = progress.withLock({ $0 }) else { throw e }
            session = s
        }
        do {
            try show(shown)
        } catch {
            do {
                try takeBack()
            } catch let undo {
                let why = (error as? KeybayError)?.message ?? "\(error)"
                let undoWhy = (undo as? KeybayError)?.message ?? "\(undo)"
                throw KeybayError(.io, "the \(shown.kind.displayName) could not be shown (\(why)), and taking the enrollment back failed too (\(undoWhy)): method \(method.id) (\(method.plugin)) stays in the store with its secret shown to nobody; remove it with another method",
                                  tookEffect: true).with(methodID: method.id)
            }
            throw error
        }
        if let unconfirmed { throw unconfirmed }
        return session
    }

    /// Drops an enrollment that was not committed (a no-op after `commit()`). The method's
    /// secret was never kept; the shown secret's memory is wiped when the last reference to it
    /// goes.
    public func discard() {
        progress.withLock { progress in
            if case .prepared = progress { progress = .discarded }
        }
    }

    /// Takes a committed enrollment back, when its `shownSecret` could not be handed over: an
    /// added method is removed, a replaced one put back in its place from its public record (no
    /// credential is needed), a store created with it removed again (nothing was there before).
    ///
    /// - Throws: what the undo met (then the method stays, and the store still opens with it);
    ///   `.invalidArgument` when the enrollment was not committed.
    public func takeBack() throws {
        try progress.withLock { progress in
            guard case .committed(let session) = progress else { throw Self.used(progress, "takeBack") }
            switch step {
            case .add:
                if let unconfirmed = try KeybayAuth(session: session).removeMethod(method.id) { throw unconfirmed }
            case .replace(_, _, let old, let new):
                let now = try session.freshSnapshot()
                if let unconfirmed = try session.rotate(expecting: now, { methods in methods.map { $0.methodId == new.methodId ? old : $0 } }) {
                    throw unconfirmed
                }
            case .create(let configuration, let engine, _):
                session.close()
                try KeybayStore.reset(configuration, interaction: engine.interaction)
            }
            progress = .takenBack
        }
    }

    /// The rotation or creation `step` names, and why it could not be confirmed durable.
    private func store() throws -> (KeybaySession, KeybayError?) {
        switch step {
        case .add(let session, let expected, let method):
            return (session, try session.rotate(expecting: expected) { $0 + [method] })
        case .replace(let session, let expected, let old, let method):
            return (session, try session.rotate(expecting: expected) { methods in methods.map { $0.methodId == old.methodId ? method : $0 } })
        case .create(let configuration, let engine, let first):
            let (file, landed) = try engine.initialize(first: first)
            return (KeybaySession(configuration, engine: engine, file: file, generation: landed.generation, interaction: engine.interaction),
                    landed.unconfirmed)
        }
    }

    private static func used(_ progress: Progress, _ call: String) -> KeybayError {
        switch progress {
        case .discarded: KeybayError(.closed, "\(call): the enrollment was discarded")
        case .takenBack: KeybayError(.invalidArgument, "\(call): the enrollment was taken back")
        case .committed: KeybayError(.invalidArgument, "\(call): the enrollment is committed already")
        case .prepared: KeybayError(.invalidArgument, "\(call): the enrollment is not committed")
        }
    }
}

/// The interaction a prepared enrollment's ceremony runs with: everything goes to the host's,
/// except a secret to show, which is kept for `PreparedEnrollment.shownSecret` (a plugin shows
/// at most one per enrollment).
final class ShownSecretCapture: ForwardingInteraction, @unchecked Sendable {
    private let captured = Mutex<KeybayShownSecret?>(nil)

    var secret: KeybayShownSecret? { captured.withLock { $0 } }

    override func showSecret(_ secret: KeybayShownSecret) throws {
        try captured.withLock { held in
            guard held == nil else { throw KeybayError(.pluginFailed, "a plugin showed a second secret in one enrollment") }
            held = secret
        }
    }
}
