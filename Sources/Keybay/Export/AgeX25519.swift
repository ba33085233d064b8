// SPDX-License-Identifier: Apache-2.0
/// age's X25519 recipient type (age spec, "The X25519 recipient type"): recipients `age1…`,
/// identities `AGE-SECRET-KEY-1…`, and the `X25519` stanza that wraps the 16-byte file key
/// with ChaCha20-Poly1305 under HKDF(X25519(ephemeral, recipient), ephemeral share | recipient).
enum AgeX25519 {
    static let stanzaType = "X25519"
    static let recipientHRP = "age"
    static let identityHRP = "age-secret-key-"
    private static let info = Array("age-encryption.org/v1/X25519".utf8)
    /// The wrap nonce is fixed: each wrap key is used once.
    private static let zeroNonce = [UInt8](repeating: 0, count: 12)

    /// The 32-byte public key of an `age1…` recipient.
    static func parseRecipient(_ text: String) throws -> [UInt8] {
        guard let (hrp, key) = Bech32.decode(Array(text.utf8)[...]), hrp == recipientHRP, key.count == 32, text == text.lowercased() else {
            throw KeybayError(.invalidArgument, "'\(text.prefix(80))' is not an age X25519 recipient (age1…)")
        }
        return key
    }

    static func encodeRecipient(_ publicKey: [UInt8]) -> String {
        String(decoding: publicKey.withUnsafeBytes { Bech32.encode(hrp: recipientHRP, data: $0) }, as: UTF8.self)
    }

    /// The private key of an `AGE-SECRET-KEY-1…` line, in guarded memory; nil if the line is not one.
    static func parseIdentity(_ line: ArraySlice<UInt8>) -> SecureBytes? {
        guard line.allSatisfy({ !($0 >= 0x61 && $0 <= 0x7a) }), var (hrp, key) = Bech32.decode(line) else { return nil }
        defer { Sodium.wipe(&key) }
        guard hrp == identityHRP, key.count == 32 else { return nil }
        return SecureBytes(copying: key)
    }

    /// The uppercase identity line for a private key (tests and key generation).
    static func encodeIdentity(_ privateKey: SecureBytes) -> [UInt8] {
        var lower = privateKey.withUnsafeBytes { Bech32.encode(hrp: identityHRP, data: $0) }
        defer { Sodium.wipe(&lower) }
        return lower.map { $0 >= 0x61 && $0 <= 0x7a ? $0 - 32 : $0 }
    }

    static func publicKey(of identity: SecureBytes) -> [UInt8] { HPKE.publicKey(of: identity) }

    /// The stanza wrapping `fileKey` to `recipient`; `ephemeral` pins the ephemeral secret for tests.
    static func wrap(fileKey: SecureBytes, to recipient: [UInt8], ephemeral: SecureBytes = SecureBytes(randomCount: 32)) throws -> AgeStanza {
        let share = HPKE.publicKey(of: ephemeral)
        guard let shared = HPKE.dh(privateKey: ephemeral, publicKey: recipient) else {
            throw KeybayError(.invalidArgument, "the age recipient \(encodeRecipient(recipient).prefix(20))… is a low-order point")
        }
        let body = fileKey.withUnsafeBytes { HPKE.aeadSeal(key: wrapKey(shared, share: share, recipient: recipient), nonce: zeroNonce, aad: [], plaintext: $0) }
        return AgeStanza(arguments: [stanzaType, String(decoding: Base64.encode(share, padded: false), as: UTF8.self)], body: body)
    }

    /// The file key if `stanza` is an X25519 stanza for `identity`, nil if it is not for it (or
    /// not X25519); throws a header failure for an X25519 stanza that breaks the spec's rules,
    /// or whose share gives an all-zero shared secret.
    static func unwrap(_ stanza: AgeStanza, identity: SecureBytes, publicKey: [UInt8]) throws(AgeFailure) -> SecureBytes? {
        guard stanza.arguments.first == stanzaType else { return nil }
        let share = try validShare(stanza)
        guard let shared = HPKE.dh(privateKey: identity, publicKey: share) else {
            throw .header("an X25519 stanza's share gives an all-zero shared secret")
        }
        let key = wrapKey(shared, share: share, recipient: publicKey)
        return stanza.body.withUnsafeBytes { HPKE.aeadOpen(key: key, nonce: zeroNonce, aad: [], ciphertext: $0) }
    }

    /// The share of a well-formed X25519 stanza: two arguments, a canonical 32-byte share, a
    /// 32-byte body (checked before any decryption, against partitioning oracles).
    static func validShare(_ stanza: AgeStanza) throws(AgeFailure) -> [UInt8] {
        guard stanza.arguments.count == 2, let share = Base64.decode(Array(stanza.arguments[1].utf8), padded: false), share.count == 32 else {
            throw .header("an X25519 stanza needs exactly one argument after its type, a 32-byte share")
        }
        guard stanza.body.count == 32 else { throw .header("an X25519 stanza's body is not 32 bytes") }
        return share
    }

    private static func wrapKey(_ shared: SecureBytes, share: [UInt8], recipient: [UInt8]) -> SecureBytes {
        shared.withUnsafeBytes { HKDF.derive(ikm: $0, salt: share + recipient, info: info, count: 32) }
    }
}
