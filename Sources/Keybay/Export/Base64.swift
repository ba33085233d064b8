// SPDX-License-Identifier: Apache-2.0
/// Base64 with the standard alphabet (RFC 4648 §4), canonical only: a decoder that accepted
/// several spellings of one value would make age headers malleable (age spec, "Conventions").
/// `padded: false` is age's unpadded form; `padded: true` the `=`-padded form of the export
/// record layout, which is what `base64 -w0` prints.
enum Base64 {
    private static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)

    /// The 6-bit value of a base64 character, or nil.
    static func sextet(_ c: UInt8) -> UInt8? {
        switch c {
        case 0x41...0x5a: return c - 0x41
        case 0x61...0x7a: return c - 0x61 + 26
        case 0x30...0x39: return c - 0x30 + 52
        case 0x2b: return 62
        case 0x2f: return 63
        default: return nil
        }
    }

    static func encode(_ bytes: UnsafeRawBufferPointer, padded: Bool) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity((bytes.count + 2) / 3 * 4)
        var i = 0
        while i < bytes.count {
            let n = min(3, bytes.count - i)
            let b0 = UInt32(bytes[i]), b1 = n > 1 ? UInt32(bytes[i + 1]) : 0, b2 = n > 2 ? UInt32(bytes[i + 2]) : 0
            let v = b0 << 16 | b1 << 8 | b2
            for j in 0..<(n + 1) { out.append(alphabet[Int((v >> UInt32(18 - 6 * j)) & 63)]) }
            if padded { for _ in n..<3 { out.append(0x3d) } }
            i += n
        }
        return out
    }

    static func encode(_ bytes: [UInt8], padded: Bool) -> [UInt8] {
        bytes.withUnsafeBytes { encode($0, padded: padded) }
    }

    /// Decodes canonical base64; nil for any other character, a wrong length or padding, or
    /// non-zero unused bits in the last character. The caller wipes the result if it is secret.
    static func decode<Text: BidirectionalCollection<UInt8>>(_ text: Text, padded: Bool) -> [UInt8]? {
        var body = text[...]
        if padded {
            guard text.count % 4 == 0 else { return nil }
            var pad = 0
            while pad < 2, body.last == 0x3d { body = body.dropLast(); pad += 1 }
            // What remains after at most two '=' must be the unpadded form of that length.
            guard body.count % 4 == (pad == 0 ? 0 : 4 - pad) else { return nil }
        }
        guard body.count % 4 != 1 else { return nil }
        var out: [UInt8] = []
        out.reserveCapacity(body.count * 3 / 4)
        var accumulator: UInt32 = 0
        var bits = 0
        for c in body {
            guard let v = sextet(c) else { return nil }
            accumulator = accumulator << 6 | UInt32(v)
            bits += 6
            if bits >= 8 {
                bits -= 8
                out.append(UInt8((accumulator >> UInt32(bits)) & 0xff))
            }
        }
        // Canonical: the bits left over (2 or 4) are zero.
        guard accumulator & ((1 << UInt32(bits)) - 1) == 0 else { return nil }
        accumulator = 0
        return out
    }
}
