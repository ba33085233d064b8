// SPDX-License-Identifier: Apache-2.0
import Foundation
import Glibc
import Testing
@testable import Keybay

@Suite struct SessionTests {
    @Test func recordOperations() async throws {
        let box = Sandbox()
        let s = try await KeybayStore.open(box.configuration())
        try s.set("b", bytes: [0, 1, 2, 255])
        try s.set("a/x", string: "ä")
        try s.set("c.d_e-f", bytes: [])
        #expect(try s.keys() == ["a/x", "b", "c.d_e-f"])
        #expect(try s.get("b") == [0, 1, 2, 255])
        #expect(try s.get("c.d_e-f") == [])
        #expect(try s.getString("a/x") == "ä")
        #expect(try s.get("missing") == nil)
        #expect(try s.contains("b") && !s.contains("missing"))
        #expect(try s.getMany(["b", "a/x", "missing"]) == ["b": [0, 1, 2, 255], "a/x": Array("ä".utf8)])
        try s.set("b", string: "replaced")
        #expect(try s.getString("b") == "replaced")
        #expect(try s.delete("b"))
        #expect(try !s.delete("b"))
        #expect(try s.keys() == ["a/x", "c.d_e-f"])
        try s.clearAll()
        #expect(try s.keys() == [])
        #expect(try s.getString("x") == nil, "a missing record reads as nil, not an error")
        try s.set("bin", bytes: [0xff, 0xfe])
        #expect(keybayCode { _ = try s.getString("bin") } == .invalidArgument)
        s.close()
        #expect(keybayCode { _ = try s.get("a") } == .closed)
    }

    @Test func unchangedFramesAreCopiedByteForByte() async throws {
        let box = Sandbox()
        let s = try await KeybayStore.open(box.configuration())
        try s.set("a", string: "first")
        let before = try s.freshSnapshot()
        try s.set("b", string: "second")
        let after = try s.freshSnapshot()
        #expect(after.index(of: Array("a".utf8)) == 0 && after.frame(at: 0) == before.frame(at: 0))
    }

    @Test(arguments: ["", "/a", "a/", "a//b", ".a", "a/-b", "a b", "ключ", String(repeating: "k", count: 121)])
    func invalidKeysAreRejectedBeforeAnyWrite(_ key: String) async throws {
        let box = Sandbox()
        let s = try await KeybayStore.open(box.configuration())
        let before = readBytes(box.storePath)
        #expect(keybayCode { try s.set(key, string: "v") } == .invalidKey)
        #expect(keybayCode { _ = try s.get(key) } == .invalidKey)
        #expect(readBytes(box.storePath) == before)
    }

    @Test func valueLimits() async throws {
        let box = Sandbox()
        let s = try await KeybayStore.open(box.configuration())
        let max = [UInt8](repeating: 7, count: 1024 * 1024)
        try s.set(String(repeating: "k", count: 120), bytes: max)
        #expect(try s.get(String(repeating: "k", count: 120)) == max)
        let before = readBytes(box.storePath)
        #expect(keybayCode { try s.set("big", bytes: max + [1]) } == .valueTooLarge)
        #expect(readBytes(box.storePath) == before)
    }

    @Test func fileSizeAndRecordCountLimits() throws {
        let keys = Suite1VectorTests.keys
        let frames = (0..<4097).map { i in
            PendingFrame(key: Array(String(format: "k%05d", i).utf8), bytes: [UInt8](repeating: 0, count: 40)[...], digest: [UInt8](repeating: 0, count: 32))
        }
        let bootstrap = Suite1VectorTests.bootstrap
        #expect(throws: KeybayError(.storeFull, "the store would hold 4097 records, limit 4096")) {
            try StoreEncoder.encode(bootstrap: bootstrap, sealedPackage: Suite1VectorTests.V.sealedPackage, frames: frames, keys: keys, domain: [])
        }
        let big = (0..<17).map { i in
            PendingFrame(key: Array("k\(i + 10)".utf8), bytes: [UInt8](repeating: 0, count: 1024 * 1024)[...], digest: [UInt8](repeating: 0, count: 32))
        }
        #expect(performing: {
            try StoreEncoder.encode(bootstrap: bootstrap, sealedPackage: Suite1VectorTests.V.sealedPackage, frames: big, keys: keys, domain: [])
        }, throws: { ($0 as? KeybayError)?.code == .storeFull })
    }

    @Test func aSecondSessionSeesTheFirstSessionsWrites() async throws {
        let box = Sandbox()
        let first = try await KeybayStore.open(box.configuration())
        let second = try await KeybayStore.open(box.configuration())
        try first.set("shared", string: "one")
        #expect(try second.getString("shared") == "one")
        try second.set("other", string: "two")
        #expect(try first.keys() == ["other", "shared"])
        try KeybayStore.reset(box.configuration())
        #expect(keybayCode { _ = try first.get("shared") } == .storeNotFound)
    }

    @Test func concurrentWritersInOneProcessAllLand() async throws {
        let box = Sandbox()
        let config = try box.configuration()
        _ = try await KeybayStore.open(config)
        try await withThrowingTaskGroup(of: Void.self) { group in
            for w in 0..<4 {
                group.addTask {
                    let s = try await KeybayStore.open(config)
                    for i in 0..<25 { try s.set("w\(w)/k\(i)", string: "\(w):\(i)") }
                }
            }
            try await group.waitForAll()
        }
        let keys = try await KeybayStore.open(config).keys()
        #expect(keys.count == 100)
    }

    @Test func applicationIdGrammar() {
        for bad in ["", ".x", "-x", "a/b", "a b", String(repeating: "a", count: 121)] {
            #expect(!KeybayConfiguration.isValidApplicationID(bad))
            #expect(keybayCode { _ = try KeybayConfiguration(applicationID: bad, dataHome: "/tmp", stateHome: "/tmp") } == .invalidArgument)
        }
        for good in ["a", "com.example.app", "A_b-9", String(repeating: "a", count: 120)] {
            #expect(KeybayConfiguration.isValidApplicationID(good))
        }
        #expect(keybayCode { _ = try KeybayConfiguration(applicationID: "a", dataHome: "relative", stateHome: "/tmp") } == .invalidArgument)
    }
}
