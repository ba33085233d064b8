// SPDX-License-Identifier: Apache-2.0
/// A credential as a method plugin's enrollment made it, not yet bound to a store: the public
/// half of its envelope depends on the store id, which a store created together with its first
/// method only gets when it is sealed.
struct Enrollment: Sendable {
    let pluginId: String
    let label: String
    let params: [UInt8]
    let secret: SecureBytes
    /// The files the host opened for the plugin at enrollment, recorded with the method.
    var grants: [FileGrant] = []

    /// The first method of a store not made yet, and the store id it is made for.
    func first() -> FirstMethod {
        let storeId = Sodium.randomBytes(Suite1.storeIdBytes)
        return FirstMethod(storeId: storeId, method: method(storeId: storeId))
    }

    /// The envelope's public half for the store `storeId`: a fresh method id and salt, and the
    /// public key M derives with them.
    func method(storeId: [UInt8]) -> MethodEnvelope.Public {
        let methodId = Sodium.randomBytes(MethodEnvelope.idBytes)
        let salt = Sodium.randomBytes(MethodEnvelope.saltBytes)
        let publicKey = MethodEnvelope.keyPair(secret: secret, storeId: storeId, methodId: methodId, pluginId: pluginId, salt: salt).publicKey
        return MethodEnvelope.Public(methodId: methodId, pluginId: pluginId, label: label, params: params, salt: salt, publicKey: publicKey,
                                     grants: grants)
    }
}

/// A new store's first method: its envelope's public half, bound to the store id the store will
/// be sealed with.
struct FirstMethod: Sendable {
    let storeId: [UInt8]
    let method: MethodEnvelope.Public
}
