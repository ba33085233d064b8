// SPDX-License-Identifier: Apache-2.0
/// One message of the agent's protocol (docs/agent.md): `length:u32 | version:u8 | type:u8 |
/// body`, big-endian, `length` counting the bytes after it. A frame is written into one buffer
/// of its exact size, so a secret in it (a value, a store key) is never left behind in memory
/// that a growing array gave up; whoever holds a frame wipes it when done.
struct AgentFrame {
    /// The protocol's version: a message of another version is answered with `refused`.
    static let version: UInt8 = 1
    /// The largest message after its length field: every value of a full store and its framing.
    static let maxLength = StoreLayout.maxTotalBytes + (1 << 20)

    private(set) var bytes: [UInt8]
    private let expected: Int

    /// A frame of `type` whose body will be exactly `bodyBytes` long.
    init(type: UInt8, bodyBytes: Int) {
        expected = 6 + bodyBytes
        bytes = []
        bytes.reserveCapacity(expected)
        u32(UInt32(2 + bodyBytes))
        u8(Self.version)
        u8(type)
    }

    mutating func u8(_ v: UInt8) { bytes.append(v) }
    mutating func u32(_ v: UInt32) { for s in stride(from: 24, through: 0, by: -8) { bytes.append(UInt8((v >> UInt32(s)) & 0xff)) } }
    mutating func u64(_ v: UInt64) { for s in stride(from: 56, through: 0, by: -8) { bytes.append(UInt8((v >> UInt64(s)) & 0xff)) } }
    mutating func i64(_ v: Int64) { u64(UInt64(bitPattern: v)) }
    mutating func bytes(_ b: some Collection<UInt8>) { u32(UInt32(b.count)); bytes.append(contentsOf: b) }
    mutating func bytes(_ b: UnsafeRawBufferPointer) { u32(UInt32(b.count)); bytes.append(contentsOf: b) }
    mutating func text(_ s: String) { bytes(Array(s.utf8)) }

    /// The frame, once its body is complete (a wrong size is a bug in the encoder, not input).
    var finished: [UInt8] {
        precondition(bytes.count == expected, "agent frame is \(bytes.count) bytes, declared \(expected)")
        return bytes
    }

    /// The size of `LP(x)` for a body.
    static func lp(_ count: Int) -> Int { 4 + count }
    static func lp(_ s: String) -> Int { 4 + s.utf8.count }

    /// A received message (what followed its length field): its type and a reader of its body.
    /// Refuses another version and a message shorter than its header.
    static func open(_ message: [UInt8]) throws -> (type: UInt8, body: ByteReader) {
        guard message.count >= 2 else { throw KeybayError(.malformed, "agent message: \(message.count) bytes, shorter than its header") }
        guard message[0] == version else {
            throw KeybayError(.unsupported, "agent message of protocol version \(message[0]); this side speaks version \(version)")
        }
        return (message[1], ByteReader(message, range: 2..<message.count, context: "agent message"))
    }
}

extension ByteReader {
    /// `LP(text)`, UTF-8, at most `maxLength` bytes.
    mutating func text(_ what: @autoclosure () -> String, maxLength: Int = 4096) throws -> String {
        let bytes = try lengthPrefixed(what(), maxLength: maxLength)
        guard let text = String(validating: bytes, as: UTF8.self) else { throw malformed("\(what()) is not UTF-8") }
        return text
    }

    mutating func i64(_ what: @autoclosure () -> String) throws -> Int64 { Int64(bitPattern: try u64(what())) }

    /// A count of items, each at least `itemBytes` long, checked against what is left first.
    mutating func count(_ what: @autoclosure () -> String, itemBytes: Int) throws -> Int {
        let n = Int(try u32("count of \(what())"))
        guard n <= remaining / max(1, itemBytes) else { throw malformed("\(n) \(what()) cannot fit in \(remaining) bytes") }
        return n
    }
}
