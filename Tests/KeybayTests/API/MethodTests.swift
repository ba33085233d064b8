// SPDX-License-Identifier: Apache-2.0
import Foundation
import Glibc
import Synchronization
import Testing
@testable import Keybay

/// Answers secret requests from a script and records what was asked (kind, retries left) and
/// every message. With `cancelAfter`, reports cancellation once a message containing it was
/// shown and `when` holds (e.g. the virtual key waits for its touch).
final class ScriptedInteraction: KeybayInteraction, @unchecked Sendable {
    private let answers: Mutex<[String]>
    let requests = Mutex<[(kind: KeybaySecretRequest.Kind, retries: Int?)]>([])
    let messages = Mutex<[String]>([])
    private let cancelAfter: String?
    private let when: @Sendable () -> Bool
    private let prompted = Mutex(false)

    init(_ answers: [String], cancelAfter: String? = nil, when: @escaping @Sendable () -> Bool = { true }) {
        self.answers = Mutex(answers)
        self.cancelAfter = cancelAfter
        self.when = when
    }

    var askCount: Int { requests.withLock { $0.count } }
    var lastRetries: Int? { requests.withLock { $0.last?.retries } }

    func askSecret(_ request: KeybaySecretRequest, into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
        requests.withLock { $0.append((request.kind, request.retriesLeft)) }
        guard let next = answers.withLock({ $0.isEmpty ? nil : $0.removeFirst() }) else {
            throw KeybayError(.interactionRequired, "script exhausted")
        }
        let bytes = Array(next.utf8)
        buffer.copyBytes(from: bytes)
        return bytes.count
    }

    func message(_ text: String, level: KeybayMessageLevel) {
        messages.withLock { $0.append(text) }
        if let cancelAfter, text.contains(cancelAfter) { prompted.withLock { $0 = true } }
    }

    var isCancelled: Bool { prompted.withLock { $0 } && when() }
}

/// Reads the call counters (probe, enroll, unwrap, describe) of the counting plugin loaded from
/// `directory`.
func countingCalls(in directory: String = testPluginDirectory) -> [Int32] {
    guard let handle = dlopen(directory + "/libkeybay-test-counting.so", RTLD_NOW | RTLD_NOLOAD),
          let symbol = dlsym(handle, "keybay_test_counting_calls") else { return [-1, -1, -1, -1] }
    let f = unsafeBitCast(symbol, to: (@convention(c) (Int32) -> Int32).self)
    return (0..<4).map { f(Int32($0)) }
}

@Suite struct MethodTests {
    static func config(_ box: Sandbox) throws -> KeybayConfiguration { try box.configuration() }

    /// `open(_:choosingMethod:)`: nothing on disk creates a platform-only store and a
    /// platform-only store opens, without asking the chooser; a protected store asks it once,
    /// with its methods in list order, and runs only the chosen method's ceremony.
    @Test func theChooserIsAskedOnlyForAProtectedStore() throws {
        final class Chooser: @unchecked Sendable {
            var lists: [[KeybayMethod]] = []
            var label = "second"
            func choose(_ methods: [KeybayMethod]) throws -> String {
                lists.append(methods)
                guard let m = methods.first(where: { $0.label == label }) else { throw KeybayError(.cancelled, "none chosen") }
                return m.id
            }
        }
        let box = Sandbox()
        let config = try Self.config(box)
        let chooser = Chooser()
        let s = try KeybayStore.open(config, choosingMethod: chooser.choose)
        try s.set("k", string: "v")
        s.close()
        let platform = try KeybayStore.open(config, choosingMethod: chooser.choose, createIfAbsent: false,
                                            interaction: ScriptedInteraction(["1111", "1111"]))
        #expect(!platform.isProtected && chooser.lists.isEmpty)
        let first = try platform.auth.add(plugin: "test-counting", label: "first")
        platform.close()
        chooser.label = "first"
        let enrolling = try KeybayStore.open(config, choosingMethod: chooser.choose, interaction: ScriptedInteraction(["1111", "2222", "2222"]))
        #expect(chooser.lists == [[first]], "the store is protected now")
        let second = try enrolling.auth.add(plugin: "test-counting", label: "second")
        enrolling.close()

        chooser.lists = []
        chooser.label = "second"
        let opened = try KeybayStore.open(config, choosingMethod: chooser.choose, interaction: ScriptedInteraction(["2222"]))
        #expect(try opened.getString("k") == "v")
        opened.close()
        #expect(chooser.lists == [[first, second]])
        let wrong = keybayError { _ = try KeybayStore.open(config, choosingMethod: chooser.choose, interaction: ScriptedInteraction(["1111"])) }
        #expect(wrong?.code == .wrongSecret, "the second method's ceremony ran, not the first's")
        chooser.label = "none"
        #expect(keybayCode { _ = try KeybayStore.open(config, choosingMethod: chooser.choose) } == .cancelled)
    }

    @Test func enrollOpenWrongSecretAndRemove() async throws {
        let box = Sandbox()
        let config = try Self.config(box)
        let s = try await KeybayStore.open(config, interaction: ScriptedInteraction(["1234", "1234"]))
        try s.set("service/token", string: "correct horse")
        try s.set("other", bytes: [1, 2, 3])
        let method = try await s.auth.add(plugin: "test-counting", label: "my test key")
        #expect(method.id.count == 32 && method.plugin == "test-counting" && method.label == "my test key")
        #expect(try s.auth.list() == [method])
        #expect(try s.getString("service/token") == "correct horse", "records survive the rotation")
        s.close()

        let status = try KeybayStore.status(config)
        #expect(status.state == .protected && status.methods == [method])

        // Without a method: authentication required, naming the method.
        let e = await keybayError { _ = try await KeybayStore.open(config) }
        #expect(e?.code == .authenticationRequired && e?.message.contains(method.id) == true)

        // Wrong secret: typed error, file byte-identical.
        let before = readBytes(box.storePath)
        let wrong = await keybayError { _ = try await KeybayStore.open(config, method: method.id, interaction: ScriptedInteraction(["9999"])) }
        #expect(wrong?.code == .wrongSecret && wrong?.methodID == method.id && wrong?.pluginID == "test-counting", "\(String(describing: wrong))")
        #expect(readBytes(box.storePath) == before)
        // Nobody to ask: interaction required.
        #expect(await keybayCode { _ = try await KeybayStore.open(config, method: method.id) } == .interactionRequired)
        // An unknown method id, a malformed one.
        #expect(await keybayCode { _ = try await KeybayStore.open(config, method: String(repeating: "0", count: 32), interaction: ScriptedInteraction(["1234"])) } == .methodNotFound)
        #expect(await keybayCode { _ = try await KeybayStore.open(config, method: "xyz") } == .invalidArgument)

        // The right secret opens it.
        let unlocked = try await KeybayStore.open(config, method: method.id, interaction: ScriptedInteraction(["1234"]))
        #expect(try unlocked.getString("service/token") == "correct horse")
        #expect(try unlocked.get("other") == [1, 2, 3])
        let oldKeys = try unlocked.freshSnapshot().keys
        let copyBeforeRemove = readBytes(box.storePath)!
        let rootBeforeRemove = readBytes(box.rootPath)!

        try await unlocked.auth.remove(method.id)
        #expect(try KeybayStore.status(config).state == .platformOnly)
        #expect(try unlocked.getString("service/token") == "correct horse")
        let newKeys = try unlocked.freshSnapshot().keys
        #expect(newKeys.epoch == oldKeys.epoch + 1 && !newKeys.storeKey.equals(oldKeys.storeKey))

        // A copy taken before the removal cannot open what came after: its header (the package
        // the method still opens, with the old key) in front of the new frames and manifest
        // does not authenticate them. (The root file from before the removal goes back too: with
        // the current one, the old package is below the rollback floor and refused before that.)
        let newFile = try #require(readBytes(box.storePath))
        let newRoot = try #require(readBytes(box.rootPath))
        let oldHeader = copyBeforeRemove[..<(try StoreLayout.decode(copyBeforeRemove, context: "t").frames.lowerBound)]
        let newBody = newFile[(try StoreLayout.decode(newFile, context: "t").frames.lowerBound)...]
        writeBytes(box.storePath, Array(oldHeader + newBody))
        #expect(await keybayCode { _ = try await KeybayStore.open(config, method: method.id, interaction: ScriptedInteraction(["1234"])) } == .rolledBack)
        writeBytes(box.rootPath, rootBeforeRemove)
        #expect(await keybayCode { _ = try await KeybayStore.open(config, method: method.id, interaction: ScriptedInteraction(["1234"])) } == .integrity)
        writeBytes(box.storePath, newFile)
        writeBytes(box.rootPath, newRoot)
        // A platform-only store asked for a method is a mismatch.
        #expect(await keybayCode { _ = try await KeybayStore.open(config, method: method.id) } == .protectionMismatch)
    }

    /// Through a private copy of the counting plugin, which no other test (running meanwhile)
    /// calls: the dynamic loader maps a copy as a library of its own, with its own counters.
    @Test func recordOperationsAndListNeverCallAMethodPlugin() async throws {
        let box = Sandbox()
        let copy = box.root + "/counting"
        mkdir(copy, 0o755)
        let plugin = try #require(readBytes(testPluginDirectory + "/libkeybay-test-counting.so"))
        writeBytes(copy + "/libkeybay-test-counting.so", plugin)
        chmod(copy + "/libkeybay-test-counting.so", 0o755)
        var config = try Self.config(box)
        // In process: the counters are read from the plugin's memory in this process.
        config.pluginSearch = KeybayPluginSearch(directories: [copy], isolation: .inProcess)
        let s = try await KeybayStore.open(config, interaction: ScriptedInteraction(["1", "1"]))
        let method = try await s.auth.add(plugin: "test-counting")
        let session = try await KeybayStore.open(config, method: method.id, interaction: ScriptedInteraction(["1"]))
        let before = countingCalls(in: copy)
        #expect(before[1] == 1 && before[2] == 1, "the copy counted one enroll and one unwrap: \(before)")
        try session.set("a", string: "1")
        _ = try session.get("a")
        _ = try session.getMany(["a", "b"])
        _ = try session.keys()
        _ = try session.contains("a")
        try session.delete("a")
        try session.clearAll()
        _ = try session.auth.list()
        _ = try KeybayStore.status(config)
        #expect(countingCalls(in: copy) == before, "a record operation or auth.list() reached the method plugin")
    }

    @Test func removingAMethodReSealsTheOthersWithoutAskingForThem() async throws {
        let box = Sandbox()
        let config = try Self.config(box)
        let interaction = ScriptedInteraction(["a", "a", "b", "b"])
        let s = try await KeybayStore.open(config, interaction: interaction)
        try s.set("k", string: "v")
        let first = try await s.auth.add(plugin: "test-counting", label: "first")
        let second = try await s.auth.add(plugin: "test-counting", label: "second")
        #expect(interaction.askCount == 4)
        try await s.auth.remove(first.id)
        #expect(interaction.askCount == 4, "removal asked for a credential")
        #expect(try s.auth.list() == [second])
        let reopened = try await KeybayStore.open(config, method: second.id, interaction: ScriptedInteraction(["b"]))
        #expect(try reopened.getString("k") == "v")
        let gone = await keybayError { _ = try await KeybayStore.open(config, method: first.id, interaction: ScriptedInteraction(["a"])) }
        #expect(gone?.code == .methodNotFound && gone?.methodID == first.id, "\(String(describing: gone))")
    }

    @Test func verifyChecksTheSecretAndChangesNothing() async throws {
        let box = Sandbox()
        let config = try Self.config(box)
        let s = try await KeybayStore.open(config, interaction: ScriptedInteraction(["p", "p", "p", "wrong"]))
        let m = try await s.auth.add(plugin: "test-counting")
        let before = readBytes(box.storePath)
        try await s.auth.verify(m.id)
        #expect(await keybayCode { try await s.auth.verify(m.id) } == .wrongSecret)
        #expect(readBytes(box.storePath) == before)
        #expect(try s.auth.describe(m.id) == "counting test method")
    }

    @Test func enrollmentChecks() async throws {
        let box = Sandbox()
        let config = try Self.config(box)
        let s = try await KeybayStore.open(config, interaction: ScriptedInteraction(["x", "y"]))
        #expect(await keybayCode { try await s.auth.add(plugin: "test-counting") } == .wrongSecret, "mismatched new-secret entries")
        let fresh = try await KeybayStore.open(config, interaction: ScriptedInteraction(["x", "x"]))
        #expect(await keybayCode { try await fresh.auth.add(plugin: "test-counting", options: [("bogus", "1")]) } == .invalidArgument)
        #expect(await keybayCode { try await fresh.auth.add(plugin: "no-such-plugin") } == .pluginNotFound)
        // A root asked for as a method runs isolated, says "root" there and is not run (kind-mismatch).
        #expect(await keybayCode { try await fresh.auth.add(plugin: "file-root") } == .pluginFailed)
        #expect(await keybayCode { try await fresh.auth.add(plugin: "test-counting", label: "") } == .invalidArgument)
        #expect(try KeybayStore.status(config).state == .platformOnly, "failed enrollments change nothing")
    }

    @Test func atMostThirtyTwoMethods() async throws {
        let box = Sandbox()
        let config = try Self.config(box)
        let s = try await KeybayStore.open(config, interaction: ScriptedInteraction(Array(repeating: "z", count: 66)))
        for i in 0..<32 { try await s.auth.add(plugin: "test-counting", label: "m\(i)") }
        #expect(try s.auth.list().count == 32)
        #expect(await keybayCode { try await s.auth.add(plugin: "test-counting") } == .invalidArgument)
    }
}
