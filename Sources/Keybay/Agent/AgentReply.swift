// SPDX-License-Identifier: Apache-2.0
/// What the agent answers (docs/agent.md). `notHeld` is the answer whenever it does not hold the
/// store unlocked, or has just forgotten it (its time ran out, the file on disk is not the one
/// it holds); the client then does what it does without an agent.
enum AgentReply {
    /// A record call's answer (a write done, values, keys, a flag).
    case answer(RecordAnswer)
    /// Held until this Unix time (seconds); 0: until `lock` or the agent ends.
    case held(until: Int64)
    /// How many stores a `lock` made the agent forget.
    case forgotten(count: UInt32)
    /// The agent holds the store until this Unix time (0: until `lock`); the store's root.
    case holding(until: Int64, rootID: String)
    case notHeld
    /// The store operation failed: the store's error, as a client reports it.
    case failed(KeybayError)
    /// The request was not understood (another version, a malformed message).
    case refused(String)

    /// The reply types other than answers (`RecordAnswer.replyType`).
    enum Kind: UInt8 {
        case held = 0x81, forgotten, holding
        case notHeld = 0x90, failed, refused
    }

    /// Its type byte.
    var type: UInt8 {
        switch self {
        case .answer(let answer): answer.replyType
        case .held: Kind.held.rawValue
        case .forgotten: Kind.forgotten.rawValue
        case .holding: Kind.holding.rawValue
        case .notHeld: Kind.notHeld.rawValue
        case .failed: Kind.failed.rawValue
        case .refused: Kind.refused.rawValue
        }
    }

    /// The whole frame; an answer holds secrets: wipe it once sent.
    var frame: [UInt8] {
        let size: Int
        switch self {
        case .answer(let answer): size = answer.bodyBytes
        case .notHeld: size = 0
        case .held: size = 8
        case .forgotten: size = 4
        case .holding(_, let root): size = 8 + AgentFrame.lp(root)
        case .failed(let e): size = AgentFrame.lp(e.code.rawValue) + 1 + AgentFrame.lp(e.message)
        case .refused(let why): size = AgentFrame.lp(why)
        }
        var frame = AgentFrame(type: type, bodyBytes: size)
        switch self {
        case .answer(let answer): answer.encode(into: &frame)
        case .notHeld: break
        case .held(let until): frame.i64(until)
        case .forgotten(let count): frame.u32(count)
        case .holding(let until, let root):
            frame.i64(until)
            frame.text(root)
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
        let reply: AgentReply
        if RecordAnswer.isReplyType(opened.type) {
            reply = .answer(try RecordAnswer.decode(type: opened.type, &r))
        } else {
            switch Kind(rawValue: opened.type) {
            case .notHeld: reply = .notHeld
            case .held: reply = .held(until: try r.i64("until"))
            case .forgotten: reply = .forgotten(count: try r.u32("count"))
            case .holding: reply = .holding(until: try r.i64("until"), rootID: try r.text("root id", maxLength: 64))
            case .failed:
                guard let code = KeybayError.Code(rawValue: try r.text("error code", maxLength: 64)) else { throw r.malformed("unknown error code") }
                let tookEffect = try r.u8("took effect") == 1
                reply = .failed(KeybayError(code, try r.text("error message", maxLength: 65536), tookEffect: tookEffect))
            case .refused: reply = .refused(try r.text("reason", maxLength: 65536))
            case nil: throw KeybayError(.malformed, "agent message: unknown reply type \(opened.type)")
            }
        }
        try r.finish()
        return reply
    }

    /// Wipes the values an answer carries.
    mutating func wipe() {
        guard case .answer(var answer) = self else { return }
        self = .notHeld
        answer.wipe()
    }
}
