// SPDX-License-Identifier: Apache-2.0
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
        // It does crash when it is asked for: proof that the test plugin is live. In its helper
        // the crash is the helper's; in process it is the CLI's.
        let probed = try run(cliPath, ["plugins", "--plugin-dir", dir], environment: box.environment)
        #expect(probed.status == 0 && !probed.signalled, "\(probed.stderr)")
        let inProcess = try run(cliPath, ["plugins", "--plugin-dir", dir], environment: box.environment.merging(["KEYBAY_PLUGIN_ISOLATION": "none"]) { $1 })
        #expect(inProcess.signalled)
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

    /// What a plugin says with set_error_detail reaches `KeybayError` only once checked: a good
    /// reason, tries left and an absolute path come through; a token outside `[a-z0-9-]{1,40}`,
    /// a negative count and a relative path are dropped; a later line without a detail drops an
    /// earlier line's. The message stays the plugin's line.
    @Test(arguments: [
        ("detail-good", #"h->set_error_detail(h->context, "pin-blocked", 0, "/tmp/x"); h->set_error(h->context, "blocked");"#,
         "pin-blocked" as String?, 0 as Int?, "/tmp/x" as String?),
        ("detail-bad", #"h->set_error_detail(h->context, "Not A-token", -5, "relative/x"); h->set_error(h->context, "bad");"#, nil, nil, nil),
        ("detail-long", #"h->set_error_detail(h->context, "\#(String(repeating: "a", count: 41))", 2, NULL); h->set_error(h->context, "long");"#,
         nil, 2, nil),
        ("detail-stale", #"h->set_error_detail(h->context, "first", 3, "/tmp/y"); h->set_error(h->context, "first"); h->set_error(h->context, "second");"#,
         nil, nil, nil),
    ])
    func aPluginsErrorDetailIsChecked(_ name: String, _ body: String, _ reason: String?, _ triesLeft: Int?, _ path: String?) async throws {
        let box = Sandbox()
        let dir = box.root + "/hostile-\(name)"
        try PluginLoaderTests.build(Self.source(id: "hostile-\(name)", enroll: body + " return KEYBAY_ERR_LOCKED;"), fileID: "hostile-\(name)", in: dir)
        let s = try await KeybayStore.open(try Self.configuration(box, pluginDir: dir))
        let e = await keybayError { try await s.auth.add(plugin: "hostile-\(name)") }
        #expect(e?.code == .locked && e?.reason == reason && e?.triesLeft == triesLeft, "\(String(describing: e))")
        #expect(e?.path == path && e?.pluginID == "hostile-\(name)", "\(String(describing: e))")
        #expect(e?.message.hasSuffix(name == "detail-stale" ? "second" : name == "detail-good" ? "blocked" : name == "detail-bad" ? "bad" : "long") == true)
    }

    /// A root whose location and protection note fail, leaving a pointer in the out-buffer that
    /// its free_buffer would die on: the host neither reads nor frees an out-buffer after a
    /// failure (docs/plugins.md), so `status` says the location is unknown and goes on.
    @Test func anOutBufferLeftByAFailedRootCallIsNeverFreed() throws {
        let box = Sandbox()
        let dir = box.root + "/hostile-root"
        let failing = "t->data = (uint8_t *)&poison; t->length = 1; if (h && h->set_error) h->set_error(h->context, \"no location today\"); return KEYBAY_ERR_IO;"
        try PluginLoaderTests.build("""
            #include <stdlib.h>
            #include <string.h>
            #include "keybay_plugin.h"
            static uint8_t poison;
            static void fb(keybay_buffer *b) { if (b->data == &poison) abort(); free(b->data); b->data = 0; b->length = 0; }
            static keybay_status exists(const keybay_host *h, const keybay_root_context *c, int *e) { *e = 0; return KEYBAY_OK; }
            static keybay_status create(const keybay_host *h, const keybay_root_context *c, keybay_buffer *s) { return KEYBAY_ERR_UNSUPPORTED; }
            static keybay_status seal(const keybay_host *h, const keybay_root_context *c, const uint8_t *s, size_t sn, const uint8_t *p,
                                      size_t pn, const uint8_t *a, size_t an, keybay_buffer *o) { return KEYBAY_ERR_UNSUPPORTED; }
            static keybay_status open_(const keybay_host *h, const keybay_root_context *c, const uint8_t *s, size_t sn, const uint8_t *p,
                                       size_t pn, const uint8_t *a, size_t an, keybay_buffer *o) { return KEYBAY_ERR_UNSUPPORTED; }
            static keybay_status reset(const keybay_host *h, const keybay_root_context *c) { return KEYBAY_OK; }
            static keybay_status location(const keybay_host *h, const keybay_root_context *c, keybay_buffer *t) { \(failing) }
            static keybay_status protection(const keybay_host *h, const keybay_root_context *c, keybay_buffer *t) { \(failing) }
            static const keybay_plugin d = { .abi_version = KEYBAY_PLUGIN_ABI_VERSION, .struct_size = sizeof(keybay_plugin),
                .id = "hostile-root", .name = "t", .version = "1", .kind = KEYBAY_KIND_ROOT, .free_buffer = fb,
                .root_exists = exists, .root_create = create, .root_seal = seal, .root_open = open_, .root_reset = reset,
                .root_location_with_host = location, .root_protection = protection };
            const keybay_plugin *keybay_plugin_entry_v1(void) { return &d; }
            """, fileID: "hostile-root", in: dir)
        var env = box.environment
        env["KEYBAY_ROOT"] = "hostile-root"
        let r = try run(cliPath, ["status", "--plugin-dir", dir], environment: env)
        #expect(!r.signalled && r.status == 0, "status \(r.status), signalled \(r.signalled): \(r.stderr)")
        #expect(r.out.contains("no location today"), "\(r.out)")
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
