// SPDX-License-Identifier: Apache-2.0
import CKeybayPlugin
import Foundation
import Glibc
import Testing
@testable import Keybay

/// A root as the rollback tests drive it: the environment that selects it for the CLI, and how
/// to read the rollback floor it keeps.
struct RootUnderTest: Sendable {
    let name: String
    let environment: @Sendable (Sandbox) -> [String: String]
    let floor: @Sendable (Sandbox) throws -> UInt64

    /// file-root keeps the floor in its root file: version 1 (38 bytes) has floor 0, version 2
    /// (46 bytes) ends with the floor.
    static let fileRoot = RootUnderTest(name: "file-root", environment: { $0.environment }, floor: { box in
        let file = try #require(readBytes(box.rootPath))
        guard file.count == 46 else { return 0 }
        return file[38...].reduce(0) { $0 << 8 | UInt64($1) }
    })

    func cli(_ box: Sandbox, _ arguments: [String], passphrase: String? = nil, extra: [String: String] = [:]) throws -> RunResult {
        try box.cli(arguments, secret: passphrase, option: passphrase == nil ? nil : "--passphrase-fd",
                    environment: environment(box).merging(extra) { $1 })
    }
}

/// Every root that keeps a floor refuses an older copy of its store put back after the unlock
/// methods changed (`rolled-back`, exit 1, the file untouched), never moves the floor for record
/// writes, and still opens a store whose rotation was cut off between the store write and the
/// floor write.
@Suite struct RollbackTests {
    static let passphrase = "rollback test passphrase"

    /// Copy, enroll, put the copy back: rolled back. The same with remove. reset then starts over.
    static func olderCopiesAreRefused(_ root: RootUnderTest, in box: Sandbox = Sandbox()) throws {
        #expect(try root.cli(box, ["set", "k", "before"]).status == 0)
        let platformOnly = try #require(readBytes(box.storePath))
        let enrolled = try root.cli(box, ["enroll", "passphrase"] + PassphraseTests.fast, passphrase: Self.passphrase)
        #expect(enrolled.status == 0, "\(enrolled.stderr)")
        #expect(try root.floor(box) == 2, "enroll raised \(root.name)'s floor to the new epoch")
        let protected = try #require(readBytes(box.storePath))

        writeBytes(box.storePath, platformOnly)
        let refused = try root.cli(box, ["get", "k", "--json"])
        #expect(refused.status == 1 && refused.error?.code == "rolled-back" && refused.error?.path == box.storePath && refused.error?.pluginID == root.name,
                "\(root.name): \(refused.out)")
        // The way out for people that docs/security.md promises.
        #expect(refused.stderr.contains("reset"), "\(root.name): \(refused.stderr)")
        #expect(readBytes(box.storePath) == platformOnly, "a refused copy is left as it is")
        #expect(try root.cli(box, ["set", "k", "into the copy"]).status == 1, "no write goes into a rolled-back copy")
        #expect(readBytes(box.storePath) == platformOnly)

        writeBytes(box.storePath, protected)
        #expect(try root.cli(box, ["get", "k"], passphrase: Self.passphrase, extra: [:]).out == "before")
        let id = try #require(try methodIDs(box, environment: root.environment(box)).first)
        #expect(try root.cli(box, ["remove", id], passphrase: Self.passphrase).status == 0)
        #expect(try root.floor(box) == 3)
        writeBytes(box.storePath, protected)
        let removed = try root.cli(box, ["get", "k"], passphrase: Self.passphrase)
        #expect(removed.status == 1 && removed.stderr.contains("[rolled-back]"), "\(root.name): \(removed.stderr)")
        let status = try root.cli(box, ["status"])
        #expect(status.status == 1 && status.stderr.contains("[rolled-back]"), "status of a protected copy: \(status.stderr)")
        #expect(readBytes(box.storePath) == protected)

        #expect(try root.cli(box, ["reset", "--yes"]).status == 0)
        let initialized = try root.cli(box, ["init"])
        #expect(initialized.status == 0, "\(initialized.stderr)")
        #expect(try root.cli(box, ["set", "k", "new"]).status == 0 && root.cli(box, ["get", "k"]).out == "new")
    }

    /// set and rm keep the epoch: the floor does not move.
    static func recordWritesLeaveTheFloorAlone(_ root: RootUnderTest, in box: Sandbox = Sandbox()) throws {
        #expect(try root.cli(box, ["set", "k", "v"]).status == 0)
        #expect(try root.cli(box, ["enroll", "passphrase"] + PassphraseTests.fast, passphrase: Self.passphrase).status == 0)
        let floor = try root.floor(box)
        for args in [["set", "a", "1"], ["set", "a", "2"], ["rm", "a"]] {
            #expect(try root.cli(box, args, passphrase: Self.passphrase).status == 0)
        }
        #expect(try root.floor(box) == floor)
    }

    /// A rotation killed after its store is durable but before the floor rises (the floor-crash
    /// root dies there) leaves a newer store than the floor, which opens; the next rotation
    /// raises the floor past it.
    static func aKillBetweenStoreAndFloorLeavesAStoreThatOpens(_ root: RootUnderTest, library: String, in box: Sandbox = Sandbox()) throws {
        let crashing = ["KEYBAY_ROOT": "test-floor-crash", "KEYBAY_TEST_WRAPPED_ROOT": pluginDirectory + "/" + library]
        let wrapped = RootUnderTest(name: root.name + " (floor-crash)", environment: { root.environment($0).merging(crashing) { $1 } },
                                    floor: root.floor)
        #expect(try wrapped.cli(box, ["set", "k", "v"]).status == 0)
        let platformOnly = try #require(readBytes(box.storePath))
        let killed = try wrapped.cli(box, ["enroll", "passphrase"] + PassphraseTests.fast, passphrase: Self.passphrase,
                                     extra: ["KEYBAY_TEST_KILL_AT_FLOOR": "1"])
        #expect(killed.signalled, "the enrollment was not killed at the floor: \(killed.status) \(killed.stderr)")
        #expect(try wrapped.floor(box) == 0, "the floor did not rise")
        let opened = try wrapped.cli(box, ["get", "k"], passphrase: Self.passphrase)
        #expect(opened.status == 0 && opened.out == "v", "\(opened.stderr)")
        // The enrolled store stands; the next rotation (here killed again, then completed) catches up.
        let enrolled = try #require(readBytes(box.storePath))
        let id = try #require(try methodIDs(box, environment: wrapped.environment(box)).first)
        let removeKilled = try wrapped.cli(box, ["remove", id], passphrase: Self.passphrase, extra: ["KEYBAY_TEST_KILL_AT_FLOOR": "1"])
        #expect(removeKilled.signalled)
        #expect(try wrapped.cli(box, ["get", "k"]).out == "v", "the store after the killed remove is platform-only and opens")
        #expect(try wrapped.cli(box, ["enroll", "passphrase"] + PassphraseTests.fast, passphrase: Self.passphrase).status == 0)
        #expect(try wrapped.floor(box) == 4)
        for copy in [platformOnly, enrolled] {
            writeBytes(box.storePath, copy)
            let r = try wrapped.cli(box, ["get", "k"], passphrase: Self.passphrase)
            #expect(r.status == 1 && r.stderr.contains("[rolled-back]"), "\(r.stderr)")
        }
    }

    /// A floor write that fails once the new generation is durable does not fail the command:
    /// the change happened, and saying otherwise would lose a recovery key shown once. The
    /// command warns, the key is printed and opens the store, and the next rotation raises the
    /// floor past the epoch that was missed.
    @Test func aFailedFloorWriteAfterTheStoreIsSavedIsAWarning() throws {
        let box = Sandbox()
        let wrapped = ["KEYBAY_ROOT": "test-floor-crash", "KEYBAY_TEST_WRAPPED_ROOT": pluginDirectory + "/libkeybay-file-root.so"]
        let root = RootUnderTest(name: "file-root (floor fails)", environment: { $0.environment.merging(wrapped) { $1 } },
                                 floor: RootUnderTest.fileRoot.floor)
        #expect(try root.cli(box, ["set", "k", "v"]).status == 0)
        #expect(try root.cli(box, ["enroll", "passphrase"] + PassphraseTests.fast, passphrase: Self.passphrase).status == 0)
        let floor = try root.floor(box)
        let enrolled = try root.cli(box, ["enroll", "recovery", "--json"], passphrase: Self.passphrase, extra: ["KEYBAY_TEST_FAIL_AT_FLOOR": "1"])
        #expect(enrolled.status == 0 && enrolled.stderr.contains("warning") && enrolled.stderr.contains("rollback floor"), "\(enrolled.stderr)")
        let object = try #require(try JSONSerialization.jsonObject(with: Data(enrolled.stdout)) as? [String: Any], "\(enrolled.out)")
        let key = try #require(object["recoveryKey"] as? String), id = try #require(object["methodId"] as? String)
        #expect(try root.floor(box) == floor, "the floor did not move")
        let opened = try box.cli(["get", "k", "--no-input", "--method", id], secret: key, option: "--recovery-key-fd",
                                 environment: root.environment(box))
        #expect(opened.status == 0 && opened.out == "v", "\(opened.stderr)")
        // The next rotation (removing the recovery key, unlocked by the passphrase) raises the
        // floor past the missed epoch.
        let passphraseID = try #require(try methodIDs(box, environment: root.environment(box)).first)
        #expect(try root.cli(box, ["remove", id, "--method", passphraseID], passphrase: Self.passphrase).status == 0)
        #expect(try root.floor(box) == floor + 2)
    }

    @Test func fileRootRefusesOlderCopies() throws { try Self.olderCopiesAreRefused(.fileRoot) }
    @Test func fileRootRecordWritesLeaveTheFloorAlone() throws {
        try Self.recordWritesLeaveTheFloorAlone(.fileRoot)
        // file-root does not even rewrite its root file for a record write.
        let box = Sandbox()
        #expect(try box.cli("set", "k", "v").status == 0)
        #expect(try PassphraseTests.cli(box, ["enroll", "passphrase"] + PassphraseTests.fast, passphrase: Self.passphrase).status == 0)
        var before = stat(), after = stat()
        stat(box.rootPath, &before)
        let bytes = readBytes(box.rootPath)
        #expect(try PassphraseTests.cli(box, ["set", "a", "1"], passphrase: Self.passphrase).status == 0)
        stat(box.rootPath, &after)
        #expect(before.st_ino == after.st_ino && readBytes(box.rootPath) == bytes)
    }
    @Test func fileRootKilledBetweenStoreAndFloorOpens() throws {
        try Self.aKillBetweenStoreAndFloorLeavesAStoreThatOpens(.fileRoot, library: "libkeybay-file-root.so")
    }

    /// The first floor turns the 38-byte version-1 root file into the 46-byte version 2 with the
    /// same root; the independent reader reads both and refuses a rolled-back copy.
    @Test func fileRootUpgradesItsRootFileAndTheIndependentReaderChecksTheFloor() throws {
        let box = Sandbox()
        #expect(try box.cli("set", "k", "v").status == 0)
        let version1 = try #require(readBytes(box.rootPath))
        #expect(version1.count == 38 && version1[5] == 1)
        let copy = try #require(readBytes(box.storePath))
        #expect(try PassphraseTests.cli(box, ["enroll", "passphrase"] + PassphraseTests.fast, passphrase: Self.passphrase).status == 0)
        let version2 = try #require(readBytes(box.rootPath))
        #expect(version2.count == 46 && Array(version2[0..<6]) == Array("KBFR".utf8) + [0, 2] && version2[6..<38] == version1[6..<38])
        #expect(Array(version2[38...]) == [0, 0, 0, 0, 0, 0, 0, 2])
        #expect(mode(box.rootPath) == 0o600)
        let file = box.root + "/pass"
        try (Self.passphrase + "\n").write(toFile: file, atomically: true, encoding: .utf8)
        let current = try IndependentReaderTests.read(box, ["--passphrase-file", file, "--key", "k"])
        #expect(current.status == 0 && current.out == "v", "\(current.stderr)")
        writeBytes(box.storePath, copy)
        let old = try IndependentReaderTests.read(box, ["--key", "k", "--json"])
        #expect(old.status == 1 && old.error?.code == "rolled-back", "\(old.out) \(old.stderr)")
    }

    /// A root plugin that offers one floor operation without the other is refused at load.
    @Test func aRootWithHalfTheFloorOperationsIsRefused() throws {
        let box = Sandbox()
        try PluginLoaderTests.build("""
            #include "keybay_plugin.h"
            static keybay_status open_floor(const keybay_host *h, const keybay_root_context *c, const uint8_t *s, size_t sl,
                const uint8_t *p, size_t pl, const uint8_t *a, size_t al, keybay_buffer *o, uint64_t *f) { return KEYBAY_ERR_INTERNAL; }
            static keybay_status any(void) { return KEYBAY_ERR_INTERNAL; }
            static void free_buffer(keybay_buffer *b) { (void)b; }
            static const keybay_plugin d = { .abi_version = KEYBAY_PLUGIN_ABI_VERSION, .struct_size = sizeof(keybay_plugin),
                .id = "com.example.half", .name = "half", .version = "1", .kind = KEYBAY_KIND_ROOT, .free_buffer = free_buffer,
                .root_exists = (void *)any, .root_create = (void *)any, .root_seal = (void *)any, .root_open = (void *)any,
                .root_location = (void *)any, .root_reset = (void *)any, .root_open_with_floor = open_floor };
            const keybay_plugin *keybay_plugin_entry_v1(void) { return &d; }
            """, fileID: "com.example.half", in: box.root + "/half")
        let e = keybayError {
            _ = try PluginLoader.load(id: "com.example.half", kind: KEYBAY_KIND_ROOT,
                                      search: KeybayPluginSearch(directories: [box.root + "/half"], environmentPath: nil))
        }
        #expect(e?.code == .pluginRefused && e?.reason == "rollback-floor-pair", "\(String(describing: e))")
    }
}
