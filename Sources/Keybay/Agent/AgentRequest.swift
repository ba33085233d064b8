// SPDX-License-Identifier: Apache-2.0
/// What a client asks the agent (docs/agent.md lists the types and bodies): to hold, forget or
/// report a store, or a record call on a store it holds. Record keys travel as text and are
/// checked again by the store that serves them.
enum AgentRequest {
    /// `unlock`: hold this store until the time given is up.
    case hold(AgentHandoff)
    /// `lock`: forget this store.
    case forget(AgentStoreRef)
    /// `lock --all`: forget every store.
    case forgetAll
    /// Whether the agent holds this store, until when, and its root.
    case query(AgentStoreRef)
    /// A record operation on a store the agent holds.
    case record(AgentStoreRef, RecordCall)

    /// The request types other than record calls (`RecordCall.requestType`).
    enum Kind: UInt8 {
        case hold = 0x01, forget, forgetAll, query
    }

    /// Its type byte.
    var type: UInt8 {
        switch self {
        case .hold: Kind.hold.rawValue
        case .forget: Kind.forget.rawValue
        case .forgetAll: Kind.forgetAll.rawValue
        case .query: Kind.query.rawValue
        case .record(_, let call): call.requestType
        }
    }

    /// Whether the agent writes the store for it (its reply may take a lock wait and fsyncs).
    var writes: Bool {
        switch self {
        case .hold: true
        case .record(_, let call): call.writes
        case .forget, .forgetAll, .query: false
        }
    }

    /// The whole frame; it holds a value or a store key for some requests: wipe it once sent.
    var frame: [UInt8] {
        let size: Int
        switch self {
        case .hold(let h): size = h.encodedBytes
        case .forget(let s), .query(let s): size = s.encodedBytes
        case .forgetAll: size = 0
        case .record(let s, let call): size = s.encodedBytes + call.bodyBytes
        }
        var frame = AgentFrame(type: type, bodyBytes: size)
        switch self {
        case .hold(let h): h.encode(into: &frame)
        case .forget(let s), .query(let s): s.encode(into: &frame)
        case .forgetAll: break
        case .record(let s, let call):
            s.encode(into: &frame)
            call.encode(into: &frame)
        }
        return frame.finished
    }

    /// A request as received (what followed its length field). `.unsupported` for another
    /// protocol version, `.malformed` for anything else that is not a request.
    static func decode(_ message: [UInt8]) throws -> AgentRequest {
        let opened = try AgentFrame.open(message)
        var r = opened.body
        let request: AgentRequest
        if RecordCall.requestTypes.contains(opened.type) {
            let store = try AgentStoreRef.decode(&r)
            request = .record(store, try RecordCall.decode(type: opened.type, &r))
        } else {
            switch Kind(rawValue: opened.type) {
            case .hold: request = .hold(try AgentHandoff.decode(&r))
            case .forgetAll: request = .forgetAll
            case .forget: request = .forget(try AgentStoreRef.decode(&r))
            case .query: request = .query(try AgentStoreRef.decode(&r))
            case nil: throw KeybayError(.malformed, "agent message: unknown request type \(opened.type)")
            }
        }
        try r.finish()
        return request
    }

    /// Wipes the value a `set` carries.
    mutating func wipe() {
        guard case .record(let store, var call) = self else { return }
        self = .forgetAll
        call.wipe()
        self = .record(store, call)
    }
}
