// SPDX-License-Identifier: Apache-2.0
import Foundation
import Glibc
import Testing
@testable import Keybay

/// The two record sources answer alike: the same calls, on two copies of one protected store,
/// one read by this process (`LocalRecords`) and one held by a real agent (`AgentRecords`), give
/// the same values, keys, flags and error codes, call by call; every `RecordCall` case is made.
@Suite struct RecordSourceParityTests {
    /// The calls, each of them at least once, on records with text, binary and empty values.
    static let script: [RecordCall] = [
        .set(key: "b/two", value: Array("2".utf8)), .set(key: "a/one", value: [0, 1, 255]), .set(key: "empty", value: []),
        .get(key: "a/one"), .get(key: "missing"), .get(key: "empty"),
        .getMany(keys: ["b/two", "missing", "a/one", "b/two"]), .getMany(keys: []),
        .keys, .contains(key: "b/two"), .contains(key: "missing"),
        .set(key: "b/two", value: Array("two".utf8)), .get(key: "b/two"),
        .delete(key: "a/one"), .delete(key: "a/one"), .keys,
        .get(key: "bad key"), .set(key: "/leading", value: [1]), .contains(key: "a//b"), .delete(key: ".dot"),
        .getMany(keys: ["b/two", "no way"]),
        .clearAll, .keys, .clearAll, .get(key: "b/two"),
    ]

    /// What `call` gave, as text: a value as its bytes, an error as its code.
    static func outcome(_ call: RecordCall, on source: any RecordSource) -> String {
        do {
            switch try call.perform(on: source) {
            case .done: return "done"
            case .value(let v): return v.map { "value \($0)" } ?? "no value"
            case .values(let vs): return "values " + vs.map { $0.map { "\($0)" } ?? "-" }.joined(separator: " ")
            case .keyList(let keys): return "keys \(keys)"
            case .bool(let b): return "\(b)"
            }
        } catch let e as KeybayError {
            return e.code.rawValue
        } catch {
            return "\(error)"
        }
    }

    @Test func bothSourcesAnswerEveryCallAlike() throws {
        let local = AgentSandbox(), held = AgentSandbox()
        try local.makeProtectedStore()
        try held.makeProtectedStore()
        var off = try local.configuration()
        off.agentSocket = nil
        let id = try #require(try KeybayStore.status(off).methods.first?.id)
        let session = try KeybayStore.open(off, method: id, interaction: ScriptedInteraction([AgentSandbox.passphrase]))
        let localRecords = try #require(session.records as? LocalRecords)
        #expect(try held.unlock("1h").status == 0)
        let agentRecords = AgentRecords(client: AgentClient(socketPath: held.socketPath), store: try held.configuration().agentStore)
        var kinds = Set<UInt8>()
        for call in Self.script {
            kinds.insert(call.requestType)
            let mine = Self.outcome(call, on: localRecords), theirs = Self.outcome(call, on: agentRecords)
            #expect(mine == theirs, "\(call): local \(mine), agent \(theirs)")
        }
        #expect(kinds == Set(RecordCall.requestTypes), "the script leaves out a call")
        #expect(Self.outcome(.keys, on: localRecords) == "keys []")
        // Closed, both refuse alike.
        localRecords.close()
        agentRecords.close()
        #expect(Self.outcome(.keys, on: localRecords) == "closed" && Self.outcome(.keys, on: agentRecords) == "closed")
    }
}
