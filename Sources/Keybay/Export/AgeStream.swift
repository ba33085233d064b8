// SPDX-License-Identifier: Apache-2.0
/// age's payload (age spec, "Payload"): a 16-byte nonce, then the plaintext in 64 KiB chunks,
/// each sealed with ChaCha20-Poly1305 under HKDF(file key, nonce, "payload") with the nonce
/// `counter (11 bytes, big-endian) | last (0x01 on the final chunk, else 0x00)`. Only the final
/// chunk may be short, and it is empty only when the whole plaintext is.
enum AgeStream {
    static let nonceBytes = 16
    static let chunkBytes = 64 * 1024
    static let tagBytes = 16
    private static let info = Array("payload".utf8)

    static func payloadKey(fileKey: SecureBytes, nonce: ArraySlice<UInt8>) -> SecureBytes {
        fileKey.withUnsafeBytes { HKDF.derive(ikm: $0, salt: Array(nonce), info: info, count: 32) }
    }

    static func chunkNonce(_ counter: Int, last: Bool) -> [UInt8] {
        var n = [UInt8](repeating: 0, count: 12)
        var c = UInt64(counter)
        for i in stride(from: 10, through: 3, by: -1) { n[i] = UInt8(c & 0xff); c >>= 8 }
        n[11] = last ? 1 : 0
        return n
    }

    /// `nonce | chunks`; `nonce` is fresh random unless a test pins it.
    static func seal(_ plaintext: UnsafeRawBufferPointer, fileKey: SecureBytes, nonce: [UInt8] = Sodium.randomBytes(nonceBytes)) -> [UInt8] {
        precondition(nonce.count == nonceBytes)
        let key = payloadKey(fileKey: fileKey, nonce: nonce[...])
        let chunks = max(1, (plaintext.count + chunkBytes - 1) / chunkBytes)
        var out = nonce
        out.reserveCapacity(nonceBytes + plaintext.count + chunks * tagBytes)
        for i in 0..<chunks {
            let start = i * chunkBytes
            let piece = UnsafeRawBufferPointer(rebasing: plaintext[start..<min(plaintext.count, start + chunkBytes)])
            out += HPKE.aeadSeal(key: key, nonce: chunkNonce(i, last: i == chunks - 1), aad: [], plaintext: piece)
        }
        return out
    }

    /// The whole plaintext in guarded memory, or a payload failure: a missing or short nonce is
    /// a header failure (the vectors' rule), anything wrong after it a payload failure. Nothing
    /// is released unless every chunk authenticates and the last one is final.
    static func open(_ payload: ArraySlice<UInt8>, fileKey: SecureBytes) throws(AgeFailure) -> AgePlaintext {
        guard payload.count >= nonceBytes else { throw .header("the payload nonce is missing or short") }
        let key = payloadKey(fileKey: fileKey, nonce: payload.prefix(nonceBytes))
        let sealed = payload.dropFirst(nonceBytes)
        guard !sealed.isEmpty else { throw AgeFailure(kind: .payload, detail: "the payload has no chunk") }
        let sealedChunk = chunkBytes + tagBytes
        let chunks = (sealed.count + sealedChunk - 1) / sealedChunk
        let lastSealed = sealed.count - (chunks - 1) * sealedChunk
        guard lastSealed >= tagBytes else { throw AgeFailure(kind: .payload, detail: "the last chunk is shorter than its tag") }
        guard lastSealed > tagBytes || chunks == 1 else { throw AgeFailure(kind: .payload, detail: "an empty final chunk follows other chunks") }
        let total = sealed.count - chunks * tagBytes
        guard total > 0 else {
            // One empty final chunk: an empty plaintext, still authenticated.
            let ok = sealed.withUnsafeBytes { c in
                HPKE.aeadOpen(key: key, nonce: chunkNonce(0, last: true), aad: [], ciphertext: c, into: UnsafeMutableRawBufferPointer(start: nil, count: 0))
            }
            guard ok else { throw AgeFailure(kind: .payload, detail: "the payload does not authenticate") }
            return AgePlaintext(storage: nil)
        }
        struct Failed: Error {}
        do {
            let storage = try SecureBytes(count: total) { out in
                try sealed.withUnsafeBytes { c in
                    for i in 0..<chunks {
                        let from = i * sealedChunk, to = min(c.count, from + sealedChunk)
                        let into = UnsafeMutableRawBufferPointer(rebasing: out[(i * chunkBytes)..<(i * chunkBytes + to - from - tagBytes)])
                        guard HPKE.aeadOpen(key: key, nonce: chunkNonce(i, last: i == chunks - 1), aad: [],
                                            ciphertext: UnsafeRawBufferPointer(rebasing: c[from..<to]), into: into) else { throw Failed() }
                    }
                }
            }
            return AgePlaintext(storage: storage)
        } catch {
            throw AgeFailure(kind: .payload, detail: "the payload does not authenticate (damaged, truncated or extended)")
        }
    }
}

/// A decrypted age payload in guarded memory (none for an empty payload).
struct AgePlaintext {
    let storage: SecureBytes?
    var count: Int { storage?.count ?? 0 }

    func withUnsafeBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        guard let storage else { return try body(UnsafeRawBufferPointer(start: nil, count: 0)) }
        return try storage.withUnsafeBytes(body)
    }
}
