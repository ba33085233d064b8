// SPDX-License-Identifier: Apache-2.0
import Foundation
import Glibc
import Testing
@testable import Keybay

@Suite struct LifecycleTests {
    @Test func createsOnFirstOpenWithPrivateModes() async throws {
        let box = Sandbox()
        #expect(try KeybayStore.status(box.configuration()).state == .absent)
        let session = try await KeybayStore.open(box.configuration())
        try session.set("service/token", string: "correct horse")
        #expect(try session.getString("service/token") == "correct horse")
        #expect(try KeybayStore.status(box.configuration()).state == .platformOnly)
        #expect(mode(box.storeDirectory) == 0o700)
        #expect(mode(box.dataHome + "/keybay") == 0o700)
        #expect(mode(box.storePath) == 0o600)
        #expect(mode(box.rootPath) == 0o600)
        #expect(mode(box.stateHome + "/keybay/" + box.app) == 0o700)
        #expect(readBytes(box.rootPath)?.count == 38)
        #expect(!exists(box.stagingPath))
    }

    @Test func openWithoutCreateOnNothingCreatesNothing() async throws {
        let box = Sandbox()
        #expect(await keybayCode { _ = try await KeybayStore.open(box.configuration(), createIfAbsent: false) } == .storeNotFound)
        #expect(!exists(box.rootPath))
        #expect(!exists(box.storePath))
    }

    @Test func rootWithoutStoreIsAConflictUntilReset() async throws {
        let box = Sandbox()
        _ = try await KeybayStore.open(box.configuration())
        unlink(box.storePath)
        #expect(try KeybayStore.status(box.configuration()).state == .rootOnly)
        let rootBefore = readBytes(box.rootPath)
        #expect(await keybayCode { _ = try await KeybayStore.open(box.configuration()) } == .stateConflict)
        #expect(await keybayCode { _ = try await KeybayStore.initialize(box.configuration()) } == .stateConflict)
        #expect(readBytes(box.rootPath) == rootBefore, "a conflict must not touch the root")
        #expect(!exists(box.storePath))
        try KeybayStore.reset(box.configuration())
        #expect(try KeybayStore.status(box.configuration()).state == .absent)
        #expect(exists(box.lockPath), "reset keeps the lock file")
        let fresh = try await KeybayStore.initialize(box.configuration())
        #expect(try fresh.keys() == [])
    }

    @Test func storeWithoutRootIsInvalidatedAndUntouched() async throws {
        let box = Sandbox()
        let s = try await KeybayStore.open(box.configuration())
        try s.set("a", string: "1")
        s.close()
        let before = readBytes(box.storePath)
        unlink(box.rootPath)
        #expect(try KeybayStore.status(box.configuration()).state == .storeOnly)
        let e = await keybayError { _ = try await KeybayStore.open(box.configuration()) }
        #expect(e?.code == .platformKeyInvalidated && e?.reason == "root-missing" && e?.path == box.rootPath, "\(String(describing: e))")
        #expect(readBytes(box.storePath) == before)
        #expect(!exists(box.rootPath), "open must never create a root next to an existing store")
    }

    @Test func aRootFromAnotherStoreIsRefusedBeforeDecryption() async throws {
        let box = Sandbox()
        _ = try await KeybayStore.open(box.configuration())
        _ = try await KeybayStore.open(box.configuration(app: "other.app"))
        let otherRoot = readBytes(box.stateHome + "/keybay/other.app/file-root.key")!
        writeBytes(box.rootPath, otherRoot)
        #expect(await keybayCode { _ = try await KeybayStore.open(box.configuration()) } == .platformKeyInvalidated)
    }

    @Test func aStoreCopiedToAnotherAppIsRefused() async throws {
        let box = Sandbox()
        let s = try await KeybayStore.open(box.configuration())
        try s.set("a", string: "1")
        // Same root bytes, store moved to another application id: the storage domain differs.
        _ = try await KeybayStore.open(box.configuration(app: "other.app"))
        writeBytes(box.dataHome + "/keybay/other.app/keybay.v2.store", readBytes(box.storePath)!)
        writeBytes(box.stateHome + "/keybay/other.app/file-root.key", readBytes(box.rootPath)!)
        #expect(await keybayCode { _ = try await KeybayStore.open(box.configuration(app: "other.app")) } == .platformKeyInvalidated)
    }

    @Test func movingTheBaseDirectoriesKeepsTheStoreReadable() async throws {
        let box = Sandbox()
        let s = try await KeybayStore.open(box.configuration())
        try s.set("a/b", string: "moved")
        s.close()
        try FileManager.default.moveItem(atPath: box.dataHome, toPath: box.root + "/data2")
        try FileManager.default.moveItem(atPath: box.stateHome, toPath: box.root + "/state2")
        let moved = try KeybayConfiguration(applicationID: box.app, dataHome: box.root + "/data2", stateHome: box.root + "/state2")
        #expect(try await KeybayStore.open(moved, createIfAbsent: false).getString("a/b") == "moved")
    }

    @Test func resetIsIdempotentAndKeepsTheLock() async throws {
        let box = Sandbox()
        try KeybayStore.reset(box.configuration()) // nothing there: fine
        _ = try await KeybayStore.open(box.configuration())
        try KeybayStore.reset(box.configuration())
        try KeybayStore.reset(box.configuration())
        #expect(!exists(box.storePath) && !exists(box.rootPath))
        #expect(exists(box.lockPath))
        #expect(try KeybayStore.status(box.configuration()).state == .absent)
    }

    @Test func initializeRefusesAnExistingStore() async throws {
        let box = Sandbox()
        _ = try await KeybayStore.initialize(box.configuration())
        let before = readBytes(box.storePath)
        #expect(await keybayCode { _ = try await KeybayStore.initialize(box.configuration()) } == .alreadyInitialized)
        #expect(readBytes(box.storePath) == before)
    }

    @Test func leftoverStagingIsRemovedOnlyAfterTheLiveFileAuthenticates() async throws {
        let box = Sandbox()
        let s = try await KeybayStore.open(box.configuration())
        try s.set("k", string: "v")
        s.close()
        writeBytes(box.stagingPath, [1, 2, 3])
        _ = try await KeybayStore.open(box.configuration())
        #expect(!exists(box.stagingPath))

        // With a damaged live file (its manifest) the staging file is left as evidence.
        var live = readBytes(box.storePath)!
        live[live.count - 10] ^= 0xff
        writeBytes(box.storePath, live)
        writeBytes(box.stagingPath, [1, 2, 3])
        #expect(await keybayCode { _ = try await KeybayStore.open(box.configuration()) } == .integrity)
        #expect(exists(box.stagingPath))
    }
}
