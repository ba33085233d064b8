// SPDX-License-Identifier: Apache-2.0
/// Record calls and their answers on the agent's wire (docs/agent.md): a call is a request of
/// type 0x05 to 0x0b whose body is `STORE` and then the call's fields; an answer is a reply of
/// type 0x80 or 0x84 to 0x87.
extension RecordCall {
    /// Its request type.
    var requestType: UInt8 {
        switch self {
        case .get: 0x05
        case .getMany: 0x06
        case .keys: 0x07
        case .contains: 0x08
        case .set: 0x09
        case .delete: 0x0a
        case .clearAll: 0x0b
        }
    }

    /// The request types of record calls.
    static let requestTypes: ClosedRange<UInt8> = 0x05...0x0b

    /// The size of its fields after `STORE`.
    var bodyBytes: Int {
        switch self {
        case .keys, .clearAll: 0
        case .get(let k), .contains(let k), .delete(let k): AgentFrame.lp(k)
        case .getMany(let keys): 4 + keys.reduce(0) { $0 + AgentFrame.lp($1) }
        case .set(let k, let v): AgentFrame.lp(k) + AgentFrame.lp(v.count)
        }
    }

    func encode(into frame: inout AgentFrame) {
        switch self {
        case .keys, .clearAll: break
        case .get(let k), .contains(let k), .delete(let k): frame.text(k)
        case .getMany(let keys):
            frame.u32(UInt32(keys.count))
            for k in keys { frame.text(k) }
        case .set(let k, let v):
            frame.text(k)
            frame.bytes(v)
        }
    }

    /// The call of request `type` (one of `requestTypes`), its fields read from `r`.
    static func decode(type: UInt8, _ r: inout ByteReader) throws -> RecordCall {
        func key() throws -> String { try r.text("key", maxLength: Suite1.maxKeyBytes) }
        switch type {
        case 0x05: return .get(key: try key())
        case 0x06: return .getMany(keys: try (0..<r.count("keys", itemBytes: 4)).map { _ in try key() })
        case 0x07: return .keys
        case 0x08: return .contains(key: try key())
        case 0x09: return .set(key: try key(), value: Array(try r.lengthPrefixed("value", maxLength: Suite1.maxValueBytes)))
        case 0x0a: return .delete(key: try key())
        case 0x0b: return .clearAll
        default: preconditionFailure("request type \(type) is no record call")
        }
    }
}

extension RecordAnswer {
    /// Its reply type.
    var replyType: UInt8 {
        switch self {
        case .done: 0x80
        case .value: 0x84
        case .values: 0x85
        case .keyList: 0x86
        case .bool: 0x87
        }
    }

    /// Whether `type` is the reply type of an answer.
    static func isReplyType(_ type: UInt8) -> Bool { type == 0x80 || (0x84...0x87).contains(type) }

    var bodyBytes: Int {
        func optional(_ v: [UInt8]?) -> Int { 1 + (v.map { AgentFrame.lp($0.count) } ?? 0) }
        switch self {
        case .done: return 0
        case .value(let v): return optional(v)
        case .values(let vs): return 4 + vs.reduce(0) { $0 + optional($1) }
        case .keyList(let keys): return 4 + keys.reduce(0) { $0 + AgentFrame.lp($1) }
        case .bool: return 1
        }
    }

    func encode(into frame: inout AgentFrame) {
        func put(_ v: [UInt8]?) {
            frame.u8(v == nil ? 0 : 1)
            if let v { frame.bytes(v) }
        }
        switch self {
        case .done: break
        case .value(let v): put(v)
        case .values(let vs):
            frame.u32(UInt32(vs.count))
            for v in vs { put(v) }
        case .keyList(let keys):
            frame.u32(UInt32(keys.count))
            for k in keys { frame.text(k) }
        case .bool(let b): frame.u8(b ? 1 : 0)
        }
    }

    /// The answer of reply `type` (one `isReplyType` accepts), read from `r`.
    static func decode(type: UInt8, _ r: inout ByteReader) throws -> RecordAnswer {
        func optional() throws -> [UInt8]? {
            switch try r.u8("presence") {
            case 0: return nil
            case 1: return Array(try r.lengthPrefixed("value", maxLength: Suite1.maxValueBytes))
            default: throw r.malformed("presence is neither 0 nor 1")
            }
        }
        switch type {
        case 0x80: return .done
        case 0x84: return .value(try optional())
        case 0x85: return .values(try (0..<r.count("values", itemBytes: 1)).map { _ in try optional() })
        case 0x86: return .keyList(try (0..<r.count("keys", itemBytes: 4)).map { _ in try r.text("key", maxLength: Suite1.maxKeyBytes) })
        case 0x87:
            let b = try r.u8("flag")
            guard b <= 1 else { throw r.malformed("flag is neither 0 nor 1") }
            return .bool(b == 1)
        default: preconditionFailure("reply type \(type) is no record answer")
        }
    }
}
