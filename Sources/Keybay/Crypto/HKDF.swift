// SPDX-License-Identifier: Apache-2.0
import CSodium

/// HKDF-SHA256 (RFC 5869), built on libsodium's HMAC-SHA256 because libsodium 1.0.18 has no HKDF.
/// The pseudorandom key and every intermediate block stay in guarded or wiped memory.
enum HKDF {
    static let hashLength = 32
    static let maxOutput = 255 * hashLength

    /// HKDF-Extract (RFC 5869 §2.2): PRK = HMAC(salt, IKM). An empty salt is HashLen zero bytes.
    /// The IKM is given in parts that are fed to HMAC in order, so a labelled IKM (RFC 9180 §4)
    /// never has to be concatenated outside guarded memory. The salt may itself be a secret.
    static func extract(salt: UnsafeRawBufferPointer, ikm parts: [UnsafeRawBufferPointer]) -> SecureBytes {
        SecureBytes(count: hashLength) { prkOut in
            var mac: HMACSHA256
            if salt.count == 0 {
                let zeros = [UInt8](repeating: 0, count: hashLength)
                mac = zeros.withUnsafeBytes { HMACSHA256(key: $0) }
            } else {
                mac = HMACSHA256(key: salt)
            }
            for part in parts { mac.update(part) }
            mac.finish(into: prkOut)
        }
    }

    static func extract(salt: [UInt8], ikm: UnsafeRawBufferPointer) -> SecureBytes {
        salt.withUnsafeBytes { extract(salt: $0, ikm: [ikm]) }
    }

    /// HKDF-Expand (RFC 5869 §2.3): T(i) = HMAC(PRK, T(i-1) | info | i), the first `count` bytes.
    static func expand(prk: UnsafeRawBufferPointer, info: [UInt8], count: Int) -> SecureBytes {
        precondition(count > 0 && count <= maxOutput, "HKDF output length out of range")
        precondition(prk.count >= hashLength, "HKDF PRK shorter than HashLen")
        return SecureBytes(count: count) { out in
            var block = [UInt8](repeating: 0, count: hashLength)
            defer { Sodium.wipe(&block) }
            var written = 0
            var counter: UInt8 = 1
            while written < count {
                var mac = HMACSHA256(key: prk)
                if counter > 1 { mac.update(block) }
                mac.update(info)
                mac.update([counter])
                block.withUnsafeMutableBytes { mac.finish(into: $0) }
                let take = min(hashLength, count - written)
                for i in 0..<take { out[written + i] = block[i] }
                written += take
                counter &+= 1
            }
        }
    }

    static func expand(prk: SecureBytes, info: [UInt8], count: Int) -> SecureBytes {
        prk.withUnsafeBytes { expand(prk: $0, info: info, count: count) }
    }

    /// Extract then expand.
    static func derive(ikm: UnsafeRawBufferPointer, salt: [UInt8], info: [UInt8], count: Int) -> SecureBytes {
        precondition(count > 0 && count <= maxOutput, "HKDF output length out of range")
        let prk = extract(salt: salt, ikm: ikm)
        return expand(prk: prk, info: info, count: count)
    }
}
