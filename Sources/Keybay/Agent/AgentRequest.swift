// SPDX-License-Identifier: Apache-2.0
/// What a client asks the agent (docs/agent.md lists the types and bodies). Record keys travel
/// as text and are checked again by the session that serves them.
enum AgentRequest {
    /// `unlock`: hold this store until the time given is up.
    case hold(AgentHandoff)
    /// `lock`: forget this store.
    case forget(AgentStoreRef)
    /// `lock --all`: forget every store.
    case forgetAll
    /// Whether the agent holds this store, until when, and its root.
    case query(AgentStoreRef)
    case get(AgentStoreRef, key: String)
    case getMany(AgentStoreRef, keys: [String])
    case keys(AgentStoreRef)
    case contains(AgentStoreRef, key: String)
    case set(AgentStoreRef, key: String, value: [UInt8])
    case delete(AgentStoreRef, key: String)
    case clearAll(AgentStoreRef)

    enum Kind: UInt8 {
        case hold = 0x01, forget, forgetAll, query, get, getMany, keys, contains, set, delete, clearAll
    }

    var kind: Kind {
        switch self {
        case .hold: .hold
        case .forget: .forget
        case .forgetAll: .forgetAll
        case .query: .query
        case .get: .get
        case .getMany: .getMany
        case .keys: .keys
        case .contains: .contains
        case .set: .set
        case .delete: .delete
        case .clearAll: .clearAll
        }
    }

    /// Whether the agent writes the store for it (its reply may take a lock wait and fsyncs).
    var writes: Bool { [.hold, .set, .delete, .clearAll].contains(kind) }

    /// The whole frame; it holds a value or a store key for some requests: wipe it once sent.
    var frame: [UInt8] {
        var size = 0
        switch self {
        case .hold(let h): size = h.encodedBytes
        case .forget(let s), .query(let s), .keys(let s), .clearAll(let s): size = s.encodedBytes
        case .forgetAll: size = 0
        case .get(let s, let k), .contains(let s, let k), .delete(let s, let k): size = s.encodedBytes + AgentFrame.lp(k)
        case .getMany(let s, let keys): size = s.encodedBytes + 4 + keys.reduce(0) { $0 + AgentFrame.lp($1) }
        case .set(let s, let k, let v): size = s.encodedBytes + AgentFrame.lp(k) + AgentFrame.lp(v.count)
        }
        var frame = AgentFrame(type: kind.rawValue, bodyBytes: size)
        switch self {
        case .hold(let h): h.encode(into: &frame)
        case .forget(let s), .query(let s), .keys(let s), .clearAll(let s): s.encode(into: &frame)
        case .forgetAll: break
        case .get(let s, let k), .contains(let s, let k), .delete(let s, let k):
            s.encode(into: &frame)
            frame.text(k)
        case .getMany(let s, let keys):
            s.encode(into: &frame)
            frame.u32(UInt32(keys.count))
            for k in keys { frame.text(k) }
        case .set(let s, let k, let v):
            s.encode(into: &frame)
            frame.text(k)
            frame.bytes(v)
        }
        return frame.finished
    }

    /// A request as received (what followed its length field). `.unsupported` for another
    /// protocol version, `.malformed` for anything else that is not a request.
    static func decode(_ message: [UInt8]) throws -> AgentRequest {
        let opened = try AgentFrame.open(message)
        var r = opened.body
        guard let kind = Kind(rawValue: opened.type) else { throw KeybayError(.malformed, "agent message: unknown request type \(opened.type)") }
        let request: AgentRequest
        switch kind {
        case .hold: request = .hold(try AgentHandoff.decode(&r))
        case .forgetAll: request = .forgetAll
        default:
            let store = try AgentStoreRef.decode(&r)
            switch kind {
            case .forget: request = .forget(store)
            case .query: request = .query(store)
            case .keys: request = .keys(store)
            case .clearAll: request = .clearAll(store)
            case .get: request = .get(store, key: try r.text("key", maxLength: Suite1.maxKeyBytes))
            case .contains: request = .contains(store, key: try r.text("key", maxLength: Suite1.maxKeyBytes))
            case .delete: request = .delete(store, key: try r.text("key", maxLength: Suite1.maxKeyBytes))
            case .getMany:
                let n = try r.count("keys", itemBytes: 4)
                request = .getMany(store, keys: try (0..<n).map { _ in try r.text("key", maxLength: Suite1.maxKeyBytes) })
            case .set:
                let key = try r.text("key", maxLength: Suite1.maxKeyBytes)
                request = .set(store, key: key, value: Array(try r.lengthPrefixed("value", maxLength: Suite1.maxValueBytes)))
            case .hold, .forgetAll: preconditionFailure("decoded above")
            }
        }
        try r.finish()
        return request
    }
}
