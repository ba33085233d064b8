// SPDX-License-Identifier: Apache-2.0
import Synchronization

/// How a host opens its store: which method unlocks it and when a failed unlock is tried again.
/// It is the one policy of every front end: the CLI, the C API (`keybay_open`), Python and the
/// credential helpers all open through `KeybayStore.open(_:policy:interaction:)`.
///
/// **The method.** A platform-only store opens with the platform root alone. A protected store
/// opens with ``method`` when it is given; else with its only method; else with the one the
/// interaction's ``KeybayInteraction/chooseMethod(_:)`` returns. An interaction that cannot
/// choose throws `.authenticationRequired`, with the store's methods in
/// ``KeybayError/methods``. Methods are never tried in turn.
///
/// **Tries.** Another process that changes the store's methods while this one unlocks it
/// (`.keyChanged`) makes the open start again, at most ``keyChangeRetries`` times, with the
/// method chosen the first time (the chooser is not asked again). A secret the method refuses
/// (`.wrongSecret`) is asked for again, up to ``tries`` asks in all, when the interaction allows
/// it (``KeybayInteraction/mayAskAgain(after:)``); each later ask has
/// ``KeybaySecretRequest/isRetry`` set, and ``KeybaySecretRequest/retriesLeft`` counts the asks
/// left (this one included) where the plugin names no count of its own.
public struct KeybayOpenPolicy: Sendable, Equatable {
    /// The id of the method to unlock with (an id from `status().methods`); nil: the store's
    /// only method, else the interaction's choice.
    public var method: String?
    /// Create the platform root and an empty store when nothing exists (ignored with ``method``:
    /// a named method needs its store).
    public var createIfAbsent: Bool
    /// How many times in all a secret may be asked for when the plugin says it was wrong:
    /// 1 (the default) asks once; at most ``maximumTries``.
    public var tries: Int

    /// How often an open starts again after another process changed the store's methods.
    public static let keyChangeRetries = 2
    /// The most ``tries`` may be.
    public static let maximumTries = 10

    /// A policy; `tries` is clamped to 1...``maximumTries``.
    /// - Parameters:
    ///   - method: The method to unlock with; nil for the only one or the interaction's choice.
    ///   - createIfAbsent: Create the store when nothing exists.
    ///   - tries: Asks in all for a secret the plugin refuses as wrong.
    public init(method: String? = nil, createIfAbsent: Bool = true, tries: Int = 1) {
        self.method = method
        self.createIfAbsent = createIfAbsent
        self.tries = min(max(tries, 1), Self.maximumTries)
    }

    /// Whether a failed open (or a command after it) should start again: `.keyChanged`, while
    /// `retriesSoFar` is under ``keyChangeRetries``. A host that runs several calls on one
    /// session (the CLI's commands) asks this after a call fails, opens again and repeats the
    /// calls.
    /// - Parameters:
    ///   - error: What the open or the call threw.
    ///   - retriesSoFar: How many times it started again already.
    /// - Returns: True to open again.
    public static func shouldOpenAgain(after error: KeybayError, retriesSoFar: Int) -> Bool {
        error.code == .keyChanged && retriesSoFar < keyChangeRetries
    }
}

extension KeybayStore {
    /// Opens the application's store as `policy` says (see ``KeybayOpenPolicy``): the method
    /// named, the only one, or the interaction's choice; again after a change of methods by
    /// another process; a wrong secret asked for again where the policy and the interaction
    /// allow it.
    ///
    /// Synchronous: it blocks while the method's plugin involves the user.
    /// - Parameters:
    ///   - configuration: Which application's store, and where.
    ///   - policy: The method, whether to create, the tries.
    ///   - interaction: Who the method's plugin, the root and the choice may ask; kept by the session.
    /// - Returns: An open session.
    /// - Throws: `.authenticationRequired` with ``KeybayError/methods`` when a protected store
    ///   has several methods and the interaction cannot choose; what
    ///   `open(_:method:createIfAbsent:interaction:)` throws otherwise, with `.wrongSecret`
    ///   only once the tries are used up.
    public static func open(_ configuration: KeybayConfiguration, policy: KeybayOpenPolicy,
                            interaction: any KeybayInteraction = NonInteractive()) throws -> KeybaySession {
        try PolicyOpen(configuration, policy: policy, interaction: interaction).run { ceremony, reopen in
            try openStore(configuration, unlock: reopen.unlock(configuration, interaction: ceremony), reopen: reopen,
                          createIfAbsent: policy.createIfAbsent, interaction: interaction)
        }
    }

    /// `open(_:policy:interaction:)`, from async code: the same work on a thread of its own;
    /// cancelling the calling task cancels the ceremony (`.cancelled`).
    /// - Parameters:
    ///   - configuration: Which application's store, and where.
    ///   - policy: The method, whether to create, the tries.
    ///   - interaction: Who the method's plugin, the root and the choice may ask; kept by the session.
    /// - Returns: An open session.
    /// - Throws: What the synchronous form throws, and `.cancelled` when the task is cancelled.
    public static func open(_ configuration: KeybayConfiguration, policy: KeybayOpenPolicy,
                            interaction: any KeybayInteraction = NonInteractive()) async throws -> KeybaySession {
        try await CeremonyThread.run(interaction) { ceremony in
            try PolicyOpen(configuration, policy: policy, interaction: ceremony).run { asking, reopen in
                try openStore(configuration, unlock: reopen.unlock(configuration, interaction: asking), reopen: reopen,
                              createIfAbsent: policy.createIfAbsent, interaction: interaction)
            }
        }
    }
}

/// One open under a policy: the choice, made once and remembered across its attempts, and the
/// attempts themselves.
final class PolicyOpen: Sendable {
    let configuration: KeybayConfiguration
    let policy: KeybayOpenPolicy
    let interaction: any KeybayInteraction
    /// The method chosen (or named), once known.
    private let chosen: Mutex<String?>

    init(_ configuration: KeybayConfiguration, policy: KeybayOpenPolicy, interaction: any KeybayInteraction) {
        self.configuration = configuration
        self.policy = policy
        self.interaction = interaction
        chosen = Mutex(policy.method)
    }

    /// Runs `attempt` with the ceremony's interaction and the way to unlock, until it opens or
    /// fails for good.
    func run(_ attempt: (_ ceremony: any KeybayInteraction, _ reopen: LocalReopen) throws -> KeybaySession) throws -> KeybaySession {
        var keyChanges = 0, wrong = 0
        while true {
            let asking = TriesInteraction(interaction, failures: wrong, tries: policy.tries)
            do {
                return try attempt(asking, unlock)
            } catch let e as KeybayError where KeybayOpenPolicy.shouldOpenAgain(after: e, retriesSoFar: keyChanges) {
                keyChanges += 1
                // Said, because the method may ask for its secret again.
                interaction.message("another process changed the store's unlock methods meanwhile; opening it again", level: .info)
            } catch let e as KeybayError where e.code == .wrongSecret && wrong + 1 < policy.tries && interaction.mayAskAgain(after: e) {
                wrong += 1
            }
        }
    }

    /// The method named or chosen, else a choice: the only method, or the interaction's.
    private var unlock: LocalReopen {
        if let id = chosen.withLock({ $0 }) { return .method(id) }
        return .choosing { [self] methods in
            if let id = chosen.withLock({ $0 }) { return id }
            let id = try methods.count == 1 ? methods[0].id : choose(methods)
            chosen.withLock { $0 = id }
            return id
        }
    }

    /// The interaction's choice among `methods`, each described by its plugin's flags.
    private func choose(_ methods: [KeybayMethod]) throws -> String {
        let described = methods.map { $0.describingDevice(search: configuration.pluginSearch) }
        let id = try interaction.chooseMethod(described)
        guard methods.contains(where: { $0.id == id }) else {
            throw KeybayError(.methodNotFound, "the method chosen, \(id), is not one of \(configuration.storePath)'s").with(path: configuration.storePath)
        }
        return id
    }
}

/// The interaction an attempt's ceremony asks through: the host's, with each secret request
/// saying whether it follows a wrong secret and how many asks are left.
final class TriesInteraction: ForwardingInteraction, @unchecked Sendable {
    private let failures: Int
    private let tries: Int

    init(_ inner: any KeybayInteraction, failures: Int, tries: Int) {
        self.failures = failures
        self.tries = tries
        super.init(inner)
    }

    override func askSecret(_ request: KeybaySecretRequest, into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
        guard tries > 1, !request.isNew else { return try inner.askSecret(request, into: buffer) }
        return try inner.askSecret(request.retrying(failures: failures, tries: tries), into: buffer)
    }
}
