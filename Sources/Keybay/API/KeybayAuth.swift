/// The unlock methods of an open store. `list` never calls a plugin; `add`, `remove` and
/// `verify` involve the user only through the session's interaction handler, and only `add` and
/// `verify` run a plugin ceremony: `remove` re-seals the survivors from their public keys.
/// Like `KeybayStore.open`, each comes synchronous (blocking while the user is involved) and
/// `async`; both forms do the same work.
public struct KeybayAuth: Sendable {
    let session: KeybaySession

    /// The enrolled methods, in enrollment order.
    public func list() throws -> [KeybayMethod] {
        try session.freshSnapshot().methods.map(KeybayMethod.init)
    }

    /// Enrolls a method with `plugin` (e.g. `passphrase`) and returns it. The store gets a fresh
    /// Kstore and epoch; every record is re-encrypted in one atomic replace.
    @discardableResult
    public func add(plugin pluginID: String, options: [(String, String)] = [], label: String? = nil) throws -> KeybayMethod {
        try addMethod(plugin: pluginID, options: options, label: label)
    }

    /// `add`, from async code.
    @discardableResult
    public func add(plugin pluginID: String, options: [(String, String)] = [], label: String? = nil) async throws -> KeybayMethod {
        try addMethod(plugin: pluginID, options: options, label: label)
    }

    func addMethod(plugin pluginID: String, options: [(String, String)], label: String?) throws -> KeybayMethod {
        let label = label ?? pluginID
        guard KeybayMethod.isValidLabel(label) else {
            throw KeybayError(.invalidArgument, "invalid label: use 1–64 bytes of text without control characters")
        }
        var names = Set<String>()
        for (name, _) in options where !names.insert(name).inserted {
            throw KeybayError(.invalidArgument, "option \(name) given twice")
        }
        let current = try session.freshSnapshot()
        guard current.methods.count < MethodsPackage.maxMethods else {
            throw KeybayError(.invalidArgument, "the store already has \(MethodsPackage.maxMethods) methods, the most it can hold")
        }
        if pluginID == "passphrase", current.methods.contains(where: { $0.pluginId == "passphrase" }) {
            throw KeybayError(.invalidArgument, "the store already has a passphrase (at most one is allowed); to change it, remove the old one first (enroll another method beforehand to stay protected meanwhile)")
        }
        let plugin = try session.loadMethodPlugin(pluginID)
        // Ask the plugin first whether it can work here at all (never prompts), so an absent
        // device fails before any ceremony.
        if let reason = plugin.probe() {
            throw KeybayError(.methodUnavailable, "\(pluginID) cannot be enrolled here: \(reason)")
        }
        let (params, secret) = try plugin.enroll(options: options, interaction: session.interaction)
        let methodId = Sodium.randomBytes(MethodEnvelope.idBytes)
        let salt = Sodium.randomBytes(MethodEnvelope.saltBytes)
        let publicKey = MethodEnvelope.keyPair(secret: secret, storeId: current.keys.storeId, methodId: methodId,
                                               pluginId: pluginID, salt: salt).publicKey
        let method = MethodEnvelope.Public(methodId: methodId, pluginId: pluginID, label: label, params: params, salt: salt, publicKey: publicKey)
        try session.rotate(expecting: current) { $0 + [method] }
        return KeybayMethod(method)
    }

    /// Removes a method; with none left the store is platform-only again. Needs no credential.
    public func remove(_ id: String) throws {
        try removeMethod(id)
    }

    /// `remove`, from async code.
    public func remove(_ id: String) async throws {
        try removeMethod(id)
    }

    func removeMethod(_ id: String) throws {
        let current = try session.freshSnapshot()
        let gone = try method(id, in: current).methodId
        try session.rotate(expecting: current) { $0.filter { $0.methodId != gone } }
    }

    /// Runs a method's ceremony and checks the secret against its stored public key, without
    /// changing anything.
    public func verify(_ id: String) throws {
        try verifyMethod(id)
    }

    /// `verify`, from async code.
    public func verify(_ id: String) async throws {
        try verifyMethod(id)
    }

    func verifyMethod(_ id: String) throws {
        let current = try session.freshSnapshot()
        let method = try method(id, in: current)
        let secret = try session.loadMethodPlugin(method.pluginId).unwrap(params: method.params, interaction: session.interaction, forVerification: true)
        _ = try method.privateKey(secret: secret, storeId: current.keys.storeId)
    }

    /// A plugin's one-line description of a method's parameters (this loads the plugin).
    public func describe(_ id: String) throws -> String {
        let method = try method(id, in: session.freshSnapshot())
        return try session.loadMethodPlugin(method.pluginId).describe(params: method.params)
    }
}

extension KeybayAuth {
    /// The enrolled method with `id`, or `.methodNotFound`.
    private func method(_ id: String, in snapshot: StoreSnapshot) throws -> MethodEnvelope.Public {
        let bytes = try KeybayMethod.parseID(id)
        guard let method = snapshot.methods.first(where: { $0.methodId == bytes }) else {
            throw KeybayError(.methodNotFound, "no method \(id) in \(session.storePath)")
        }
        return method
    }
}

extension KeybayMethod {
    /// Method ids are 32 lowercase hex characters.
    static func parseID(_ id: String) throws -> [UInt8] {
        let chars = Array(id.utf8)
        func nibble(_ c: UInt8) -> UInt8? {
            switch c { case 0x30...0x39: c - 0x30; case 0x61...0x66: c - 0x61 + 10; default: nil }
        }
        guard chars.count == 2 * MethodEnvelope.idBytes else {
            throw KeybayError(.invalidArgument, "method ids are 32 lowercase hex characters")
        }
        var out: [UInt8] = []
        for i in stride(from: 0, to: chars.count, by: 2) {
            guard let hi = nibble(chars[i]), let lo = nibble(chars[i + 1]) else {
                throw KeybayError(.invalidArgument, "method ids are 32 lowercase hex characters")
            }
            out.append(hi << 4 | lo)
        }
        return out
    }
}
