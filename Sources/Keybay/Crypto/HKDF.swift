import CSodium

/// HKDF-SHA256 (RFC 5869), built on libsodium's HMAC-SHA256 because libsodium 1.0.18 has no HKDF.
/// The pseudorandom key and every intermediate block stay in guarded or wiped memory.
enum HKDF {
    static let maxOutput = 255 * 32

    static func derive(ikm: UnsafeRawBufferPointer, salt: [UInt8], info: [UInt8], count: Int) -> SecureBytes {
        precondition(count > 0 && count <= maxOutput, "HKDF output length out of range")
        // Extract: PRK = HMAC(salt, IKM). An empty salt is HashLen zero bytes (RFC 5869 §2.2).
        let prk = SecureBytes(count: 32) { prkOut in
            let effectiveSalt = salt.isEmpty ? [UInt8](repeating: 0, count: 32) : salt
            effectiveSalt.withUnsafeBytes { s in
                var mac = HMACSHA256(key: s)
                mac.update(ikm)
                mac.finish(into: prkOut)
            }
        }
        // Expand: T(i) = HMAC(PRK, T(i-1) | info | i).
        return SecureBytes(count: count) { out in
            var block = [UInt8](repeating: 0, count: 32)
            defer { Sodium.wipe(&block) }
            var written = 0
            var counter: UInt8 = 1
            while written < count {
                prk.withUnsafeBytes { p in
                    var mac = HMACSHA256(key: p)
                    if counter > 1 { mac.update(block) }
                    mac.update(info)
                    mac.update([counter])
                    block.withUnsafeMutableBytes { mac.finish(into: $0) }
                }
                let take = min(32, count - written)
                for i in 0..<take { out[written + i] = block[i] }
                written += take
                counter &+= 1
            }
        }
    }

    static func derive(ikm: SecureBytes, salt: [UInt8], info: String, count: Int = 32) -> SecureBytes {
        ikm.withUnsafeBytes { derive(ikm: $0, salt: salt, info: Array(info.utf8), count: count) }
    }
}
