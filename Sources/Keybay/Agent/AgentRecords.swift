// SPDX-License-Identifier: Apache-2.0
import Synchronization

/// The record source of a store the agent holds: each record operation is one round trip.
/// Values come back only from an agent of this user (the client checks its uid). When the
/// agent no longer serves the store (its time ran out, `lock`, the file on disk changed, the
/// agent ended or did not answer in time), a read or a write that was not done throws
/// `.authenticationRequired`: open the store again, which asks as it does without an agent. A
/// write the agent took but did not confirm in time throws `.io`: whether it took effect is
/// unknown. Keys and values are checked by the agent's store (and before, by the session).
final class AgentRecords: RecordSource {
    let client: AgentClient
    let store: AgentStoreRef
    private let closed = Mutex(false)

    init(client: AgentClient, store: AgentStoreRef) {
        self.client = client
        self.store = store
    }

    /// The reason of that `.io`: a program reads the record again rather than assume either outcome.
    static let unconfirmedReason = "agent-unconfirmed"

    var isClosed: Bool { closed.withLock { $0 } }

    func close() { closed.withLock { $0 = true } }

    func get(_ key: String) throws -> [UInt8]? {
        guard case .value(let value) = try ask(.get(key: key)) else { throw unexpected() }
        return value
    }

    func getMany(_ keys: [String]) throws -> [[UInt8]?] {
        guard case .values(let values) = try ask(.getMany(keys: keys)), values.count == keys.count else { throw unexpected() }
        return values
    }

    func keys() throws -> [String] {
        guard case .keyList(let keys) = try ask(.keys) else { throw unexpected() }
        return keys
    }

    func contains(_ key: String) throws -> Bool {
        guard case .bool(let found) = try ask(.contains(key: key)) else { throw unexpected() }
        return found
    }

    func set(_ key: String, value: [UInt8]) throws {
        guard case .done = try ask(.set(key: key, value: value)) else { throw unexpected() }
    }

    func delete(_ key: String) throws -> Bool {
        guard case .bool(let found) = try ask(.delete(key: key)) else { throw unexpected() }
        return found
    }

    func clearAll() throws {
        guard case .done = try ask(.clearAll) else { throw unexpected() }
    }

    private func ask(_ call: RecordCall) throws -> RecordAnswer {
        guard !isClosed else { throw Self.closedError(store.storePath) }
        switch client.ask(.record(store, call)) {
        case .reply(.answer(let answer)): return answer
        case .reply(.notHeld): throw ended("the agent no longer holds it: its time ran out, it was locked, or the file on disk changed")
        case .reply(.failed(let e)): throw e.with(path: store.storePath)
        case .reply: throw unexpected()
        case .unreachable(let why): throw ended(why.reason)
        case .unanswered(let why):
            guard call.writes else { throw ended(why) }
            throw KeybayError(.io, "the keybay agent did not confirm the write to \(store.storePath) (\(why)): whether it took effect is unknown; read the record again")
                .with(path: store.storePath, reason: Self.unconfirmedReason)
        }
    }

    private func ended(_ why: String) -> KeybayError {
        KeybayError(.authenticationRequired, "\(store.storePath) is no longer unlocked in the keybay agent (\(why)); open it again").with(path: store.storePath)
    }

    private func unexpected() -> KeybayError {
        KeybayError(.io, "the keybay agent at \(client.socketPath) answered a request about \(store.storePath) with a reply of another kind")
            .with(path: store.storePath)
    }
}
