// SPDX-License-Identifier: Apache-2.0
/// One record operation as a value: what the agent's client sends, what its decoder reads and
/// what the agent performs on the store it holds (docs/agent.md, requests 0x05 to 0x0b). A new
/// operation is a case here, its answer, a requirement of `RecordSource` and its wire form.
enum RecordCall: Sendable {
    case get(key: String)
    case getMany(keys: [String])
    case keys
    case contains(key: String)
    case set(key: String, value: [UInt8])
    case delete(key: String)
    case clearAll

    /// Whether it writes the store (its reply may wait for the store's lock and fsyncs).
    var writes: Bool {
        switch self {
        case .set, .delete, .clearAll: true
        case .get, .getMany, .keys, .contains: false
        }
    }

    /// Performs the call on `source`.
    func perform(on source: any RecordSource) throws -> RecordAnswer {
        switch self {
        case .get(let key): return .value(try source.get(key))
        case .getMany(let keys): return .values(try source.getMany(keys))
        case .keys: return .keyList(try source.keys())
        case .contains(let key): return .bool(try source.contains(key))
        case .set(let key, let value):
            try source.set(key, value: value)
            return .done
        case .delete(let key): return .bool(try source.delete(key))
        case .clearAll:
            try source.clearAll()
            return .done
        }
    }

    /// Wipes the value a `set` carries (its buffer is then its only holder, so the wipe is in place).
    mutating func wipe() {
        guard case .set(let key, var value) = self else { return }
        self = .set(key: key, value: [])
        Sodium.wipe(&value)
    }
}

/// What a record operation returns.
enum RecordAnswer: Sendable {
    /// A write done (`set`, `clearAll`).
    case done
    /// A record's value, or nil when there is no such record (`get`).
    case value([UInt8]?)
    /// `getMany`'s values in its keys' order; nil for a key without a record.
    case values([[UInt8]?])
    /// `keys`.
    case keyList([String])
    /// `contains`; `delete` (whether there was a record).
    case bool(Bool)

    /// Wipes the values it carries.
    mutating func wipe() {
        switch self {
        case .value(var value?):
            self = .done
            Sodium.wipe(&value)
        case .values(var values):
            self = .done
            for i in values.indices where values[i] != nil {
                var value = values[i]!
                values[i] = nil
                Sodium.wipe(&value)
            }
        default: break
        }
    }
}
