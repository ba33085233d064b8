// SPDX-License-Identifier: Apache-2.0
import CKeybayPlugin
import Foundation
import Glibc
import Synchronization
import Testing
@testable import Keybay

/// The core treats every plugin alike: what a plugin is allowed or offers comes from its
/// descriptor, never from its id; the ABI grows within version 1 without breaking older plugins.
@Suite struct PluginStandingTests {
    static func configuration(_ box: Sandbox, pluginDir: String) throws -> KeybayConfiguration {
        var c = try box.configuration()
        c.pluginSearch = KeybayPluginSearch(directories: [pluginDir, pluginDirectory], environmentPath: nil)
        return c
    }

    /// A method whose secret is always seven sevens, with `flags` in its descriptor.
    static func sevens(id: String, flags: String = "0") -> String {
        PluginLoaderTests.source(id: id, flags: flags,
                                 enroll: "p->data = calloc(1, 4); p->length = 4; memset(s, 7, 32); return KEYBAY_OK;",
                                 unwrap: "memset(s, 7, 32); return KEYBAY_OK;",
                                 describe: "t->data = calloc(1, 6); memcpy(t->data, \"sevens\", 6); t->length = 6; return KEYBAY_OK;")
    }

    @Test func aThirdPartyPluginDeclaringOnePerStoreIsRefusedASecondEnrollmentLikeThePassphrase() throws {
        let box = Sandbox()
        let dir = box.root + "/third-party"
        try PluginLoaderTests.build(Self.sevens(id: "com.example.single", flags: "KEYBAY_FLAG_ONE_PER_STORE"), fileID: "com.example.single", in: dir)
        try PluginLoaderTests.build(Self.sevens(id: "com.example.many"), fileID: "com.example.many", in: dir)
        let config = try Self.configuration(box, pluginDir: dir)
        let session = try KeybayStore.open(config)
        try session.auth.add(plugin: "com.example.single")
        let before = readBytes(box.storePath)
        let e = keybayError { _ = try session.auth.add(plugin: "com.example.single") }
        #expect(e?.code == .invalidArgument && e?.pluginID == "com.example.single" && e?.methodID != nil, "\(String(describing: e))")
        let unchanged = readBytes(box.storePath) == before
        #expect(unchanged, "a refused enrollment writes nothing")
        // Without the flag, a second method of the same plugin is fine.
        try session.auth.add(plugin: "com.example.many")
        try session.auth.add(plugin: "com.example.many")
        #expect(try session.auth.list().map(\.plugin) == ["com.example.single", "com.example.many", "com.example.many"])
    }

    @Test func thePassphrasePluginDeclaresItsRulesInItsDescriptor() throws {
        let plugin = try PluginLoader.load(id: "passphrase", kind: KEYBAY_KIND_METHOD, search: KeybayPluginSearch(directories: [pluginDirectory], environmentPath: nil))
        #expect(plugin.isOnePerStore && plugin.calibrates && !plugin.needsDevice)
        #expect(plugin.descriptor.pointee.verify == nil, "first-party plugins leave verify to the host's fallback")
    }

    /// A plugin compiled from the first version-1 header (its descriptor ends at root_reset, it
    /// has the host-less describe and no verify) loads and works end to end.
    /// In process and in the helper (whose proxy descriptor offers describe_with_host for it).
    @Test(arguments: [KeybayPluginIsolation.inProcess, .isolated])
    func aPluginBuiltFromTheFirstVersion1HeaderLoadsAndWorks(_ isolation: KeybayPluginIsolation) async throws {
        let box = Sandbox()
        let dir = box.root + "/abi-1.0"
        try PluginLoaderTests.build(Self.sevens(id: "com.example.old"), fileID: "com.example.old", in: dir,
                                    header: packageDirectory + "/Tests/Fixtures/abi-1.0")
        var config = try Self.configuration(box, pluginDir: dir)
        config.pluginIsolation = isolation
        let plugin = try PluginLoader.load(id: "com.example.old", kind: KEYBAY_KIND_METHOD, search: config.pluginSearch)
        #expect(plugin.isIsolated == (isolation == .isolated))
        if isolation == .inProcess { #expect(plugin.descriptor.pointee.describe_with_host == nil && plugin.descriptor.pointee.describe != nil) }
        let session = try await KeybayStore.open(config)
        try session.set("k", string: "v")
        let method = try await session.auth.add(plugin: "com.example.old")
        session.close()
        let reopened = try await KeybayStore.open(config, method: method.id)
        #expect(try reopened.getString("k") == "v")
        try await reopened.auth.verify(method.id)
        #expect(try reopened.auth.describe(method.id) == "sevens")
    }

    @Test func aDescriptorSmallerThanTheFirstVersion1OneIsRefused() throws {
        let box = Sandbox()
        try PluginLoaderTests.build(PluginLoaderTests.source(size: "offsetof(keybay_plugin, root_reset)"), in: box.root + "/small")
        let e = PluginLoaderTests.loadError(dir: box.root + "/small")
        #expect(e?.code == .pluginRefused && e?.reason == "descriptor-size" && e?.message.contains("expected at least \(LoadedPlugin.minimumDescriptorBytes)") == true, "\(String(describing: e))")
    }

    /// Lines below the host's log level are dropped; the others arrive with their level.
    @Test func theHostHonoursThePluginsLogLevel() throws {
        let box = Sandbox()
        let probe = """
            h->log(h->context, KEYBAY_LOG_DEBUG, "d"); h->log(h->context, KEYBAY_LOG_INFO, "i");
            h->log(h->context, KEYBAY_LOG_ERROR, "e"); return KEYBAY_OK;
            """
        try PluginLoaderTests.build(PluginLoaderTests.source(id: "com.example.logs", probe: probe), fileID: "com.example.logs", in: box.root + "/logs")
        let plugin = try PluginLoader.load(id: "com.example.logs", kind: KEYBAY_KIND_METHOD,
                                           search: KeybayPluginSearch(directories: [box.root + "/logs"], environmentPath: nil))
        for (level, expected) in [(KeybayLogLevel.debug, ["debug d", "info i", "error e"]), (.info, ["info i", "error e"]), (.error, ["error e"])] {
            let recorder = LogRecorder(level: level)
            try plugin.call(recorder, "probe") { d, h in d.pointee.probe(h) }
            #expect(recorder.lines.withLock { $0 } == expected)
        }
    }

    @Test func pluginsSayWhichNeedADevice() throws {
        let box = Sandbox()
        let r = try box.cli("plugins", "--json")
        #expect(r.status == 0)
        let list = try #require(try JSONSerialization.jsonObject(with: Data(r.out.utf8)) as? [[String: Any]])
        let needs = Dictionary(uniqueKeysWithValues: list.compactMap { p in (p["id"] as? String).map { ($0, p["needsDevice"] as? Bool) } })
        #expect(needs["fido2"] == true && needs["test-fido2"] == true && needs["passphrase"] == false && needs["file-root"] == false, "\(needs)")
        let text = try box.cli("plugins").out.split(separator: "\n")
        #expect(text.contains { $0.hasPrefix("fido2 ") && $0.contains("needs a device") } && !text.contains { $0.hasPrefix("passphrase ") && $0.contains("needs a device") })
    }

    @Test func benchmarkRunsAPluginThatCalibratesAndRefusesOneThatDoesNot() throws {
        let box = Sandbox()
        let r = try box.cli("benchmark", "--json", "--opt", "memory-kib=8192", "--opt", "iterations=1", "--opt", "lanes=1")
        #expect(r.status == 0 && r.out.contains("\"plugin\":\"passphrase\"") && r.out.contains("Argon2id v1.3, 8 MiB, t=1, p=1"), "\(r.out) \(r.stderr)")
        let refused = try box.cli("benchmark", "test-counting", "--json")
        #expect(refused.status == 1 && refused.error?.code == "unsupported" && refused.error?.reason == "no-calibration" && refused.error?.pluginID == "test-counting",
                "\(refused.out)")
    }

    @Test func statusShowsTheRootsOwnProtectionNote() throws {
        let box = Sandbox()
        #expect(try box.cli("init").status == 0)
        let status = try KeybayStore.status(box.configuration())
        #expect(status.rootProtection.hasPrefix("file-root keeps the platform key in a private file: it protects against copied files, backups and other users, not against other programs running as this user"))
        #expect(status.rootProtection.hasSuffix("; enroll an unlock method for more"))
    }
}

/// Records plugin log lines at or above `level`.
final class LogRecorder: KeybayInteraction, Sendable {
    let level: KeybayLogLevel
    let lines = Mutex<[String]>([])
    init(level: KeybayLogLevel) { self.level = level }
    func askSecret(_ request: KeybaySecretRequest, into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
        throw KeybayError(.interactionRequired, "no secrets here")
    }
    var logLevel: KeybayLogLevel { level }
    func log(_ text: String, level: KeybayLogLevel) {
        lines.withLock { $0.append("\(level == .debug ? "debug" : level == .info ? "info" : "error") \(text)") }
    }
}
