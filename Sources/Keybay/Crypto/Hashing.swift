// SPDX-License-Identifier: Apache-2.0
import CKeybaySHA256
import CSodium

/// One-shot SHA-256 (FIPS 180-4) through keybay_sha256.c, which uses the CPU's SHA extensions
/// when present; tests check it against libsodium's for every length up to 2 KiB and beyond.
enum SHA256 {
    static let byteCount = 32

    static func hash(_ data: UnsafeRawBufferPointer) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: byteCount)
        out.withUnsafeMutableBytes { o in
            keybay_sha256(o.baseAddress!.assumingMemoryBound(to: UInt8.self),
                          data.baseAddress?.assumingMemoryBound(to: UInt8.self), data.count)
        }
        return out
    }

    static func hash(_ data: [UInt8]) -> [UInt8] {
        data.withUnsafeBytes { hash($0) }
    }

    static func hash(_ data: ArraySlice<UInt8>) -> [UInt8] {
        data.withUnsafeBytes { hash($0) }
    }
}

/// HMAC-SHA256 with a key of any length (libsodium's streaming API hashes long keys as RFC 2104 says).
struct HMACSHA256 {
    private var state = crypto_auth_hmacsha256_state()

    init(key: UnsafeRawBufferPointer) {
        Sodium.ensureInitialised()
        if let base = key.baseAddress, key.count > 0 {
            _ = crypto_auth_hmacsha256_init(&state, base.assumingMemoryBound(to: UInt8.self), key.count)
        } else {
            var none: UInt8 = 0 // an empty key: libsodium wants a pointer even for length 0
            _ = crypto_auth_hmacsha256_init(&state, &none, 0)
        }
    }

    mutating func update(_ data: UnsafeRawBufferPointer) {
        guard data.count > 0 else { return }
        _ = crypto_auth_hmacsha256_update(&state, data.baseAddress!.assumingMemoryBound(to: UInt8.self), UInt64(data.count))
    }

    mutating func update(_ data: [UInt8]) {
        data.withUnsafeBytes { update($0) }
    }

    /// Writes the 32-byte tag to `out` and wipes the state.
    mutating func finish(into out: UnsafeMutableRawBufferPointer) {
        precondition(out.count >= 32)
        _ = crypto_auth_hmacsha256_final(&state, out.baseAddress!.assumingMemoryBound(to: UInt8.self))
        withUnsafeMutableBytes(of: &state) { sodium_memzero($0.baseAddress!, $0.count) }
    }

    static func authenticate(key: [UInt8], message: [UInt8]) -> [UInt8] {
        var tag = [UInt8](repeating: 0, count: 32)
        key.withUnsafeBytes { k in
            var mac = HMACSHA256(key: k)
            mac.update(message)
            tag.withUnsafeMutableBytes { mac.finish(into: $0) }
        }
        return tag
    }
}
