// SPDX-License-Identifier: Apache-2.0
import CSodium

/// XChaCha20-Poly1305 (IETF) in the layout every Keybay sealed object uses:
/// `nonce(24) | ciphertext | tag(16)`.
enum XChaCha20Poly1305 {
    static let keyBytes = 32
    static let nonceBytes = 24
    static let tagBytes = 16
    static let overhead = nonceBytes + tagBytes

    /// Seals `plaintext`; `nonce` is fresh random unless a test pins it.
    static func seal(key: SecureBytes, plaintext: UnsafeRawBufferPointer, aad: [UInt8], nonce: [UInt8]? = nil) -> [UInt8] {
        Sodium.ensureInitialised()
        precondition(key.count == keyBytes)
        let n = nonce ?? Sodium.randomBytes(nonceBytes)
        precondition(n.count == nonceBytes)
        var out = [UInt8](repeating: 0, count: overhead + plaintext.count)
        out.withUnsafeMutableBytes { o in
            let base = o.baseAddress!.assumingMemoryBound(to: UInt8.self)
            n.withUnsafeBytes { o.baseAddress!.copyMemory(from: $0.baseAddress!, byteCount: nonceBytes) }
            var clen: UInt64 = 0
            key.withUnsafeBytes { k in
                aad.withUnsafeBytes { a in
                    _ = crypto_aead_xchacha20poly1305_ietf_encrypt(
                        base + nonceBytes, &clen,
                        plaintext.baseAddress?.assumingMemoryBound(to: UInt8.self), UInt64(plaintext.count),
                        a.baseAddress?.assumingMemoryBound(to: UInt8.self), UInt64(a.count),
                        nil, base, k.baseAddress!.assumingMemoryBound(to: UInt8.self))
                }
            }
        }
        return out
    }

    static func seal(key: SecureBytes, plaintext: [UInt8], aad: [UInt8], nonce: [UInt8]? = nil) -> [UInt8] {
        plaintext.withUnsafeBytes { seal(key: key, plaintext: $0, aad: aad, nonce: nonce) }
    }

    /// Opens into `out` (exactly `sealed.count - overhead` bytes). Returns false on any
    /// authentication failure; `out` is then zeroed by libsodium.
    static func open(key: SecureBytes, sealed: UnsafeRawBufferPointer, aad: [UInt8], into out: UnsafeMutableRawBufferPointer) -> Bool {
        Sodium.ensureInitialised()
        guard sealed.count >= overhead, out.count == sealed.count - overhead, key.count == keyBytes else { return false }
        let s = sealed.baseAddress!.assumingMemoryBound(to: UInt8.self)
        var mlen: UInt64 = 0
        let rc = key.withUnsafeBytes { k in
            aad.withUnsafeBytes { a in
                crypto_aead_xchacha20poly1305_ietf_decrypt(
                    out.baseAddress?.assumingMemoryBound(to: UInt8.self), &mlen, nil,
                    s + nonceBytes, UInt64(sealed.count - nonceBytes),
                    a.baseAddress?.assumingMemoryBound(to: UInt8.self), UInt64(a.count),
                    s, k.baseAddress!.assumingMemoryBound(to: UInt8.self))
            }
        }
        return rc == 0 && Int(mlen) == out.count
    }

    /// Opens into an ordinary array (record values, which are handed to the caller anyway).
    static func open(key: SecureBytes, sealed: UnsafeRawBufferPointer, aad: [UInt8]) -> [UInt8]? {
        guard sealed.count >= overhead else { return nil }
        // Not zero-filled first: a value is written whole or the array is dropped unseen.
        var ok = false
        let out = [UInt8](unsafeUninitializedCapacity: sealed.count - overhead) { buf, initialized in
            ok = open(key: key, sealed: sealed, aad: aad, into: UnsafeMutableRawBufferPointer(buf))
            initialized = buf.count
        }
        return ok ? out : nil
    }
}
