// SPDX-License-Identifier: Apache-2.0
/// What the agent answers (docs/agent.md). `notHeld` is the answer whenever it does not hold the
/// store unlocked, or has just forgotten it (its time ran out, the file on disk is not the one
/// it holds); the client then does what it does without an agent.
enum AgentReply {
    /// A write (or a hold) done.
    case done
    /// Held until this Unix time (seconds); 0: until `lock` or the agent ends.
    case held(until: Int64)
    /// How many stores a `lock` made the agent forget.
    case forgotten(count: UInt32)
    /// The agent holds the store until this Unix time (0: until `lock`); the store's root.
    case holding(until: Int64, rootID: String)
    /// A record's value, or nil when there is no such record.
    case value([UInt8]?)
    /// The values of `getMany`'s keys, in its order; nil for a key without a record.
    case values([[UInt8]?])
    case keyList([String])
    case bool(Bool)
    case notHeld
    /// The store operation failed: the session's error, as a client reports it.
    case failed(KeybayError)
    /// The request was not understood (another version, a malformed message).
    case refused(String)

    enum Kind: UInt8 {
        case done = 0x80, held, forgotten, holding, value, values, keyList, bool
        case notHeld = 0x90, failed, refused
    }

    var kind: Kind {
        switch self {
        case .done: .done
        case .held: .held
        case .forgotten: .forgotten
        case .holding: .holding
        case .value: .value
        case .values: .values
        case .keyList: .keyList
        case .bool: .bool
        case .notHeld: .notHeld
        case .failed: .failed
        case .refused: .refused
        }
    }

    /// The whole frame; a value reply holds secrets: wipe it once sent.
    var frame: [UInt8] {
        func optional(_ v: [UInt8]?) -> Int { 1 + (v.map { AgentFrame.lp($0.count) } ?? 0) }
        let size: Int
        switch self {
        case .done, .notHeld: size = 0
        case .held: size = 8
        case .forgotten: size = 4
        case .holding(_, let root): size = 8 + AgentFrame.lp(root)
        case .value(let v): size = optional(v)
        case .values(let vs): size = 4 + vs.reduce(0) { $0 + optional($1) }
        case .keyList(let keys): size = 4 + keys.reduce(0) { $0 + AgentFrame.lp($1) }
        case .bool: size = 1
        case .failed(let e): size = AgentFrame.lp(e.code.rawValue) + 1 + AgentFrame.lp(e.message)
        case .refused(let why): size = AgentFrame.lp(why)
        }
        var frame = AgentFrame(type: kind.rawValue, bodyBytes: size)
        func put(_ v: [UInt8]?) {
            frame.u8(v == nil ? 0 : 1)
            if let v { frame.bytes(v) }
        }
        switch self {
        case .done, .notHeld: break
        case .held(let until): frame.i64(until)
        case .forgotten(let count): frame.u32(count)
        case .holding(let until, let root):
            frame.i64(until)
            frame.text(root)
        case .value(let v): put(v)
        case .values(let vs):
            frame.u32(UInt32(vs.count))
            for v in vs { put(v) }
        case .keyList(let keys):
            frame.u32(UInt32(keys.count))
            for k in keys { frame.text(k) }
        case .bool(let b): frame.u8(b ? 1 : 0)
        case .failed(let e):
            frame.text(e.code.rawValue)
            frame.u8(e.tookEffect ? 1 : 0)
            frame.text(e.message)
        case .refused(let why): frame.text(why)
        }
        return frame.finished
    }

    /// A reply as received; `.malformed` or `.unsupported` when it is not one of this version.
    static func decode(_ message: [UInt8]) throws -> AgentReply {
        let opened = try AgentFrame.open(message)
        var r = opened.body
        guard let kind = Kind(rawValue: opened.type) else { throw KeybayError(.malformed, "agent message: unknown reply type \(opened.type)") }
        func optional() throws -> [UInt8]? {
            switch try r.u8("presence") {
            case 0: return nil
            case 1: return Array(try r.lengthPrefixed("value", maxLength: Suite1.maxValueBytes))
            default: throw r.malformed("presence is neither 0 nor 1")
            }
        }
        let reply: AgentReply
        switch kind {
        case .done: reply = .done
        case .notHeld: reply = .notHeld
        case .held: reply = .held(until: try r.i64("until"))
        case .forgotten: reply = .forgotten(count: try r.u32("count"))
        case .holding: reply = .holding(until: try r.i64("until"), rootID: try r.text("root id", maxLength: 64))
        case .value: reply = .value(try optional())
        case .values: reply = .values(try (0..<r.count("values", itemBytes: 1)).map { _ in try optional() })
        case .keyList: reply = .keyList(try (0..<r.count("keys", itemBytes: 4)).map { _ in try r.text("key", maxLength: Suite1.maxKeyBytes) })
        case .bool:
            let b = try r.u8("flag")
            guard b <= 1 else { throw r.malformed("flag is neither 0 nor 1") }
            reply = .bool(b == 1)
        case .failed:
            guard let code = KeybayError.Code(rawValue: try r.text("error code", maxLength: 64)) else { throw r.malformed("unknown error code") }
            let tookEffect = try r.u8("took effect") == 1
            reply = .failed(KeybayError(code, try r.text("error message", maxLength: 65536), tookEffect: tookEffect))
        case .refused: reply = .refused(try r.text("reason", maxLength: 65536))
        }
        try r.finish()
        return reply
    }
}
