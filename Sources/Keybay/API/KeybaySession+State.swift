// SPDX-License-Identifier: Apache-2.0
import Synchronization

/// What a session holds and how it reaches it: its own generation (read, written and rotated
/// through the engine), or the agent, until `auth` needs the key and the session opens the
/// store itself.
extension KeybaySession {

    static func frames(of snapshot: StoreSnapshot, excluding key: [UInt8]) -> [PendingFrame] {
        var frames: [PendingFrame] = []
        frames.reserveCapacity(snapshot.entries.count + 1)
        for (i, e) in snapshot.entries.enumerated() where e.key != key {
            frames.append(PendingFrame(key: e.key, bytes: snapshot.frame(at: i), digest: e.digest))
        }
        return frames
    }

    /// The live generation (re-read if another process replaced the file). A session that reads
    /// through the agent opens the store itself first, asking as `open` would have.
    func freshSnapshot() throws -> StoreSnapshot {
        try withLocal { open in
            if open.file.identity() != open.generation.identity {
                open.generation = try open.engine.reload(open.file, reusing: open.generation.snapshot)
            }
            return open.generation.snapshot
        }
    }

    /// The enrolled methods, as stored; for a session that reads through the agent, read with
    /// the root alone (no ceremony).
    func methods() throws -> [MethodEnvelope.Public] {
        guard try throughAgent() != nil else { return try freshSnapshot().methods }
        return try StoreEngine(configuration.settings, interaction: interaction).inspect().methods
    }

    /// Whether the live file is still the one the session holds (the agent forgets a store
    /// whose file is not).
    var holdsLiveFile: Bool {
        state.withLock { state in
            guard case .local(let open) = state else { return false }
            return open.file.identity() == open.generation.identity
        }
    }

    /// The generation's keys, root, domain and file, for handing the store to the agent.
    func handoff(seconds: UInt64) throws -> AgentHandoff {
        try withLocal { open in
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
        try replaceGeneration { try $0.engine.rotate($0.file, previous: $0.generation, expecting: expected, change: change) }
    }

    func write(_ change: (StoreSnapshot) throws -> [PendingFrame]?) throws {
        if let unconfirmed = try replaceGeneration({ try $0.engine.commit($0.file, previous: $0.generation, change: change) }) { throw unconfirmed }
    }

    /// Runs a write on the open generation and keeps the one it produces, also when it could
    /// not be confirmed durable (it is the store all the same); returns why not.
    func replaceGeneration(_ body: (OpenGeneration) throws -> Landed) throws -> KeybayError? {
        try withLocal { open in
            let landed = try body(open)
            open.generation = landed.generation
            return landed.unconfirmed
        }
    }

    /// The agent this session reads through; nil when it reads the store itself.
    func throughAgent() throws -> AgentRecords? {
        try state.withLock { state in
            switch state {
            case .closed: throw closedError()
            case .agent(let agent): return agent
            case .local: return nil
            }
        }
    }

    /// Runs `body` on the session's own generation, under its lock. A session that reads through
    /// the agent first opens the store itself (outside the lock: a ceremony may wait for the user).
    func withLocal<R>(_ body: (inout OpenGeneration) throws -> R) throws -> R {
        while true {
            if try throughAgent() != nil {
                let opened = try KeybayStore.openLocally(configuration, unlock: reopen.unlock(configuration, interaction: interaction), interaction: interaction)
                try state.withLock { state in
                    switch state {
                    case .closed: throw closedError()
                    case .agent: state = .local(opened)
                    case .local: break
                    }
                }
            }
            let result: R? = try state.withLock { state in
                switch state {
                case .closed: throw closedError()
                case .agent: return nil
                case .local(var open):
                    defer { state = .local(open) }
                    return try body(&open)
                }
            }
            if let result { return result }
        }
    }

    func closedError() -> KeybayError { KeybayError(.closed, "the session for \(storePath) is closed") }
}

/// What a session works on: its own open generation, the agent, or nothing (closed).
enum SessionState: Sendable {
    case local(OpenGeneration)
    case agent(AgentRecords)
    case closed
}

/// A store the session reads itself: the engine, the directory and the generation it holds.
struct OpenGeneration: Sendable {
    let engine: StoreEngine
    let file: StoreFile
    var generation: Generation
}
