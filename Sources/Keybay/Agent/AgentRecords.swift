// SPDX-License-Identifier: Apache-2.0
/// Record operations on a store the agent holds: what a session that reads through the agent
/// calls instead of its own generation. Values come back only from an agent of this user (the
/// client checks its uid). When the agent no longer serves the store (its time ran out, `lock`,
/// the file on disk changed, the agent ended or did not answer in time), a read or a write that
/// was not done throws `.authenticationRequired`: open the store again, which asks as it does
/// without an agent. A write the agent took but did not confirm in time throws `.io`: whether
/// it took effect is unknown.
struct AgentRecords: Sendable {
    let client: AgentClient
    let store: AgentStoreRef

    /// The reason of that `.io`: a program reads the record again rather than assume either outcome.
    static let unconfirmedReason = "agent-unconfirmed"

    func get(_ key: String) throws -> [UInt8]? {
        guard case .value(let value) = try ask(.get(store, key: key)) else { throw unexpected() }
        return value
    }

    /// The values of `keys`, in order; nil where there is no record.
    func getMany(_ keys: [String]) throws -> [[UInt8]?] {
        guard case .values(let values) = try ask(.getMany(store, keys: keys)), values.count == keys.count else { throw unexpected() }
        return values
    }

    func keys() throws -> [String] {
        guard case .keyList(let keys) = try ask(.keys(store)) else { throw unexpected() }
        return keys
    }

    func contains(_ key: String) throws -> Bool {
        guard case .bool(let found) = try ask(.contains(store, key: key)) else { throw unexpected() }
        return found
    }

    func set(_ key: String, value: [UInt8]) throws {
        guard case .done = try ask(.set(store, key: key, value: value)) else { throw unexpected() }
    }

    func delete(_ key: String) throws -> Bool {
        guard case .bool(let found) = try ask(.delete(store, key: key)) else { throw unexpected() }
        return found
    }

    func clearAll() throws {
        guard case .done = try ask(.clearAll(store)) else { throw unexpected() }
    }

    private func ask(_ request: AgentRequest) throws -> AgentReply {
        switch client.ask(request) {
        case .reply(.notHeld): throw ended("the agent no longer holds it: its time ran out, it was locked, or the file on disk changed")
        case .reply(.failed(let e)): throw e.with(path: store.storePath)
        case .reply(let reply): return reply
        case .unreachable(let why): throw ended(why.reason)
        case .unanswered(let why):
            guard request.writes else { throw ended(why) }
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
