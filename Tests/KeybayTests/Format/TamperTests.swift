// SPDX-License-Identifier: Apache-2.0
import Testing
@testable import Keybay

/// Every single-byte change (three masks), every truncation and appended bytes of a small
/// store, platform-only and passphrase-protected, must give a typed KeybayError when the store
/// is opened, never a value; the same changes to its root file invalidate the platform key.
@Suite struct TamperTests {
    static let acceptable: Set<KeybayError.Code> = [.malformed, .integrity, .unsupported, .platformKeyInvalidated]

    /// Builds a small store and returns its sandbox, file bytes and contents.
    static func smallStore() async throws -> (Sandbox, [UInt8]) {
        let box = Sandbox()
        let s = try await KeybayStore.open(box.configuration())
        try s.set("service/token", string: "correct horse")
        try s.set("a", bytes: [1, 2, 3])
        try s.set("z/empty", bytes: [])
        s.close()
        return (box, readBytes(box.storePath)!)
    }

    /// Opens the store as it now is and reads every record; returns the error code, or nil if it opened.
    static func openOutcome(_ box: Sandbox) async -> KeybayError.Code? {
        await keybayCode {
            let s = try await KeybayStore.open(box.configuration(), createIfAbsent: false)
            for key in try s.keys() { _ = try s.get(key) }
        }
    }

    /// Writes `original` with each of three masks flipped into every `stride`-th byte to `path`,
    /// expects `outcome` to be a typed failure for each, and puts `original` back.
    static func expectEveryFlipFails(_ original: [UInt8], at path: String, stride: Int = 1,
                                     _ outcome: () async -> KeybayError.Code?) async {
        for i in Swift.stride(from: 0, to: original.count, by: stride) {
            for mask: UInt8 in [0x01, 0x80, 0xff] {
                var bytes = original
                bytes[i] ^= mask
                writeBytes(path, bytes)
                let code = await outcome()
                #expect(code.map(acceptable.contains) == true, "flip \(mask) at byte \(i) gave \(String(describing: code))")
            }
        }
        writeBytes(path, original)
    }

    /// What the tests append to a file: one zero byte, four, its own last four bytes, 100 bytes.
    static func appended(_ file: [UInt8]) -> [[UInt8]] {
        [[0], [0, 0, 0, 0], Array(file.suffix(4)), [UInt8](repeating: 0xaa, count: 100)]
    }

    @Test func everyByteFlipIsATypedFailure() async throws {
        let (box, original) = try await Self.smallStore()
        for i in original.indices {
            for mask: UInt8 in [0x01, 0x80, 0xff] {
                var bytes = original
                bytes[i] ^= mask
                writeBytes(box.storePath, bytes)
                let outcome = await Self.openOutcome(box)
                #expect(outcome.map(Self.acceptable.contains) == true, "flip \(mask) at byte \(i) gave \(String(describing: outcome))")
            }
        }
        writeBytes(box.storePath, original)
        #expect(await Self.openOutcome(box) == nil, "the untouched store still opens")
    }

    /// The same for a passphrase-protected (suite 2) store: the methods package, the method's
    /// parameters and its envelope are all under the root's seal and the manifest.
    @Test func everyByteFlipOfAPassphraseProtectedStoreIsATypedFailure() async throws {
        let (box, _) = try await Self.smallStore()
        let s = try await KeybayStore.open(box.configuration(), interaction: ScriptedInteraction(["pw", "pw"]))
        let method = try await s.auth.add(plugin: "passphrase", options: [("memory-kib", "8"), ("iterations", "1"), ("lanes", "1")])
        s.close()
        let original = readBytes(box.storePath)!
        func outcome() async -> KeybayError.Code? {
            await keybayCode {
                let s = try await KeybayStore.open(box.configuration(), method: method.id, createIfAbsent: false, interaction: ScriptedInteraction(["pw"]))
                for key in try s.keys() { _ = try s.get(key) }
            }
        }
        #expect(await outcome() == nil)
        await Self.expectEveryFlipFails(original, at: box.storePath, outcome)
        for length in 0..<original.count {
            writeBytes(box.storePath, Array(original[0..<length]))
            let code = await outcome()
            #expect(code.map(Self.acceptable.contains) == true, "truncation to \(length) gave \(String(describing: code))")
        }
        for extra in Self.appended(original) {
            writeBytes(box.storePath, original + extra)
            let code = await outcome()
            #expect(code.map(Self.acceptable.contains) == true, "appending \(extra.count) bytes gave \(String(describing: code))")
        }
        writeBytes(box.storePath, original)
        #expect(await outcome() == nil)
    }

    @Test func everyTruncationAndAppendIsATypedFailure() async throws {
        let (box, original) = try await Self.smallStore()
        for length in 0..<original.count {
            writeBytes(box.storePath, Array(original[0..<length]))
            let outcome = await Self.openOutcome(box)
            #expect(outcome.map(Self.acceptable.contains) == true, "truncation to \(length) gave \(String(describing: outcome))")
        }
        for extra in Self.appended(original) {
            writeBytes(box.storePath, original + extra)
            let outcome = await Self.openOutcome(box)
            #expect(outcome.map(Self.acceptable.contains) == true, "appending \(extra.count) bytes gave \(String(describing: outcome))")
        }
    }

    @Test func everyRootFileChangeInvalidatesThePlatformKey() async throws {
        let (box, _) = try await Self.smallStore()
        let root = readBytes(box.rootPath)!
        for i in root.indices {
            for mask: UInt8 in [0x01, 0x80, 0xff] {
                var bytes = root
                bytes[i] ^= mask
                writeBytes(box.rootPath, bytes)
                #expect(await Self.openOutcome(box) == .platformKeyInvalidated, "root flip \(mask) at byte \(i)")
            }
        }
        for length in 0..<root.count {
            writeBytes(box.rootPath, Array(root[0..<length]))
            #expect(await Self.openOutcome(box) == .platformKeyInvalidated, "root truncated to \(length)")
        }
        for extra in Self.appended(root) {
            writeBytes(box.rootPath, root + extra)
            #expect(await Self.openOutcome(box) == .platformKeyInvalidated, "\(extra.count) bytes appended to the root")
        }
        writeBytes(box.rootPath, root)
        #expect(await Self.openOutcome(box) == nil)
    }

    /// Swapping in an older frame of the same key (same storeId, epoch and AAD) is caught by the
    /// manifest digest: a rollback of one record inside a newer manifest never authenticates.
    @Test func anOlderFrameOfTheSameKeyIsRejected() async throws {
        let box = Sandbox()
        let s = try await KeybayStore.open(box.configuration())
        try s.set("k", string: "old-value")
        let old = try s.freshSnapshot()
        try s.set("k", string: "new-value")
        let frame = old.frameStarts[0]..<(old.frameStarts[0] + old.entries[0].frameLength)
        #expect(try s.freshSnapshot().frameStarts == old.frameStarts, "same length: the frame keeps its place")
        var new = readBytes(box.storePath)!
        new.replaceSubrange(frame, with: old.file[frame])
        writeBytes(box.storePath, new)
        #expect(await Self.openOutcome(box) == .integrity)
    }

    /// Decoder-level checks the flips above may not reach.
    @Test func strictDecoding() throws {
        func layoutCode(_ bytes: [UInt8]) -> KeybayError.Code? {
            keybayCode { _ = try StoreLayout.decode(bytes, context: "t") }
        }
        var good = Suite1VectorTests.V.bootstrap
        let base = hex(good) + Suite1VectorTests.V.sealedPackage + hex(Suite1VectorTests.V.recordFrame) + hex(Suite1VectorTests.V.sealedManifest) + [0, 0, 0, 0x58]
        #expect(layoutCode(base) == nil)
        good = "4b425632000300000004deadbeef00000030" // suite 3 does not exist
        #expect(layoutCode(hex(good) + Array(base.dropFirst(18))) == .unsupported)
        #expect(layoutCode(hex("4b42563200010000004100") + base) == .malformed) // provider state 65 bytes
        #expect(layoutCode(hex("4b425632000100000000") + [0, 0, 0x10, 0x01] + [UInt8](repeating: 0, count: 5000)) == .malformed) // package > 4 KiB
        #expect(layoutCode(Array(base.dropLast(4)) + [0xff, 0xff, 0xff, 0xff]) == .malformed)

        // Sizes: all but the sealed package within 16 MiB, and never more than 16 MiB + 160 KiB in all.
        let package = Suite1VectorTests.V.sealedPackage.count
        let packageEnd = hex(Suite1VectorTests.V.bootstrap).count + package
        func besidesThePackage(_ n: Int) -> [UInt8] {
            Array(base[..<packageEnd]) + [UInt8](repeating: 0, count: n - (base.count - package)) + base[packageEnd...]
        }
        #expect(layoutCode(besidesThePackage(16 * 1024 * 1024)) == nil)
        let tooLong = keybayError { _ = try StoreLayout.decode(besidesThePackage(16 * 1024 * 1024 + 1), context: "t") }
        #expect(tooLong?.code == .malformed && tooLong?.reason == "content-too-large", "\(String(describing: tooLong))")
        #expect(StoreLayout.maxTotalBytes == 16_941_056)
        let oversized = keybayError { _ = try StoreLayout.decode([UInt8](repeating: 0, count: 16_941_057), context: "t") }
        #expect(oversized?.code == .malformed && oversized?.reason == "file-too-large", "\(String(describing: oversized))")
        let atTheLimit = keybayError { _ = try StoreLayout.decode([UInt8](repeating: 0, count: 16_941_056), context: "t") }
        #expect(atTheLimit?.code == .malformed && atTheLimit?.reason != "file-too-large", "\(String(describing: atTheLimit))")

        // Manifest: unsorted, duplicate, bad key, impossible count, trailing bytes.
        func manifestCode(_ m: [UInt8]) -> KeybayError.Code? {
            keybayCode { _ = try Manifest.decode(m, context: "t") }
        }
        let d = [UInt8](repeating: 0, count: 32)
        let entry = { (k: String) -> ManifestEntry in ManifestEntry(key: Array(k.utf8), frameLength: 41, digest: d) }
        #expect(manifestCode(Manifest.encode([entry("a"), entry("b")])) == nil)
        #expect(manifestCode(Manifest.encode([entry("b"), entry("a")])) == .malformed)
        #expect(manifestCode(Manifest.encode([entry("a"), entry("a")])) == .malformed)
        #expect(manifestCode(Manifest.encode([entry("a/")])) == .malformed)
        #expect(manifestCode(Manifest.encode([entry("a")]) + [0]) == .malformed)
        #expect(manifestCode([0, 0, 0x10, 0x01]) == .malformed)
        #expect(manifestCode([0xff, 0xff, 0xff, 0xff]) == .malformed)
        #expect(manifestCode(Manifest.encode([ManifestEntry(key: [0x61], frameLength: 39, digest: d)])) == .malformed)
    }
}
