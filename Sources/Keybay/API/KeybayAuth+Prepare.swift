// SPDX-License-Identifier: Apache-2.0
/// The first phase of an enrollment: the ceremony, nothing stored (``PreparedEnrollment``).
extension KeybayAuth {
    /// The first phase of `add`: checks, loads the plugin and runs its enrollment ceremony through
    /// `interaction` (the session's unless given), storing nothing. A secret the plugin shows is
    /// kept in the result's `shownSecret` instead of going to `showSecret`.
    ///
    /// Blocks the calling thread during the ceremony.
    /// - Parameters:
    ///   - pluginID: The method plugin's id, e.g. `recovery`.
    ///   - options: The plugin's enrollment options in order, each name at most once.
    ///   - label: The method's label; the plugin id if nil.
    ///   - interaction: Who the plugin may ask; the session's if nil.
    /// - Returns: The enrollment, to ``PreparedEnrollment/commit()`` or
    ///   ``PreparedEnrollment/discard()``.
    /// - Throws: `.invalidArgument` (a label or option refused, the store full, a second method of
    ///   a one-per-store plugin), `.methodUnavailable` (the probe says no), the plugin's errors.
    public func prepare(plugin pluginID: String, options: [(String, String)] = [], label: String? = nil,
                        interaction: (any KeybayInteraction)? = nil) throws -> PreparedEnrollment {
        let current = try session.freshSnapshot()
        guard current.methods.count < MethodsPackage.maxMethods else {
            throw KeybayError(.invalidArgument, "the store already has \(MethodsPackage.maxMethods) methods, the most it can hold")
        }
        let plugin = try Self.checkedPlugin(pluginID, label: label, options: options, configuration: session.configuration)
        // A plugin may declare that a store holds at most one of its methods (a passphrase: one to remember).
        if plugin.isOnePerStore, let old = current.methods.first(where: { $0.pluginId == pluginID }) {
            throw KeybayError(.invalidArgument, "the store already has a \(pluginID) method and \(pluginID) allows one per store; to change its secret, use change \(hexString(old.methodId))")
                .with(pluginID: pluginID, methodID: hexString(old.methodId), reason: "one-per-store")
        }
        let capture = ShownSecretCapture(interaction ?? session.interaction)
        let enrollment = try Self.enroll(plugin, options: options, label: label ?? pluginID, configuration: session.configuration,
                                         interaction: capture)
        return PreparedEnrollment(step: .add(session, expecting: current, method: enrollment.method(storeId: current.keys.storeId)),
                                  shownSecret: capture.secret)
    }

    /// `prepare(plugin:)`, from async code: the ceremony runs on a thread of its own, and
    /// cancelling the task cancels it.
    ///
    /// - Parameters:
    ///   - pluginID: The method plugin's id.
    ///   - options: The plugin's enrollment options in order, each name at most once.
    ///   - label: The method's label; the plugin id if nil.
    ///   - interaction: Who the plugin may ask; the session's if nil.
    /// - Returns: The enrollment, not stored.
    /// - Throws: What the synchronous form throws, and `.cancelled` when the task is cancelled.
    public func prepare(plugin pluginID: String, options: [(String, String)] = [], label: String? = nil,
                        interaction: (any KeybayInteraction)? = nil) async throws -> PreparedEnrollment {
        try await CeremonyThread.run(interaction ?? session.interaction) { ceremony in
            try prepare(plugin: pluginID, options: options, label: label, interaction: ceremony)
        }
    }

    /// The first phase of `replace`: the new credential's ceremony, nothing stored. `commit()`
    /// puts it in the place of method `id`; `takeBack()` after a commit puts the old one back.
    ///
    /// - Parameters:
    ///   - id: The method to replace.
    ///   - options: The plugin's enrollment options for the new credential.
    ///   - label: A new label; the old one if nil.
    ///   - interaction: Who the plugin may ask; the session's if nil.
    /// - Returns: The enrollment, not stored.
    /// - Throws: `.methodNotFound` (`methodID` says which), the same as `prepare(plugin:)`.
    public func prepare(replacing id: String, options: [(String, String)] = [], label: String? = nil,
                        interaction: (any KeybayInteraction)? = nil) throws -> PreparedEnrollment {
        let current = try session.freshSnapshot()
        let old = try method(id, in: current)
        let plugin = try Self.checkedPlugin(old.pluginId, label: label, options: options, configuration: session.configuration)
        let capture = ShownSecretCapture(interaction ?? session.interaction)
        let enrollment = try Self.enroll(plugin, options: options, label: label ?? old.label, configuration: session.configuration,
                                         interaction: capture)
        return PreparedEnrollment(step: .replace(session, expecting: current, old: old, method: enrollment.method(storeId: current.keys.storeId)),
                                  shownSecret: capture.secret)
    }

    /// `prepare(replacing:)`, from async code: the ceremony runs on a thread of its own, and
    /// cancelling the task cancels it.
    ///
    /// - Parameters:
    ///   - id: The method to replace.
    ///   - options: The plugin's enrollment options for the new credential.
    ///   - label: A new label; the old one if nil.
    ///   - interaction: Who the plugin may ask; the session's if nil.
    /// - Returns: The enrollment, not stored.
    /// - Throws: What the synchronous form throws, and `.cancelled` when the task is cancelled.
    public func prepare(replacing id: String, options: [(String, String)] = [], label: String? = nil,
                        interaction: (any KeybayInteraction)? = nil) async throws -> PreparedEnrollment {
        try await CeremonyThread.run(interaction ?? session.interaction) { ceremony in
            try prepare(replacing: id, options: options, label: label, interaction: ceremony)
        }
    }

    /// The one-phase forms: the enrollment is committed, then a shown secret goes to
    /// `interaction` (if it cannot take it, the enrollment is taken back), the order of
    /// ``PreparedEnrollment/commit(showingSecretWith:)``.
    /// Returns the enrollment and its store's session.
    static func commitAndShow(_ prepared: PreparedEnrollment, to interaction: any KeybayInteraction) throws -> (method: KeybayMethod, session: KeybaySession) {
        (prepared.method, try prepared.commit(showingSecretWith: interaction.showSecret))
    }

    /// Checks what an enrollment is given (a label, options given once) and loads its plugin, before
    /// any ceremony.
    static func checkedPlugin(_ pluginID: String, label: String?, options: [(String, String)],
                              configuration: KeybayConfiguration) throws -> any MethodProvider {
        if let label { try KeybayMethod.validateLabel(label) }
        try refuseRepeatedOptionNames(options)
        return try configuration.methodResolver.method(pluginID)
    }

    /// Runs `plugin`'s enrollment ceremony after asking whether it can work here at all (never
    /// prompts), so an absent device fails before any ceremony.
    static func enroll(_ plugin: any MethodProvider, options: [(String, String)], label: String, configuration: KeybayConfiguration,
                       interaction: any KeybayInteraction) throws -> Enrollment {
        if let reason = plugin.probe() {
            throw KeybayError(.methodUnavailable, "\(plugin.id) cannot be enrolled here: \(reason)")
        }
        let (params, secret, grants) = try plugin.enroll(options: options, interaction: interaction, about: MethodCallContext(configuration, label: label))
        return Enrollment(pluginId: plugin.id, label: label, params: params, secret: secret, grants: grants)
    }
}
