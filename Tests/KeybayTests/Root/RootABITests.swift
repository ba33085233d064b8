// SPDX-License-Identifier: Apache-2.0
import Foundation
import Glibc
import Testing
import CKeybayPlugin
@testable import Keybay

/// The version-1 ABI as tidied: a root may offer only the newer forms of its operations, the
/// count of fields added within version 1 is one constant, the header's attributes hold, the
/// header names no CLI, and root options are ordered with no name given twice.
@Suite struct RootABITests {
    /// A root (`test-newer-root`) that offers only the newer forms: root_create_with_options,
    /// root_open_with_floor, root_location_with_host; root_create, root_open and root_location
    /// stay NULL. It serves the file-root library named by KEYBAY_TEST_WRAPPED_ROOT and appends
    /// each creation's options, in the order it got them, to KEYBAY_TEST_OPTIONS_LOG. Its entry
    /// carries no attribute: KEYBAY_EXPORT on the header's declaration exports it from a library
    /// built with -fvisibility=hidden (and -Werror: the header's attributes hold for it).
    static let newerRoot = """
        #define _POSIX_C_SOURCE 200809L
        #include <dlfcn.h>
        #include <stdio.h>
        #include <stdlib.h>
        #include "keybay_plugin.h"
        static const keybay_plugin *inner;
        static keybay_plugin d;
        static const keybay_option_spec specs[] = { { "b", "an option" }, { "a", "another" } };
        static keybay_status create(const keybay_host *h, const keybay_root_context *c, const keybay_option *o, size_t n,
                                    keybay_buffer *out) {
            const char *path = getenv("KEYBAY_TEST_OPTIONS_LOG");
            FILE *f = path ? fopen(path, "a") : NULL;
            if (f) {
                fprintf(f, "create");
                for (size_t i = 0; i < n; i++) fprintf(f, " %s=%s", o[i].name, o[i].value);
                fprintf(f, "%s\\n", n == 0 && o != NULL ? " (options not NULL)" : "");
                fclose(f);
            }
            return inner->root_create(h, c, out);
        }
        const keybay_plugin *keybay_plugin_entry_v1(void) {
            if (inner) return &d;
            const char *path = getenv("KEYBAY_TEST_WRAPPED_ROOT");
            void *library = path ? dlopen(path, RTLD_NOW | RTLD_LOCAL) : NULL;
            keybay_plugin_entry_fn entry = library ? (keybay_plugin_entry_fn)dlsym(library, KEYBAY_PLUGIN_ENTRY_SYMBOL) : NULL;
            const keybay_plugin *wrapped = entry ? entry() : NULL;
            if (!wrapped || wrapped->struct_size < sizeof(keybay_plugin) || !wrapped->root_create) return NULL;
            d = (keybay_plugin){ .abi_version = KEYBAY_PLUGIN_ABI_VERSION, .struct_size = sizeof(keybay_plugin),
                .id = "test-newer-root", .name = "newer forms only", .version = "1", .kind = KEYBAY_KIND_ROOT,
                .options = specs, .option_count = 2, .free_buffer = wrapped->free_buffer,
                .root_exists = wrapped->root_exists, .root_seal = wrapped->root_seal, .root_reset = wrapped->root_reset,
                .root_location_with_host = wrapped->root_location_with_host, .root_protection = wrapped->root_protection,
                .root_open_with_floor = wrapped->root_open_with_floor, .root_raise_floor = wrapped->root_raise_floor,
                .root_create_with_options = create };
            inner = wrapped;
            return &d;
        }
        """

    /// Compiles `source` as the system compiler would build a third party's plugin: hidden
    /// visibility, every warning an error. Returns the compiler's result (the library is
    /// `dir/libkeybay-<id>.so`).
    static func compile(_ source: String, id: String, in dir: String, flags: [String] = ["-shared", "-fPIC"],
                        libraries: [String] = ["-ldl"]) throws -> RunResult {
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        chmod(dir, 0o755)
        let c = dir + "/src-\(id).c"
        try source.write(toFile: c, atomically: true, encoding: .utf8)
        defer { unlink(c) }
        let out = dir + "/" + KeybayPluginSearch.fileName(for: id)
        let r = try run("/usr/bin/cc", flags + ["-std=c11", "-Wall", "-Wextra", "-Werror", "-fvisibility=hidden",
                                                "-I", PluginLoaderTests.header, "-o", out, c] + libraries,
                        environment: ["PATH": "/usr/bin:/bin"])
        if r.status == 0 { chmod(out, 0o755) }
        return r
    }

    /// The sandbox's environment with `test-newer-root` (built in the sandbox) as the root.
    static func newerRootEnvironment(_ box: Sandbox) throws -> [String: String] {
        let dir = box.root + "/newer"
        let built = try compile(newerRoot, id: "test-newer-root", in: dir)
        #expect(built.status == 0, "\(built.stderr)")
        var env = box.environment
        env["KEYBAY_PLUGIN_PATH"] = [env["KEYBAY_PLUGIN_PATH"], dir].compactMap { $0 }.joined(separator: ":")
        env["KEYBAY_ROOT"] = "test-newer-root"
        env["KEYBAY_TEST_WRAPPED_ROOT"] = unsanitizedPluginDirectory + "/libkeybay-file-root.so"
        env["KEYBAY_TEST_OPTIONS_LOG"] = box.root + "/options.log"
        return env
    }

    static func optionsLog(_ box: Sandbox) -> String? {
        readBytes(box.root + "/options.log").map { String(decoding: $0, as: UTF8.self) }
    }

    /// A root with only the newer forms loads and serves a store: created through
    /// root_create_with_options with no options (NULL, 0), opened through root_open_with_floor,
    /// located through root_location_with_host.
    @Test func aRootWithOnlyTheNewerFormsLoadsAndServesAStore() throws {
        let box = Sandbox()
        let env = try Self.newerRootEnvironment(box)
        #expect(try run(cliPath, ["set", "k", "v"], environment: env).status == 0)
        let got = try run(cliPath, ["get", "k"], environment: env)
        #expect(got.status == 0 && got.out == "v", "\(got.status) \(got.stderr)")
        #expect(Self.optionsLog(box) == "create\n")
        let status = try run(cliPath, ["status", "--json"], environment: env)
        #expect(status.status == 0 && status.out.contains("\"rootPlugin\":\"test-newer-root\"") && status.out.contains(box.rootPath),
                "\(status.out) \(status.stderr)")
    }

    /// The first-party roots offer no old form where a newer one exists, and load all the same.
    @Test(arguments: [("file-root", ["root_open"]), ("secret-service", ["root_open"]), ("tpm2", ["root_open", "root_create"])])
    func firstPartyRootsOfferOnlyTheNewerForms(_ id: String, _ dropped: [String]) throws {
        let plugin = try PluginLoader.load(id: id, kind: KEYBAY_KIND_ROOT,
                                           search: KeybayPluginSearch(directories: [unsanitizedPluginDirectory], environmentPath: nil))
        let d = plugin.descriptor.pointee
        #expect(d.root_open == nil && d.root_open_with_floor != nil && d.root_location == nil && d.root_location_with_host != nil)
        #expect((d.root_create == nil) == dropped.contains("root_create"))
        #expect(d.root_create != nil || d.root_create_with_options != nil)
    }

    /// Root options reach the root in the order given, not sorted, not merged.
    @Test func rootOptionsReachTheRootInTheOrderGiven() throws {
        let box = Sandbox()
        let env = try Self.newerRootEnvironment(box)
        let r = try run(cliPath, ["init", "--opt", "b=2", "--opt", "a=1"], environment: env)
        #expect(r.status == 0, "\(r.stderr)")
        #expect(Self.optionsLog(box) == "create b=2 a=1\n")
        var one = try box.configuration(), other = try box.configuration()
        one.rootOptions = [("b", "2"), ("a", "1")]
        other.rootOptions = [("a", "1"), ("b", "2")]
        #expect(one != other && one.rootOptions.map(\.0) == ["b", "a"])
    }

    /// A root option given twice is invalid-argument (exit 2) before anything is made: no
    /// directory, no root, the root never asked; at a move, the store stays where it is. (The
    /// CLI's parser refuses an `--opt` name given twice already; the library refuses it too.)
    @Test func aRootOptionGivenTwiceIsRefusedBeforeAnythingIsMade() throws {
        let box = Sandbox()
        let env = try Self.newerRootEnvironment(box)
        let r = try run(cliPath, ["init", "--opt", "a=1", "--opt", "a=2"], environment: env)
        #expect(r.status == 2, "\(r.stderr)")
        #expect(Self.optionsLog(box) == nil)
        #expect(!exists(box.dataHome + "/keybay") && !exists(box.stateHome + "/keybay"), "a refused init left directories")
        // The library: the same refusal, by code.
        var config = try box.configuration()
        config.rootPlugin = "tpm2"
        config.rootOptions = [("pcrs", "7"), ("pcrs", "0")]
        let twice = keybayError { try KeybayStore.initialize(config).close() }
        #expect(twice?.code == .invalidArgument && twice?.reason == "repeated-option", "\(String(describing: twice))")
        #expect(!exists(box.dataHome + "/keybay") && !exists(box.stateHome + "/keybay"), "a refused initialize left directories")
        // A move to the root with an option given twice leaves the store on file-root, its root in place.
        #expect(try box.cli("set", "k", "v").status == 0)
        let root = readBytes(box.rootPath)
        let moved = try run(cliPath, ["root", "move", "test-newer-root", "--opt", "b=1", "--opt", "b=1"], environment: env)
        #expect(moved.status == 2, "\(moved.stderr)")
        #expect(Self.optionsLog(box) == nil && readBytes(box.rootPath) == root)
        var onFileRoot = try box.configuration()
        onFileRoot.rootPlugin = "file-root"
        let movedTwice = keybayError { try KeybayStore.moveRoot(onFileRoot, to: "tpm2", options: [("pcrs", "7"), ("pcrs", "7")]) }
        #expect(movedTwice?.code == .invalidArgument && movedTwice?.reason == "repeated-option", "\(String(describing: movedTwice))")
        #expect(readBytes(box.rootPath) == root && !exists(box.stateHome + "/keybay/" + box.app + "/tpm2-root.sealed"))
        let status = try box.cli("status", "--json"), got = try box.cli("get", "k")
        #expect(status.out.contains("\"rootPlugin\":\"file-root\"") && got.out == "v", "\(status.out) \(got.stderr)")
    }

    /// The smallest descriptor the host accepts is the first version-1 header's, which ends
    /// where the fields added within version 1 begin: one constant counts those fields.
    @Test func theFieldsAddedWithinVersion1AreCountedOnce() {
        #expect(LoadedPlugin.minimumDescriptorBytes == MemoryLayout<keybay_plugin>.offset(of: \.describe_with_host))
    }

    /// The header's attributes: an ignored status and a NULL where a pointer is promised do not
    /// compile under -Werror; the same calls used correctly do.
    @Test(arguments: [("(void)0; keybay_status s = d->probe(h); return s;", true),
                      ("d->probe(h); return KEYBAY_OK;", false),
                      ("keybay_status s = d->probe(NULL); return s;", false),
                      ("keybay_status s = d->root_reset(h, NULL); return s;", false),
                      ("int e; keybay_status s = d->root_exists(h, c, &e); return s;", true),
                      ("d->root_exists(h, c, NULL); return KEYBAY_OK;", false),
                      ("keybay_status s = d->describe_with_host(h, NULL, 0, NULL); return s;", false),
                      ("keybay_status s = d->root_create_with_options(h, c, NULL, 0, NULL); return s;", false),
                      ("keybay_buffer b; keybay_status s = d->root_create_with_options(h, c, NULL, 0, &b); return s;", true)])
    func theHeadersAttributesHold(_ body: String, _ compiles: Bool) throws {
        let box = Sandbox()
        let source = """
            #include <stddef.h>
            #include "keybay_plugin.h"
            keybay_status call(const keybay_plugin *d, const keybay_host *h, const keybay_root_context *c);
            keybay_status call(const keybay_plugin *d, const keybay_host *h, const keybay_root_context *c) { (void)c; \(body) }
            """
        let r = try Self.compile(source, id: "attrs", in: box.root + "/attrs", flags: ["-c"], libraries: [])
        #expect((r.status == 0) == compiles, "\(body): \(r.stderr)")
    }

    /// KEYBAY_EXPORT on the header's declaration exports the entry of a plugin built with
    /// -fvisibility=hidden, whose definition carries no attribute.
    @Test func theEntryIsExportedFromAHiddenVisibilityBuild() throws {
        let box = Sandbox()
        let dir = box.root + "/hidden"
        let r = try Self.compile(PluginLoaderTests.source(), id: "t-plugin", in: dir, flags: ["-shared", "-fPIC", "-Wno-unused-parameter"])
        #expect(r.status == 0, "\(r.stderr)")
        #expect(PluginLoaderTests.loadError(dir: dir) == nil)
    }

    /// The header is the ABI: it names no CLI command, option or exit code (the guide does).
    @Test func theHeaderNamesNoCommandOrExitCode() throws {
        let header = try String(contentsOfFile: PluginLoaderTests.header + "/keybay_plugin.h", encoding: .utf8)
        #expect(!header.contains(/--[a-z]/), "the header names a command-line option")
        for word in ["keybay-methods", "CLI", "exit", "`status`", "`plugins`", "benchmark", "plugin-check", "`init", "rolled-back",
                     "invalid-argument", "list --describe", "`enroll "] {
            #expect(!header.contains(word), "the header names \(word)")
        }
    }
}
