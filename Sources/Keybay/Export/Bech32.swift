// SPDX-License-Identifier: Apache-2.0
/// Bech32 (BIP 173) as age uses it for its keys: no length limit on the data part, all
/// lowercase or all uppercase, the checksum over the lowercase form.
enum Bech32 {
    private static let charset = Array("qpzry9x8gf2tvdw0s3jn54khce6mua7l".utf8)
    private static let generator: [UInt32] = [0x3b6a57b2, 0x26508e6d, 0x1ea119fa, 0x3d4233dd, 0x2a1462b3]

    private static func polymod(_ values: [UInt8]) -> UInt32 {
        var chk: UInt32 = 1
        for v in values {
            let top = chk >> 25
            chk = (chk & 0x1ffffff) << 5 ^ UInt32(v)
            for i in 0..<5 where (top >> UInt32(i)) & 1 == 1 { chk ^= generator[i] }
        }
        return chk
    }

    private static func expand(_ hrp: [UInt8]) -> [UInt8] {
        hrp.map { $0 >> 5 } + [0] + hrp.map { $0 & 31 }
    }

    /// The lowercase encoding of `data` under `hrp` (given in lowercase).
    static func encode(hrp: String, data: UnsafeRawBufferPointer) -> [UInt8] {
        let h = Array(hrp.utf8)
        var groups: [UInt8] = []
        var acc: UInt32 = 0
        var bits = 0
        for b in data {
            acc = acc << 8 | UInt32(b)
            bits += 8
            while bits >= 5 { bits -= 5; groups.append(UInt8((acc >> UInt32(bits)) & 31)) }
        }
        if bits > 0 { groups.append(UInt8((acc << UInt32(5 - bits)) & 31)) }
        acc = 0
        let mod = polymod(expand(h) + groups + [0, 0, 0, 0, 0, 0]) ^ 1
        let checksum = (0..<6).map { UInt8((mod >> UInt32(5 * (5 - $0))) & 31) }
        var out = h + [0x31]
        out += (groups + checksum).map { charset[Int($0)] }
        Sodium.wipe(&groups)
        return out
    }

    /// Splits and checks `text`: the human-readable part in lowercase and the data bytes (the
    /// caller wipes them if secret), or nil for mixed case, a bad character, a bad checksum or
    /// padding bits that are not zero.
    static func decode(_ text: ArraySlice<UInt8>) -> (hrp: String, data: [UInt8])? {
        let hasLower = text.contains { $0 >= 0x61 && $0 <= 0x7a }
        let hasUpper = text.contains { $0 >= 0x41 && $0 <= 0x5a }
        guard !(hasLower && hasUpper), text.allSatisfy({ $0 >= 33 && $0 <= 126 }) else { return nil }
        var lower = text.map { $0 >= 0x41 && $0 <= 0x5a ? $0 + 32 : $0 }
        defer { Sodium.wipe(&lower) }
        guard let separator = lower.lastIndex(of: 0x31), separator >= 1, lower.count - separator - 1 >= 6 else { return nil }
        let hrp = Array(lower[..<separator])
        var values: [UInt8] = []
        defer { Sodium.wipe(&values) }
        for c in lower[(separator + 1)...] {
            guard let v = charset.firstIndex(of: c) else { return nil }
            values.append(UInt8(v))
        }
        guard polymod(expand(hrp) + values) == 1 else { return nil }
        var data: [UInt8] = []
        var acc: UInt32 = 0
        var bits = 0
        for v in values.dropLast(6) {
            acc = acc << 5 | UInt32(v)
            bits += 5
            if bits >= 8 { bits -= 8; data.append(UInt8((acc >> UInt32(bits)) & 0xff)) }
        }
        // At most four padding bits, all zero.
        guard bits < 5, acc & ((1 << UInt32(bits)) - 1) == 0 else { Sodium.wipe(&data); return nil }
        acc = 0
        return (String(decoding: hrp, as: UTF8.self), data)
    }
}
