// SPDX-License-Identifier: Apache-2.0
/// The agent, as the library sees it (docs/agent.md): whether it holds a store, handing a store
/// to it (`keybay-methods unlock`) and making it forget (`lock`). Every round trip is bounded,
/// and only an agent running as this user is used.
extension KeybayStore {
    /// Hands the store `session` unlocked (opened by itself, not through the agent) to the agent
    /// at `agentSocket` for `seconds` (0: until `lock` or the agent ends): the generation's keys,
    /// the file they belong to and the store's domain; nothing of the root or the methods.
    ///
    /// - Returns: When the agent forgets the store, in Unix seconds; 0 for never.
    /// - Throws: `.protectionMismatch` for a platform-only store; `.io` when no agent takes it;
    ///   what the agent met (`.keyChanged`: the file changed after it was unlocked).
    package static func unlock(_ session: KeybaySession, agentSocket: String, for seconds: UInt64) throws -> Int64 {
        try AgentClient(socketPath: agentSocket).hold(session.handoff(seconds: seconds))
    }

    /// Makes the agent forget the store of `configuration`; how many it forgot (0 or 1), nil when
    /// no agent answers.
    package static func lock(_ configuration: KeybayConfiguration) -> UInt32? {
        guard let socket = configuration.agentSocket else { return nil }
        return AgentClient(socketPath: socket).forget(configuration.agentStore)
    }

    /// Makes the agent at `agentSocket` forget every store; how many, nil when no agent answers.
    package static func lockAll(agentSocket: String) -> UInt32? {
        AgentClient(socketPath: agentSocket).forget(nil)
    }

    /// Whether an agent of this user answers at `agentSocket`.
    package static func agentAnswers(_ agentSocket: String) -> Bool {
        AgentClient(socketPath: agentSocket).isRunning
    }

    /// The agent's hold on the store, if it has one and the configuration accepts the store's root
    /// (an explicit root the store is not on is refused by the open without the agent).
    static func heldByAgent(_ configuration: KeybayConfiguration) -> AgentRecords? {
        guard let socket = configuration.agentSocket else { return nil }
        let client = AgentClient(socketPath: socket)
        guard let held = client.holding(configuration.agentStore) else { return nil }
        let asked = configuration.rootPlugin
        if configuration.requireRootPlugin && asked != KeybayConfiguration.automaticRoot && asked != held.rootID { return nil }
        return AgentRecords(client: client, store: configuration.agentStore)
    }

    /// `status`'s `unlocked`: asked only for a protected store.
    static func agentUnlock(_ configuration: KeybayConfiguration, _ inspection: StoreInspection) -> KeybayStatus.Unlocked? {
        guard inspection.state == .protected, let socket = configuration.agentSocket,
              let held = AgentClient(socketPath: socket).holding(configuration.agentStore) else { return nil }
        return KeybayStatus.Unlocked(until: held.until == 0 ? nil : held.until)
    }

    /// The store opened without the agent, never created: what a session that reads through the
    /// agent opens for its method operations when `auth` needs the key (its records stay with the agent).
    static func openLocally(_ configuration: KeybayConfiguration, unlock: Unlock, interaction: any KeybayInteraction) throws -> OpenGeneration {
        let engine = try StoreEngine(configuration.settings, interaction: interaction)
        let (file, generation) = try engine.open(create: false, unlock: unlock)
        return OpenGeneration(engine: engine.withoutRead, file: file, generation: generation)
    }
}

extension KeybayConfiguration {
    /// How the agent names this configuration's store.
    var agentStore: AgentStoreRef { AgentStoreRef(applicationID: applicationID, dataHome: dataHome, stateHome: stateHome) }
}

/// How a session that reads through the agent opens the store itself: as it was asked to be
/// opened (the platform alone, a named method, or a method `choose` picks). `choose` is the
/// host's own closure, called only by that session's `auth`, on the calling thread.
enum LocalReopen: @unchecked Sendable {
    case platform
    case method(String)
    case choosing(([KeybayMethod]) throws -> String)

    init(_ method: String?) { self = method.map { .method($0) } ?? .platform }

    func unlock(_ configuration: KeybayConfiguration, interaction: any KeybayInteraction) throws -> Unlock {
        switch self {
        case .platform: return .platform
        case .method(let id): return try KeybayStore.unlock(configuration, method: id, ceremony: interaction)
        case .choosing(let choose): return KeybayStore.unlock(configuration, choosing: choose, ceremony: interaction)
        }
    }
}
