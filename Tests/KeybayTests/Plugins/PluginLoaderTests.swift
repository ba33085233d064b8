// SPDX-License-Identifier: Apache-2.0
import Foundation
import Glibc
import Testing
@testable import Keybay

/// Every loader refusal, with real shared objects compiled from C by the system compiler.
@Suite struct PluginLoaderTests {
    static let header = packageDirectory + "/Sources/CKeybayPlugin/include"

    /// A minimal method plugin; the parameters let each test break one thing (the operations
    /// are given as C bodies).
    static func source(id: String = "t-plugin", abi: String = "KEYBAY_PLUGIN_ABI_VERSION", entry: String = "keybay_plugin_entry_v1",
                       kind: String = "KEYBAY_KIND_METHOD", size: String = "sizeof(keybay_plugin)", flags: String = "0",
                       probe: String = "return KEYBAY_OK;", enroll: String = "return KEYBAY_ERR_UNSUPPORTED;",
                       unwrap: String = "return KEYBAY_ERR_UNSUPPORTED;", describe: String = "return KEYBAY_ERR_UNSUPPORTED;") -> String {
        """
        #include <stdlib.h>
        #include <string.h>
        #include "keybay_plugin.h"
        static void fb(keybay_buffer *b) { free(b->data); b->data = 0; b->length = 0; }
        static keybay_status probe(const keybay_host *h) { \(probe) }
        static keybay_status enroll(const keybay_host *h, const keybay_option *o, size_t n, keybay_buffer *p, uint8_t s[32]) { \(enroll) }
        static keybay_status unwrap(const keybay_host *h, const uint8_t *p, size_t n, uint8_t s[32]) { \(unwrap) }
        static keybay_status describe(const uint8_t *p, size_t n, keybay_buffer *t) { \(describe) }
        static const keybay_plugin d = { .abi_version = \(abi), .struct_size = \(size), .id = "\(id)", .name = "t", .version = "1",
            .kind = \(kind), .flags = \(flags), .free_buffer = fb, .probe = probe, .enroll = enroll, .unwrap = unwrap, .describe = describe };
        const keybay_plugin *\(entry)(void) { return &d; }
        """
    }

    /// Compiles `source` to `dir/libkeybay-<file id>.so`; returns the path.
    @discardableResult
    static func build(_ source: String, fileID: String = "t-plugin", in dir: String, header: String = header, flags: [String] = []) throws -> String {
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        chmod(dir, 0o755)
        let c = dir + "/src-\(fileID).c"
        try source.write(toFile: c, atomically: true, encoding: .utf8)
        let out = dir + "/" + KeybayPluginSearch.fileName(for: fileID)
        let r = try run("/usr/bin/cc", ["-shared", "-fPIC", "-I", header, "-o", out, c] + flags, environment: ["PATH": "/usr/bin:/bin"])
        precondition(r.status == 0, "cc failed: \(r.stderr)")
        unlink(c)
        chmod(out, 0o755)
        return out
    }

    static func loadError(_ id: String = "t-plugin", dir: String) -> KeybayError? {
        keybayError { _ = try PluginLoader.load(id: id, kind: KEYBAY_KIND_METHOD, search: KeybayPluginSearch(directories: [dir], environmentPath: nil)) }
    }

    @Test func aWellFormedPluginLoads() throws {
        let box = Sandbox()
        try Self.build(Self.source(), in: box.root + "/ok")
        #expect(Self.loadError(dir: box.root + "/ok") == nil)
    }

    @Test func worldWritableDirectoryIsRefused() throws {
        let box = Sandbox()
        let dir = box.root + "/ww"
        try Self.build(Self.source(), in: dir)
        chmod(dir, 0o777)
        let e = Self.loadError(dir: dir)
        #expect(e?.code == .pluginRefused && e?.path == dir && e?.reason == "mode", "\(String(describing: e))")
    }

    @Test func groupWritableFileIsRefused() throws {
        let box = Sandbox()
        let path = try Self.build(Self.source(), in: box.root + "/gw")
        chmod(path, 0o775)
        let e = Self.loadError(dir: box.root + "/gw")
        #expect(e?.code == .pluginRefused && e?.path == path && e?.reason == "mode", "\(String(describing: e))")
        #expect(mode(path) == 0o775, "the file was changed")
    }

    @Test(.enabled(if: geteuid() == 0, "changing a file's owner needs root"))
    func fileOwnedByAnotherUserIsRefused() throws {
        let box = Sandbox()
        let path = try Self.build(Self.source(), in: box.root + "/owner")
        chown(path, 65534, 65534)
        let e = Self.loadError(dir: box.root + "/owner")
        #expect(e?.code == .pluginRefused && e?.path == path && e?.reason == "not-owner", "\(String(describing: e))")
        var st = stat()
        #expect(stat(path, &st) == 0 && st.st_uid == 65534, "the file was changed")
    }

    @Test func linkOutOfTheDirectoryIsRefused() throws {
        let box = Sandbox()
        let elsewhere = try Self.build(Self.source(), in: box.root + "/elsewhere")
        let dir = box.root + "/links"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        chmod(dir, 0o755)
        symlink(elsewhere, dir + "/libkeybay-t-plugin.so")
        let e = Self.loadError(dir: dir)
        #expect(e?.code == .pluginRefused && e?.path == dir + "/libkeybay-t-plugin.so" && e?.reason == "link-out", "\(String(describing: e))")
    }

    /// A plugin broken in one way is refused, with a reason saying how and the file's path.
    @Test(arguments: [
        (PluginLoaderTests.source(abi: "2"), "abi-version"),
        (PluginLoaderTests.source(size: "16"), "descriptor-size"),
        (PluginLoaderTests.source(entry: "some_other_name"), "no-entry-symbol"),
        (PluginLoaderTests.source(id: "impostor"), "id-mismatch"),
    ])
    func aBrokenPluginIsRefused(source: String, reason: String) throws {
        let box = Sandbox()
        let path = try Self.build(source, in: box.root + "/broken")
        let e = Self.loadError(dir: box.root + "/broken")
        #expect(e?.code == .pluginRefused && e?.reason == reason && e?.path == path, "\(String(describing: e))")
    }

    @Test(arguments: ["../evil", "Upper", "", "a/b", "-x", ".hidden", String(repeating: "a", count: 65), "a b"])
    func invalidIdsNeverBecomeFileNames(_ id: String) throws {
        let e = Self.loadError(id, dir: "/tmp")
        #expect(e?.code == .invalidArgument, "\(String(describing: e))")
    }

    @Test func wrongKindIsRefused() throws {
        let box = Sandbox()
        try Self.build(Self.source(kind: "KEYBAY_KIND_ROOT"), in: box.root + "/kind")
        let asRoot = keybayError { _ = try PluginLoader.load(id: "t-plugin", kind: KEYBAY_KIND_ROOT, search: KeybayPluginSearch(directories: [box.root + "/kind"], environmentPath: nil)) }
        #expect(asRoot?.code == .pluginRefused && asRoot?.reason == "missing-operation", "a root plugin lacking root operations: \(String(describing: asRoot))")
        // Asked for as a method, it runs isolated and says "root" there: it is never run.
        let e = Self.loadError(dir: box.root + "/kind")
        #expect(e?.code == .pluginFailed && e?.reason == "kind-mismatch", "\(String(describing: e))")
        // A well-formed root plugin asked for as a method: isolated, the same.
        let root = keybayError { _ = try PluginLoader.load(id: "file-root", kind: KEYBAY_KIND_METHOD, search: KeybayPluginSearch(directories: [pluginDirectory], environmentPath: nil, isolation: .isolated)) }
        #expect(root?.code == .pluginFailed && root?.reason == "kind-mismatch", "\(String(describing: root))")
        // In process (isolation off), the loader's own check refuses it.
        let inProcess = keybayError { _ = try PluginLoader.load(id: "file-root", kind: KEYBAY_KIND_METHOD, search: KeybayPluginSearch(directories: [pluginDirectory], environmentPath: nil, isolation: .inProcess)) }
        #expect(inProcess?.code == .pluginRefused && inProcess?.reason == "wrong-kind", "\(String(describing: inProcess))")
    }

    @Test func relativePluginPathEntriesAreRefused() throws {
        let e = keybayError {
            _ = try PluginLoader.load(id: "file-root", kind: KEYBAY_KIND_ROOT, search: KeybayPluginSearch(environmentPath: "relative/dir"))
        }
        #expect(e?.code == .invalidArgument, "\(String(describing: e))")
    }

    @Test func externalPluginsCanBeSwitchedOff() throws {
        let box = Sandbox()
        try Self.build(Self.source(), in: box.root + "/ext")
        let off = KeybayPluginSearch(directories: [box.root + "/ext"], environmentPath: box.root + "/ext", allowExternal: false)
        #expect(keybayCode { _ = try PluginLoader.load(id: "t-plugin", kind: KEYBAY_KIND_METHOD, search: off) } == .pluginNotFound)
        // The first-party root still loads from the installation.
        _ = try PluginLoader.load(id: "file-root", kind: KEYBAY_KIND_ROOT, search: off)
    }
}

import CKeybayPlugin
