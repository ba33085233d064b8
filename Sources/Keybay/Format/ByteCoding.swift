// SPDX-License-Identifier: Apache-2.0
import Glibc

/// Big-endian encoding helpers. Every length and count in Keybay files is an unsigned
/// big-endian integer; `LP(x)` is `length:u32 | x`.
struct ByteWriter {
    private(set) var bytes: [UInt8] = []

    init(capacity: Int = 0) { bytes.reserveCapacity(capacity) }

    mutating func u8(_ v: UInt8) { bytes.append(v) }
    mutating func u16(_ v: UInt16) { bytes.append(UInt8(v >> 8)); bytes.append(UInt8(v & 0xff)) }
    mutating func u32(_ v: UInt32) { for s in stride(from: 24, through: 0, by: -8) { bytes.append(UInt8((v >> UInt32(s)) & 0xff)) } }
    mutating func u64(_ v: UInt64) { for s in stride(from: 56, through: 0, by: -8) { bytes.append(UInt8((v >> UInt64(s)) & 0xff)) } }
    mutating func raw(_ b: some Collection<UInt8>) { bytes.append(contentsOf: b) }
    mutating func raw(_ b: UnsafeRawBufferPointer) { bytes.append(contentsOf: b) }
    mutating func lengthPrefixed(_ b: some Collection<UInt8>) { u32(UInt32(b.count)); raw(b) }
}

/// Strict reader over a byte buffer: every read is bounds-checked and reports what it was
/// reading, and `finish()` rejects trailing bytes.
struct ByteReader {
    let bytes: [UInt8]
    private(set) var offset: Int
    let end: Int
    /// What is being decoded, for error messages ("store file /path", "manifest").
    let context: String

    init(_ bytes: [UInt8], range: Range<Int>? = nil, context: String) {
        self.bytes = bytes
        let r = range ?? 0..<bytes.count
        offset = r.lowerBound
        end = r.upperBound
        self.context = context
    }

    var remaining: Int { end - offset }

    func malformed(_ what: String) -> KeybayError {
        KeybayError(.malformed, "\(context): \(what)")
    }

    // `what` is only built when there is an error: decoding a 4096-entry manifest must not
    // format 4096 strings.
    mutating func take(_ n: Int, _ what: @autoclosure () -> String) throws -> ArraySlice<UInt8> {
        guard n >= 0, n <= remaining else {
            throw malformed("truncated \(what()) (need \(n) bytes, \(remaining) left)")
        }
        defer { offset += n }
        return bytes[offset..<(offset + n)]
    }

    mutating func u8(_ what: @autoclosure () -> String) throws -> UInt8 { try take(1, what()).first! }

    mutating func u16(_ what: @autoclosure () -> String) throws -> UInt16 {
        try take(2, what()).reduce(0) { $0 << 8 | UInt16($1) }
    }

    mutating func u32(_ what: @autoclosure () -> String) throws -> UInt32 {
        try take(4, what()).reduce(0) { $0 << 8 | UInt32($1) }
    }

    mutating func u64(_ what: @autoclosure () -> String) throws -> UInt64 {
        try take(8, what()).reduce(0) { $0 << 8 | UInt64($1) }
    }

    /// `LP(x)` with the length checked against `maxLength` before anything is taken.
    mutating func lengthPrefixed(_ what: @autoclosure () -> String, maxLength: Int) throws -> ArraySlice<UInt8> {
        let n = Int(try u32("length of \(what())"))
        guard n <= maxLength else { throw malformed("\(what()) is \(n) bytes, limit \(maxLength)") }
        return try take(n, what())
    }

    func finish() throws {
        guard remaining == 0 else { throw malformed("\(remaining) unexpected trailing bytes") }
    }
}

/// Every Keybay AAD and derivation input is a transcript: `ASCII label | 0x00 | LP(field) ...`.
func transcript(_ label: String, _ fields: [[UInt8]]) -> [UInt8] {
    var w = ByteWriter(capacity: label.utf8.count + 1 + fields.reduce(0) { $0 + 4 + $1.count })
    w.raw(Array(label.utf8))
    w.u8(0)
    for f in fields { w.lengthPrefixed(f) }
    return w.bytes
}

func bigEndian(_ v: UInt64) -> [UInt8] { var w = ByteWriter(); w.u64(v); return w.bytes }

func bigEndian32(_ v: UInt32) -> [UInt8] { var w = ByteWriter(); w.u32(v); return w.bytes }

/// memcmp, not Array's element-by-element `==` (for large buffers; not for secrets: not constant-time).
func sameBytes(_ a: [UInt8], _ b: [UInt8]) -> Bool {
    a.count == b.count && a.withUnsafeBytes { x in b.withUnsafeBytes { y in a.isEmpty || memcmp(x.baseAddress!, y.baseAddress!, a.count) == 0 } }
}
