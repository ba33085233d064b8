import Foundation
import Glibc
import Testing
@testable import Keybay

/// Plugins that misbehave: they are never loaded when not needed, and what they hand back is
/// checked before it is used.
@Suite struct HostilePluginTests {
    /// A method plugin whose unwrap gives a fixed secret; the other operations as C bodies.
    static func source(id: String, probe: String = "return KEYBAY_OK;", enroll: String, describe: String = "return KEYBAY_ERR_UNSUPPORTED;") -> String {
        PluginLoaderTests.source(id: id, probe: probe, enroll: enroll, unwrap: "memset(s, 7, 32); return KEYBAY_OK;", describe: describe)
    }

    static func configuration(_ box: Sandbox, pluginDir: String) throws -> KeybayConfiguration {
        var c = try box.configuration()
        c.pluginSearch = KeybayPluginSearch(directories: [pluginDir], environmentPath: nil)
        return c
    }

    @Test func aPluginThatCrashesInProbeIsNeverLoadedForAStoreThatDoesNotNeedIt() throws {
        let box = Sandbox()
        let dir = box.root + "/hostile"
        try PluginLoaderTests.build(Self.source(id: "crashy", probe: "abort();", enroll: "abort();"), fileID: "crashy", in: dir)
        #expect(try box.cli("set", "k", "v").status == 0)
        let r = try run(cliPath, ["get", "k", "--plugin-dir", dir], environment: box.environment)
        #expect(r.status == 0 && r.out == "v" && !r.signalled, "\(r.stderr)")
        // It does crash when it is asked for: proof that the test plugin is live.
        let probed = try run(cliPath, ["plugins", "--plugin-dir", dir], environment: box.environment)
        #expect(probed.signalled)
    }

    @Test(arguments: [
        ("oversized", "p->data = calloc(1, 5000); p->length = 5000; memset(s, 1, 32); return KEYBAY_OK;"),
        ("null", "p->data = 0; p->length = 10; memset(s, 1, 32); return KEYBAY_OK;"),
    ])
    func malformedEnrollBuffersAreRejected(_ name: String, _ body: String) async throws {
        let box = Sandbox()
        let dir = box.root + "/hostile-\(name)"
        try PluginLoaderTests.build(Self.source(id: "hostile-\(name)", enroll: body), fileID: "hostile-\(name)", in: dir)
        let config = try Self.configuration(box, pluginDir: dir)
        let s = try await KeybayStore.open(config)
        try s.set("k", string: "v")
        let before = readBytes(box.storePath)
        let e = await keybayError { try await s.auth.add(plugin: "hostile-\(name)") }
        #expect(e?.code == .pluginFailed, "\(String(describing: e))")
        #expect(readBytes(box.storePath) == before)
    }

    @Test func anOversizedDescriptionIsRejected() async throws {
        let box = Sandbox()
        let dir = box.root + "/hostile-describe"
        try PluginLoaderTests.build(Self.source(id: "hostile-describe", enroll: "p->data = calloc(1, 4); p->length = 4; memset(s, 1, 32); return KEYBAY_OK;",
                                                describe: "t->data = calloc(1, 4000); memset(t->data, 'a', 4000); t->length = 4000; return KEYBAY_OK;"),
                                    fileID: "hostile-describe", in: dir)
        let s = try await KeybayStore.open(try Self.configuration(box, pluginDir: dir))
        let m = try await s.auth.add(plugin: "hostile-describe")
        #expect(keybayCode { _ = try s.auth.describe(m.id) } == .pluginFailed)
    }
}
