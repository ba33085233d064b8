// SPDX-License-Identifier: Apache-2.0
import Synchronization

/// How a session's method operations reach the store: through the session's own `LocalRecords`,
/// which a session that reads through the agent opens on first need. Record operations never
/// use it there; nothing switches a session's record source.
extension KeybaySession {
    /// The store as this session reads it itself: the record source of a session that reads the
    /// store itself; for one whose records go through the agent, the store opened by itself on
    /// the first call (asking as `open` would have, outside any lock: a ceremony may wait for the
    /// user) and kept for later method operations.
    func localRecords() throws -> LocalRecords {
        if let own = ownRecords.withLock({ $0 }) { return own }
        guard !records.isClosed else { throw closedError() }
        let opened = LocalRecords(try KeybayStore.openLocally(configuration, unlock: reopen.unlock(configuration, interaction: interaction),
                                                              interaction: interaction))
        return try ownRecords.withLock { own in
            // `close()` marks the records closed before it closes these: one of the two sees the other.
            guard !records.isClosed else {
                opened.close()
                throw closedError()
            }
            if let first = own {
                opened.close()
                return first
            }
            own = opened
            return opened
        }
    }

    /// The live generation (re-read if another process replaced the file), as method operations see it.
    func freshSnapshot() throws -> StoreSnapshot {
        try localRecords().freshSnapshot()
    }

    /// The enrolled methods, as stored; for a session that reads through the agent, read with
    /// the root alone (no ceremony).
    func methods() throws -> [MethodEnvelope.Public] {
        if let own = ownRecords.withLock({ $0 }) { return try own.freshSnapshot().methods }
        guard !records.isClosed else { throw closedError() }
        return try StoreEngine(configuration.settings, interaction: interaction).inspect().methods
    }

    /// The generation's keys, root, domain and file, for handing the store to the agent.
    func handoff(seconds: UInt64) throws -> AgentHandoff {
        try localRecords().withGeneration { open in
            let keys = open.generation.snapshot.keys
            guard keys.suite == .methods else {
                throw KeybayError(.protectionMismatch, "\(storePath) is protected by the platform root only: it opens without asking, there is nothing to unlock")
                    .with(path: storePath)
            }
            guard open.generation.identity != .unknown else {
                throw KeybayError(.keyChanged, "\(storePath) was written but not confirmed durable; open it again").with(path: storePath)
            }
            return AgentHandoff(store: configuration.agentStore, seconds: seconds, identity: open.generation.identity, rootID: open.engine.root.id,
                                domain: open.engine.keyring.domain, keys: keys)
        }
    }

    func loadMethodPlugin(_ id: String) throws -> any MethodProvider {
        try configuration.methodResolver.method(id)
    }

    /// Replaces the method list (see StoreEngine.rotate); fails if the methods on disk are no
    /// longer those of `expected` (another session or process changed them meanwhile). Returns
    /// why a rotation that took effect could not be confirmed durable, for the caller to throw
    /// once it has handed over what the new method shows.
    func rotate(expecting expected: StoreSnapshot, _ change: ([MethodEnvelope.Public]) -> [MethodEnvelope.Public]) throws -> KeybayError? {
        try localRecords().replaceGeneration { try $0.engine.rotate($0.file, previous: $0.generation, expecting: expected, change: change) }
    }

    func closedError() -> KeybayError { LocalRecords.closedError(storePath) }
}
