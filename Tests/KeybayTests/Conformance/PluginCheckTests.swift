// SPDX-License-Identifier: Apache-2.0
import Foundation
import Glibc
import Testing
@testable import Keybay
@testable import KeybayConformance

/// `keybay-methods plugin-check`: every first-party plugin passes; a broken one fails.
@Suite struct PluginCheckTests {
    @Test(arguments: [
        (pluginDirectory + "/libkeybay-file-root.so", [String]()),
        (pluginDirectory + "/libkeybay-passphrase.so", fastPassphraseFlags),
        (pluginDirectory + "/libkeybay-recovery.so", []),
        (testPluginDirectory + "/libkeybay-test-counting.so", []),
    ])
    func firstPartyPluginsPass(_ path: String, _ options: [String]) throws {
        let box = Sandbox()
        let r = try run(cliPath, ["plugin-check", path] + options, environment: box.environment)
        #expect(r.status == 0 && r.out.contains(" 0 failed") && !r.out.contains("FAIL"), "\(r.out)\(r.stderr)")
    }

    /// The `loads` check's detail for the plugin file at `path`: where plugin-check ran it.
    static func placement(_ path: String, _ box: Sandbox) throws -> String? {
        let r = try run(cliPath, ["plugin-check", "--json", path], environment: box.environment)
        let results = try JSONSerialization.jsonObject(with: Data(r.stdout)) as? [[String: Any]]
        return results?.first { ($0["check"] as? String)?.hasPrefix("loads:") == true }?["detail"] as? String
    }

    /// plugin-check runs a plugin where a host would: a first-party plugin of the in-process list
    /// found in the installation in process, even when named through a link to that directory
    /// (as `.build/release` links to `.build/<triple>/release`: directories are compared resolved);
    /// a copy of the same file elsewhere, and a plugin the host isolates, isolated.
    @Test func pluginCheckRunsAPluginWhereAHostWould() throws {
        let box = Sandbox()
        let linked = box.root + "/build"
        #expect(symlink(buildDirectory, linked) == 0)
        let copy = box.root + "/elsewhere"
        try FileManager.default.createDirectory(atPath: copy, withIntermediateDirectories: true)
        chmod(copy, 0o755)
        try FileManager.default.copyItem(atPath: buildDirectory + "/libkeybay-tpm2-pin.so", toPath: copy + "/libkeybay-tpm2-pin.so")
        #expect(try Self.placement(linked + "/libkeybay-tpm2-pin.so", box) == "in process")
        #expect(try Self.placement(buildDirectory + "/libkeybay-tpm2-pin.so", box) == "in process")
        #expect(try Self.placement(copy + "/libkeybay-tpm2-pin.so", box) == "isolated, in keybay-plugin-host")
        #expect(try Self.placement(linked + "/libkeybay-passphrase.so", box) == "isolated, in keybay-plugin-host")
    }

    @Test func aBrokenPluginFails() throws {
        let box = Sandbox()
        // Loads, but enroll always answers UNSUPPORTED: enroll fails with what it returned, and
        // every check that needs an enrollment is listed as not run.
        let path = try PluginLoaderTests.build(PluginLoaderTests.source(id: "broken"), fileID: "broken", in: box.root + "/broken")
        let r = try run(cliPath, ["plugin-check", path], environment: box.environment)
        #expect(r.status == 1 && r.out.contains("FAIL  enroll with a scripted host returns parameters and a 32-byte M: enroll with no options returned "), "\(r.out)")
        #expect(r.out.contains("[unsupported]") && r.out.contains("NOT RUN  describe returns one line of text: needs a successful enroll"), "\(r.out)")
        #expect(r.out.contains(" 1 failed, 0 skipped, 10 not run"), "\(r.out)")
        let json = try run(cliPath, ["plugin-check", path, "--json"], environment: box.environment)
        #expect(json.out.contains("\"result\":\"not-run\"") && json.out.contains("\"result\":\"fail\""), "\(json.out)")
        let refused = try run(cliPath, ["plugin-check", box.root + "/broken/not-a-plugin.so"], environment: box.environment)
        #expect(refused.status == 1 && refused.out.contains("FAIL"))
    }

    /// A path that does not exist is reported as missing: an installed plugin of the same id is
    /// never checked in its place.
    @Test func aMissingFileFailsAndNothingElseIsChecked() throws {
        let box = Sandbox()
        let r = try run(cliPath, ["plugin-check", box.root + "/missing/libkeybay-passphrase.so"], environment: box.environment)
        #expect(r.status == 1 && r.out.hasPrefix("FAIL  \(box.root)/missing/libkeybay-passphrase.so exists: lstat: No such file or directory\n"), "\(r.out)")
        #expect(!r.out.contains("PASS"), "\(r.out)")
    }

    /// A method plugin that passes every check: M is its PIN, spread and numbered; its
    /// parameters are "GOOD"; `enroll` is replaceable (a C body) to break it.
    static func goodSource(id: String, enroll: String? = nil) -> String {
        let ask = """
            uint8_t pin[64]; size_t len = 0;
            keybay_status st = h->ask_secret(h->context, KEYBAY_SECRET_PIN, 0, "PIN", -1, pin, sizeof pin, &len);
            if (st != KEYBAY_OK) return st;
            if (len == 0) { h->set_error(h->context, "empty PIN"); return KEYBAY_ERR_WRONG_SECRET; }
            for (int i = 0; i < 32; i++) s[i] = (uint8_t)(pin[i % len] ^ i);
            """
        return PluginLoaderTests.source(
            id: id, flags: "KEYBAY_FLAG_INTERACTIVE",
            enroll: enroll ?? """
                if (n) { h->set_error(h->context, "unknown option"); return KEYBAY_ERR_INVALID_OPTION; }
                \(ask)
                p->data = malloc(4); memcpy(p->data, "GOOD", 4); p->length = 4; return KEYBAY_OK;
                """,
            unwrap: """
                if (n != 4 || memcmp(p, "GOOD", 4)) { h->set_error(h->context, "not GOOD"); return KEYBAY_ERR_MALFORMED_PARAMS; }
                \(ask)
                return KEYBAY_OK;
                """,
            describe: "t->data = malloc(4); memcpy(t->data, \"good\", 4); t->length = 4; return KEYBAY_OK;")
    }

    /// The names of every check of the table for a run with these inputs (names do not depend on
    /// what the run finds).
    static func tableNames(path: String, wrongOptions: [(String, String)] = [], changeCredential: String? = nil) -> [String: String] {
        let run = CheckRun(path: path, options: [], wrongOptions: wrongOptions, changeCredential: changeCredential)
        return Dictionary(uniqueKeysWithValues: PluginCheck.table.map { ($0.key, $0.name(run)) })
    }

    /// Results are labelled by the table entry that ran, never by position: an inserted check
    /// (failing, or throwing) changes no other result's name, and a check that throws marks
    /// exactly the checks after it that apply as not run, each by its own name.
    @Test func everyResultCarriesTheNameOfTheEntryThatRan() throws {
        let box = Sandbox()
        let path = try PluginLoaderTests.build(Self.goodSource(id: "com.example.good"), fileID: "com.example.good", in: box.root + "/good")
        let wrong = [("pin", "2")], change = "true"
        let keys = PluginCheck.table.map(\.key)
        #expect(Set(keys).count == keys.count, "keys: \(keys)")
        let names = Self.tableNames(path: path, wrongOptions: wrong, changeCredential: change)
        #expect(Set(names.values).count == names.count, "names: \(names.values.sorted())")

        let plain = PluginCheck.run(path: path)
        #expect(plain.allSatisfy { $0.outcome == .pass }, "\(plain.filter { $0.outcome != .pass })")
        #expect(plain.map(\.key) == keys.filter { !["exists", "file-name", "second-enrollment-shows", "wrong-credential", "changed-credential"].contains($0)
                                                     && !$0.hasPrefix("root-") && !$0.hasPrefix("floor-") })
        let full = PluginCheck.run(path: path, wrongOptions: wrong, changeCredential: change)
        #expect(full.allSatisfy { names[$0.key] == $0.name }, "\(full.map { ($0.key, $0.name) })")

        // A check inserted after unwrap that fails: every other result is as it was, by name.
        let failing = Check("inserted", "an inserted check", appliesTo: Applies.methods) { _ in .fail("inserted") }
        var table = PluginCheck.table
        table.insert(failing, at: try #require(table.firstIndex { $0.key == "unwrap" }) + 1)
        let inserted = PluginCheck.run(path: path, table: table)
        #expect(inserted.filter { $0.key != "inserted" } == plain, "\(inserted)")
        #expect(inserted.filter { $0.outcome == .fail }.map(\.name) == ["an inserted check"])

        // One that throws: it fails, and exactly the checks after it are not run, by name.
        let throwing = Check("throwing", "a throwing check", appliesTo: Applies.methods) { _ in throw KeybayError(.io, "thrown") }
        table = PluginCheck.table
        let at = try #require(table.firstIndex { $0.key == "wrong-secret" })
        table.insert(throwing, at: at)
        let stopped = PluginCheck.run(path: path, table: table)
        let before = plain.prefix { $0.key != "wrong-secret" }
        #expect(Array(stopped.prefix(before.count)) == Array(before))
        #expect(stopped.dropFirst(before.count).first.map { [$0.key: $0.outcome] } == ["throwing": .fail])
        let rest = stopped.dropFirst(before.count + 1)
        #expect(rest.map(\.name) == plain.dropFirst(before.count).map(\.name) && rest.allSatisfy { $0.outcome == .notRun }, "\(stopped)")
    }

    /// A failed enroll marks exactly the checks after it that apply to this plugin and these
    /// options as not run, each by its own name; those before it ran as usual.
    @Test func aFailedEnrollMarksExactlyTheRestNotRunByName() throws {
        let box = Sandbox()
        let good = try PluginLoaderTests.build(Self.goodSource(id: "com.example.same"), fileID: "com.example.same", in: box.root + "/good")
        let broken = try PluginLoaderTests.build(Self.goodSource(id: "com.example.same", enroll: "return KEYBAY_ERR_UNSUPPORTED;"),
                                                 fileID: "com.example.same", in: box.root + "/broken")
        let wrong = [("pin", "2")], change = "true"
        let passing = PluginCheck.run(path: good, wrongOptions: wrong, changeCredential: change)
        let failed = PluginCheck.run(path: broken, wrongOptions: wrong, changeCredential: change)
        let enroll = try #require(failed.firstIndex { $0.key == "enroll" })
        #expect(failed[enroll].outcome == .fail && failed.prefix(enroll).allSatisfy { $0.outcome == .pass }, "\(failed)")
        #expect(failed.prefix(enroll).map(\.key) == passing.prefix(enroll).map(\.key))
        let rest = failed.dropFirst(enroll + 1)
        #expect(rest.map(\.key) == passing.dropFirst(enroll + 1).map(\.key), "\(rest.map(\.key))")
        #expect(rest.count == 13 && rest.allSatisfy { $0.outcome == .notRun }, "\(rest)")
        let names = Self.tableNames(path: broken, wrongOptions: wrong, changeCredential: change)
        #expect(rest.allSatisfy { names[$0.key] == $0.name })
    }

    /// Neither the conformance API nor the plugin loader is part of Keybay's public interface: a
    /// client that imports Keybay (not @testable, not of this package) cannot name them, while
    /// the same set-up compiles with the public types. KeybayConformance is in no product, so no
    /// host outside the package can link it (the CLI reads its public interface as a client).
    @Test func aClientOfKeybaySeesNoConformanceAPIAndNoLoadedPlugin() throws {
        let box = Sandbox()
        let client = SwiftClient(box: box)
        let described = try run("/usr/bin/env", ["swift", "package", "--package-path", packageDirectory, "--scratch-path", box.root + "/scratch",
                                                 "describe", "--type", "json"], environment: ProcessInfo.processInfo.environment)
        let products = try #require(try JSONSerialization.jsonObject(with: Data(described.stdout)) as? [String: Any])["products"] as? [[String: Any]]
        let linked = try #require(products).flatMap { $0["targets"] as? [String] ?? [] }
        #expect(linked.contains("Keybay") && linked.contains("keybay-methods") && !linked.contains("KeybayConformance"), "\(linked)")
        func typecheck(_ module: String, _ name: String) throws -> RunResult { try client.naming(name, importing: module) }
        for name in ["KeybayStore", "KeybayPluginSearch", "KeybayInteraction"] {
            let r = try typecheck("Keybay", name)
            #expect(r.status == 0, "\(name): \(r.stderr)")
        }
        for (module, name) in [("Keybay", "LoadedPlugin"), ("Keybay", "KeybayPluginCheck"), ("Keybay", "PluginUnderCheck"),
                               ("Keybay", "RootUnderCheck"), ("Keybay", "PluginLoader")] {
            let r = try typecheck(module, name)
            #expect(r.status == 1 && r.stderr.contains("cannot find '\(name)' in scope"), "\(module).\(name): \(r.status) \(r.stderr)")
        }
    }

    /// A root whose seal fails with IO: that check fails with the error's code, and exactly the
    /// root checks after it are not run, by name; the ones before it passed.
    @Test func aRootOperationThatFailsMarksTheRestNotRun() throws {
        let box = Sandbox()
        let source = """
            #include <stdlib.h>
            #include "keybay_plugin.h"
            static int made;
            static void fb(keybay_buffer *b) { free(b->data); b->data = 0; b->length = 0; }
            static keybay_status ex(const keybay_host *h, const keybay_root_context *c, int *e) { *e = made; return KEYBAY_OK; }
            static keybay_status cr(const keybay_host *h, const keybay_root_context *c, keybay_buffer *s) {
                if (made) return KEYBAY_ERR_ROOT_EXISTS;
                made = 1; s->data = malloc(1); s->data[0] = 1; s->length = 1; return KEYBAY_OK;
            }
            static keybay_status se(const keybay_host *h, const keybay_root_context *c, const uint8_t *st, size_t sn, const uint8_t *p, size_t pn,
                                    const uint8_t *a, size_t an, keybay_buffer *out) { h->set_error(h->context, "disk full"); return KEYBAY_ERR_IO; }
            static keybay_status op(const keybay_host *h, const keybay_root_context *c, const uint8_t *st, size_t sn, const uint8_t *s, size_t n,
                                    const uint8_t *a, size_t an, keybay_buffer *out) { return KEYBAY_ERR_INTEGRITY; }
            static keybay_status lo(const keybay_root_context *c, keybay_buffer *t) { t->data = malloc(1); t->data[0] = 'x'; t->length = 1; return KEYBAY_OK; }
            static keybay_status re(const keybay_host *h, const keybay_root_context *c) { made = 0; return KEYBAY_OK; }
            static const keybay_plugin d = { .abi_version = KEYBAY_PLUGIN_ABI_VERSION, .struct_size = sizeof(keybay_plugin), .id = "com.example.full",
                .name = "full", .version = "1", .kind = KEYBAY_KIND_ROOT, .free_buffer = fb, .root_exists = ex, .root_create = cr,
                .root_seal = se, .root_open = op, .root_location = lo, .root_reset = re };
            const keybay_plugin *keybay_plugin_entry_v1(void) { return &d; }
            """
        let path = try PluginLoaderTests.build(source, fileID: "com.example.full", in: box.root + "/full")
        // A root outside the installation runs in process only: checked with isolation off.
        let results = PluginCheck.run(path: path, changeCredential: "true", isolation: .inProcess)
        let seal = try #require(results.firstIndex { $0.key == "root-seal-open" }, "\(results)")
        #expect(results[seal].outcome == .fail && results[seal].detail.hasSuffix("[io]"), "\(results[seal])")
        #expect(results.prefix(seal).allSatisfy { $0.outcome == .pass }, "\(results)")
        let rest = results.dropFirst(seal + 1)
        #expect(rest.map(\.key) == ["root-tampered", "root-other-aad", "root-other-state", "root-reset", "root-reset-again", "root-missing",
                                    "root-location", "root-change-credential"], "\(rest.map(\.key))")
        let names = Self.tableNames(path: path, changeCredential: "true")
        #expect(rest.allSatisfy { $0.outcome == .notRun && names[$0.key] == $0.name }, "\(rest)")
    }
}
