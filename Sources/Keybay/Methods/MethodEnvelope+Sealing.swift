// SPDX-License-Identifier: Apache-2.0
/// The seal of one method envelope (docs/format.md, suite 2): an HPKE base-mode seal (RFC 9180,
/// X25519 / HKDF-SHA256 / ChaCha20-Poly1305) of Kstore to the method's public key, whose key pair
/// comes from the method's 32-byte secret M:
/// `ikm = HKDF(M, salt, transcript("keybay:v2:s2:key:method", storeId, methodId, pluginId))`,
/// `(sk, pk) = DeriveKeyPair(ikm)`. Only `pk` is stored, so a rotation re-seals every surviving
/// method without its credential. Format/MethodsPackage.swift holds the envelope's bytes only.
extension MethodEnvelope {
    static func keyIKMInfo(storeId: [UInt8], methodId: [UInt8], pluginId: String) -> [UInt8] {
        transcript("keybay:v2:s2:key:method", [storeId, methodId, Array(pluginId.utf8)])
    }

    static func hpkeInfo(storeId: [UInt8], method: Public) -> [UInt8] {
        transcript("keybay:v2:s2:hpke:method-envelope",
                   [storeId, method.methodId, Array(method.pluginId.utf8), method.salt, method.publicKey])
    }

    static func aad(storeId: [UInt8], epoch: UInt64, methodId: [UInt8]) -> [UInt8] {
        transcript("keybay:v2:s2:aad:method-envelope", [storeId, bigEndian(epoch), methodId])
    }

    /// The method's X25519 key pair from its secret M.
    static func keyPair(secret: SecureBytes, storeId: [UInt8], methodId: [UInt8], pluginId: String, salt: [UInt8]) -> (privateKey: SecureBytes, publicKey: [UInt8]) {
        let ikm = secret.withUnsafeBytes {
            HKDF.derive(ikm: $0, salt: salt, info: keyIKMInfo(storeId: storeId, methodId: methodId, pluginId: pluginId), count: 32)
        }
        return ikm.withUnsafeBytes { HPKE.deriveKeyPair(ikm: $0) }
    }

    /// Seals Kstore to `method.publicKey` for this epoch.
    static func seal(storeKey: SecureBytes, to method: Public, storeId: [UInt8], epoch: UInt64, ephemeralIKM: [UInt8]? = nil) throws -> MethodEnvelope {
        let (enc, ct) = try storeKey.withUnsafeBytes {
            try HPKE.seal(recipientPublicKey: method.publicKey, info: hpkeInfo(storeId: storeId, method: method),
                          aad: aad(storeId: storeId, epoch: epoch, methodId: method.methodId), plaintext: $0, ephemeralIKM: ephemeralIKM)
        }
        return MethodEnvelope(method: method, enc: enc, sealedKey: ct)
    }

    /// Opens the envelope with the method's secret (checked first: see Public.privateKey).
    func open(secret: SecureBytes, storeId: [UInt8], epoch: UInt64) throws -> SecureBytes {
        let sk = try method.privateKey(secret: secret, storeId: storeId)
        let key = sealedKey.withUnsafeBytes {
            HPKE.open(enc: enc, recipientPrivateKey: sk, info: Self.hpkeInfo(storeId: storeId, method: method),
                      aad: Self.aad(storeId: storeId, epoch: epoch, methodId: method.methodId), ciphertext: $0)
        }
        guard let key, key.count == Suite1.storeKeyBytes else {
            throw KeybayError(.integrity, "the envelope of method \(hexString(method.methodId)) failed authentication")
        }
        return key
    }
}

extension MethodEnvelope.Public {
    /// The method's private key from its secret. The derived public key must equal the stored
    /// one (constant time) before the key is used for anything: a mismatch is a wrong secret.
    func privateKey(secret: SecureBytes, storeId: [UInt8]) throws -> SecureBytes {
        let (sk, pk) = MethodEnvelope.keyPair(secret: secret, storeId: storeId, methodId: methodId, pluginId: pluginId, salt: salt)
        guard Sodium.constantTimeEqual(pk, publicKey) else {
            throw KeybayError(.wrongSecret, "the \(pluginId) secret for method \(hexString(methodId)) (\(label)) is wrong")
                .with(pluginID: pluginId, methodID: hexString(methodId))
        }
        return sk
    }
}
