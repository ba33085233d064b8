// SPDX-License-Identifier: Apache-2.0
/// An age v1 file (age-encryption.org/v1) to X25519 recipients: a random 16-byte file key,
/// one stanza per recipient, the header MAC (HMAC-SHA-256 under HKDF(file key, "", "header")),
/// and the STREAM payload. Written from the specification at c2sp.org/age; only the X25519
/// recipient type is implemented, and no ASCII armor.
enum AgeFile {
    static let fileKeyBytes = 16
    private static let headerInfo = Array("header".utf8)

    /// The file; `fileKey` and `nonce` are fresh random unless a test pins them.
    static func encrypt(_ plaintext: UnsafeRawBufferPointer, to recipients: [[UInt8]], fileKey: SecureBytes = SecureBytes(randomCount: fileKeyBytes),
                        nonce: [UInt8] = Sodium.randomBytes(AgeStream.nonceBytes)) throws -> [UInt8] {
        precondition(!recipients.isEmpty && fileKey.count == fileKeyBytes)
        let stanzas = try recipients.map { try AgeX25519.wrap(fileKey: fileKey, to: $0) }
        let header = AgeHeader.encode(stanzas)
        return header + AgeHeader.macLine(mac(header[...], fileKey: fileKey)) + AgeStream.seal(plaintext, fileKey: fileKey, nonce: nonce)
    }

    /// The plaintext, if one of `identities` (X25519 private keys) unwraps the file key and the
    /// header and the whole payload authenticate.
    static func decrypt(_ file: [UInt8], identities: [SecureBytes]) throws(AgeFailure) -> AgePlaintext {
        let header = try AgeHeader.parse(file)
        // An scrypt stanza must stand alone (age spec); we have no passphrase identities.
        if header.stanzas.count > 1, header.stanzas.contains(where: { $0.arguments.first == "scrypt" }) {
            throw .header("an scrypt stanza is mixed with other stanzas")
        }
        // Every X25519 stanza is checked before any is tried, so a malformed one always fails the file.
        for stanza in header.stanzas where stanza.arguments.first == AgeX25519.stanzaType { _ = try AgeX25519.validShare(stanza) }
        var fileKey: SecureBytes?
        search: for identity in identities {
            let publicKey = AgeX25519.publicKey(of: identity)
            for stanza in header.stanzas {
                if let key = try AgeX25519.unwrap(stanza, identity: identity, publicKey: publicKey) { fileKey = key; break search }
            }
        }
        guard let fileKey else { throw AgeFailure(kind: .noMatch, detail: "no identity given matches a recipient of the file") }
        guard fileKey.count == fileKeyBytes else { throw .header("the unwrapped file key is not 16 bytes") }
        let expected = mac(header.authenticated, fileKey: fileKey)
        guard Sodium.constantTimeEqual(expected, header.mac) else {
            throw AgeFailure(kind: .mac, detail: "the header MAC does not match (the header was changed)")
        }
        return try AgeStream.open(file[header.payloadStart...], fileKey: fileKey)
    }

    private static func mac(_ header: ArraySlice<UInt8>, fileKey: SecureBytes) -> [UInt8] {
        let key = fileKey.withUnsafeBytes { HKDF.derive(ikm: $0, salt: [], info: headerInfo, count: 32) }
        var tag = [UInt8](repeating: 0, count: 32)
        key.withUnsafeBytes { k in
            var hmac = HMACSHA256(key: k)
            header.withUnsafeBytes { hmac.update($0) }
            tag.withUnsafeMutableBytes { hmac.finish(into: $0) }
        }
        return tag
    }
}
