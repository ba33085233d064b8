// SPDX-License-Identifier: Apache-2.0
import Foundation
import Glibc
import Testing
@testable import Keybay

/// `make install` into a temporary prefix, then the installed CLI finds its installed plugins, the
/// installed library finds the same ones, the installed Python package runs, and every installed
/// ELF file (the CLI, the credential helpers, the library, the plugins) is stripped (STRIP= keeps the debug info); the man page renders; the completion
/// completes commands, plugin ids and record keys.
@Suite struct InstallTests {
    /// `make install BIN=<this build> PREFIX=<box>/prefix` (with `extra` make variables): the prefix.
    static func install(into box: Sandbox, _ extra: [String] = []) throws -> String {
        let prefix = box.root + "/prefix"
        let make = try run("/usr/bin/make", ["-s", "-C", packageDirectory, "install", "BIN=" + buildDirectory, "PREFIX=" + prefix, "PREFIX_RECORD="] + extra,
                           environment: ["PATH": "/usr/bin:/bin", "HOME": box.root])
        guard make.status == 0 else { throw KeybayTestFailure("make install: \(make.stderr)") }
        return prefix
    }

    /// The first-party plugins' ids: one directory under Plugins/ each, but Support (the code they share).
    static func firstPartyPlugins() throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: packageDirectory + "/Plugins")
            .filter { var d: ObjCBool = false; return $0 != "Support" && FileManager.default.fileExists(atPath: packageDirectory + "/Plugins/" + $0, isDirectory: &d) && d.boolValue }
    }

    /// The installed ELF files: the CLI, the credential helpers, the library and every first-party plugin.
    static let installedPrograms = ["keybay-methods", "git-credential-keybay", "docker-credential-keybay"]
    static func installedELFFiles(_ prefix: String) throws -> [String] {
        let plugins = try FileManager.default.contentsOfDirectory(atPath: prefix + "/lib/keybay/plugins").sorted()
        return installedPrograms.map { prefix + "/bin/" + $0 } + [prefix + "/lib/libkeybay.so.1"] + plugins.map { prefix + "/lib/keybay/plugins/" + $0 }
    }

    /// The section names readelf lists for an ELF file (nil when it is not one).
    static func sectionNames(_ file: String) throws -> Set<String>? {
        let r = try run("/usr/bin/readelf", ["-S", "-W", file], environment: ["PATH": "/usr/bin:/bin", "LC_ALL": "C"])
        guard r.status == 0, r.out.contains("Section Headers:") else { return nil }
        let regex = try NSRegularExpression(pattern: #"^\s*\[\s*\d+\]\s+(\S+)"#, options: .anchorsMatchLines)
        return Set(regex.matches(in: r.out, range: NSRange(r.out.startIndex..., in: r.out)).compactMap {
            Range($0.range(at: 1), in: r.out).map { String(r.out[$0]) }
        })
    }

    /// Installed files carry neither debug info nor a symbol table (readelf); `STRIP=` installs
    /// them as built, which this build (debug, unstripped) shows the check would see.
    @Test func installedFilesAreStrippedUnlessStripIsEmpty() throws {
        let box = Sandbox()
        let prefix = try Self.install(into: box)
        let files = try Self.installedELFFiles(prefix)
        #expect(files.count == Self.installedPrograms.count + 1 + (try Self.firstPartyPlugins()).count, "\(files)")
        for file in files {
            let sections = try #require(try Self.sectionNames(file), "\(file) is not an ELF file")
            #expect(!sections.contains(".debug_info") && !sections.contains(".symtab"), "\(file) is not stripped: \(sections.sorted())")
        }
        let debugBox = Sandbox()
        let debugPrefix = try Self.install(into: debugBox, ["STRIP="])
        for file in try Self.installedELFFiles(debugPrefix) {
            let sections = try #require(try Self.sectionNames(file), "\(file) is not an ELF file")
            #expect(sections.contains(".debug_info") && sections.contains(".symtab"), "STRIP= stripped \(file): \(sections.sorted())")
        }
    }

    /// The layout's promise (Makefile, README "Install"): the installed CLI (<exe dir>/../lib/keybay/plugins)
    /// and the installed libkeybay.so.1 (<library dir>/keybay/plugins) load the same plugin files,
    /// PREFIX/lib/keybay/plugins. The C host lives outside the prefix, so its own directory cannot
    /// lead it there; it prints the file-root plugin it mapped.
    @Test func theInstalledCLIAndLibraryLoadTheSamePlugins() throws {
        let box = Sandbox(app: "com.example.layout")
        let prefix = try Self.install(into: box)
        var environment = box.environment
        environment["KEYBAY_PLUGIN_PATH"] = nil
        let listed = try run(prefix + "/bin/keybay-methods", ["plugins", "--json"], environment: environment)
        let plugins = try #require(try JSONSerialization.jsonObject(with: Data(listed.out.utf8)) as? [[String: Any]], "\(listed.stderr)")
        let cliFileRoot = plugins.first { $0["id"] as? String == "file-root" }?["path"] as? String
        #expect(cliFileRoot == prefix + "/lib/keybay/plugins/libkeybay-file-root.so", "\(listed.out)")

        let source = box.root + "/host.c", host = box.root + "/host/app"
        mkdir(box.root + "/host", 0o700)
        try Self.hostSource.write(toFile: source, atomically: true, encoding: .utf8)
        let flags = try run("/usr/bin/pkg-config", ["--cflags", "--libs", "keybay"],
                            environment: ["PATH": "/usr/bin:/bin", "PKG_CONFIG_PATH": prefix + "/lib/pkgconfig"])
        let cc = try run("/usr/bin/cc", ["-std=c11", "-Wall", "-Werror", source] + flags.out.split(whereSeparator: \.isWhitespace).map(String.init)
                         + ["-o", host], environment: ["PATH": "/usr/bin:/bin"])
        #expect(cc.status == 0, "\(cc.stderr)")
        let r = try run(host, [], environment: environment)
        #expect(r.status == 0 && r.out == "loaded \(prefix)/lib/keybay/plugins/libkeybay-file-root.so\n", "\(r.out) \(r.stderr)")
        #expect(r.out == "loaded \(cliFileRoot ?? "?")\n")
    }

    /// Opens the sandbox's store (creating it), sets and gets a value, and prints the path of the
    /// file-root plugin mapped into the process.
    static let hostSource = """
        #include <keybay/keybay.h>
        #include <stdio.h>
        #include <string.h>
        int main(void) {
            keybay_open_options options = {.struct_size = sizeof options, .app_id = "com.example.layout", .no_input = 1};
            keybay_error *err = NULL;
            keybay_store *store = keybay_open(&options, NULL, &err);
            if (!store) { fprintf(stderr, "open: %s\\n", keybay_error_message(err)); return 1; }
            uint8_t *value; size_t length;
            if (keybay_set(store, "k", (const uint8_t *)"v", 1, &err) || keybay_get(store, "k", &value, &length, &err)) {
                fprintf(stderr, "%s\\n", keybay_error_message(err)); return 1;
            }
            if (length != 1 || value[0] != 'v') return 1;
            keybay_free_value(value, length);
            FILE *maps = fopen("/proc/self/maps", "r");
            char line[4096];
            while (maps && fgets(line, sizeof line, maps)) {
                char *path = strchr(line, '/');
                if (path && strstr(path, "/libkeybay-file-root.so")) { printf("loaded %s", path); break; }
            }
            keybay_close(store);
            return 0;
        }
        """

    @Test func installedCLIUsesItsInstalledPlugins() throws {
        let box = Sandbox()
        let prefix = box.root + "/prefix"
        // BIN= installs the build the tests run from (plain `make install` builds in release mode).
        let make = try run("/usr/bin/make", ["-C", packageDirectory, "install", "BIN=" + buildDirectory, "PREFIX=" + prefix, "PREFIX_RECORD="],
                           environment: ["PATH": "/usr/bin:/bin", "HOME": box.root])
        #expect(make.status == 0, "\(make.stderr)")
        for file in ["bin/keybay-methods", "lib/keybay/plugins/libkeybay-file-root.so", "lib/keybay/plugins/libkeybay-passphrase.so",
                     "include/keybay/keybay_plugin.h", "lib/pkgconfig/keybay-plugin.pc", "share/man/man1/keybay-methods.1",
                     "share/man/man1/git-credential-keybay.1", "share/man/man1/docker-credential-keybay.1",
                     "share/bash-completion/completions/keybay-methods", "share/doc/keybay/plugins.md",
                     "share/doc/keybay/examples/c-plugin/pin.c", "bin/git-credential-keybay", "bin/docker-credential-keybay",
                     "lib/systemd/user/keybay-agent.socket", "lib/systemd/user/keybay-agent.service"] {
            #expect(exists(prefix + "/" + file), "\(file) not installed")
        }
        // The Python package, where the installing python3 imports from under the prefix.
        let python = try FileManager.default.subpathsOfDirectory(atPath: prefix + "/lib").filter { $0.hasSuffix("-packages/keybay/__init__.py") }
        #expect(python.count == 1, "the Python package: \(python)")
        for name in ["libkeybay-test-counting.so", "libkeybay-test-fido2.so", "libkeybaytest-counting.so", "libkeybaytest-fido2.so"] {
            #expect(!exists(prefix + "/lib/keybay/plugins/" + name), "a test plugin was installed: \(name)")
        }
        let installed = prefix + "/bin/keybay-methods"
        var env = box.environment
        env["KEYBAY_PLUGIN_PATH"] = nil // the installed plugins only, even in a sanitizer run
        let plugins = try run(installed, ["plugins", "--json"], environment: env)
        #expect(plugins.out.contains("\"path\":\"\(prefix)/lib/keybay/plugins/libkeybay-file-root.so\""), "\(plugins.out)")
        // Every first-party plugin (a directory under Plugins/ each) is installed and listed, and nothing else.
        let firstParty = try Self.firstPartyPlugins()
        let listed = try #require(try JSONSerialization.jsonObject(with: Data(plugins.out.utf8)) as? [[String: Any]]).compactMap { $0["id"] as? String }
        #expect(firstParty.count >= 3 && Set(listed) == Set(firstParty) && listed.count == firstParty.count, "installed \(listed), Plugins/ has \(firstParty)")
        #expect(try run(installed, ["set", "k", "v"], environment: env).status == 0)
        #expect(try run(installed, ["get", "k"], environment: env).out == "v")
        // The installed Python package on the installed library, found by its soname.
        if let package = python.first {
            var pythonEnv = env
            pythonEnv["PYTHONPATH"] = prefix + "/lib/" + package.dropLast("/keybay/__init__.py".count)
            pythonEnv["LD_LIBRARY_PATH"] = prefix + "/lib"
            let read = try run("/usr/bin/python3", ["-c", "import keybay, sys; s = keybay.open(sys.argv[1]); print(keybay.__file__, s.get('k').decode())",
                                                     box.app], environment: pythonEnv)
            #expect(read.status == 0 && read.out == "\(prefix)/lib/\(package) v\n", "\(read.out) \(read.stderr)")
        }
        // The agent's units: the service runs the installed CLI, on the socket where clients look.
        let service = String(decoding: readBytes(prefix + "/lib/systemd/user/keybay-agent.service") ?? [], as: UTF8.self)
        let socketUnit = String(decoding: readBytes(prefix + "/lib/systemd/user/keybay-agent.socket") ?? [], as: UTF8.self)
        #expect(service.contains("ExecStart=\(installed) agent\n"), "\(service)")
        #expect(socketUnit.contains("ListenStream=%t/keybay/agent.socket\n") && socketUnit.contains("SocketMode=0600\n")
                && socketUnit.contains("DirectoryMode=0700\n"), "\(socketUnit)")
        let uninstall = try run("/usr/bin/make", ["-C", packageDirectory, "uninstall", "PREFIX=" + prefix], environment: ["PATH": "/usr/bin:/bin"])
        #expect(uninstall.status == 0 && !exists(installed) && !exists(prefix + "/lib/keybay/plugins/libkeybay-file-root.so")
                && !exists(prefix + "/share/doc/keybay") && !exists(prefix + "/lib/" + (python.first ?? ""))
                && !exists(prefix + "/bin/git-credential-keybay") && !exists(prefix + "/bin/docker-credential-keybay")
                && !exists(prefix + "/lib/systemd/user/keybay-agent.socket") && !exists(prefix + "/lib/systemd/user/keybay-agent.service"))
    }

    /// The plugin guide works from an install: `make install-dev` puts it, the documents it links,
    /// the header and the example plugin under PREFIX/share/doc/keybay, and every link in every
    /// installed document, and every relative path the guide names, exists there (anchors
    /// included) and in the source tree's docs/ alike.
    @Test func everyReferenceInTheInstalledGuideResolves() throws {
        let box = Sandbox()
        let prefix = box.root + "/prefix"
        let make = try run("/usr/bin/make", ["-s", "-C", packageDirectory, "install-dev", "PREFIX=" + prefix], environment: ["PATH": "/usr/bin:/bin"])
        #expect(make.status == 0, "\(make.stderr)")
        let installed = prefix + "/share/doc/keybay"
        let documents = try FileManager.default.subpathsOfDirectory(atPath: installed).filter { $0.hasSuffix(".md") }.sorted()
        #expect(documents.contains("plugins.md") && documents.contains("examples/c-plugin/README.md"), "\(documents)")
        for file in ["keybay_plugin.h", "examples/c-plugin/pin.c", "examples/c-plugin/Makefile"] {
            #expect(exists(installed + "/" + file), "\(file) not installed")
        }
        for tree in [installed, packageDirectory + "/docs"] {
            for document in documents {
                let problems = Self.unresolvedReferences(in: tree + "/" + document, paths: document == "plugins.md")
                #expect(problems.isEmpty, "\(tree)/\(document): \(problems)")
            }
        }
    }

    /// The links (and, with `paths`, the relative file paths and bare source file names in code
    /// spans) of a Markdown file that lead nowhere. A path is a code span of slash-separated names
    /// ending in a source or document file (`examples/c-plugin/pin.c`); an upper-case first
    /// component is a placeholder (`PREFIX/include/keybay`), not a path.
    static func unresolvedReferences(in file: String, paths: Bool) -> [String] {
        guard let text = readBytes(file).map({ String(decoding: $0, as: UTF8.self) }) else { return ["cannot read \(file)"] }
        let directory = (file as NSString).deletingLastPathComponent
        var problems: [String] = []
        func matches(_ pattern: String) -> [String] {
            let regex = try! NSRegularExpression(pattern: pattern)
            return regex.matches(in: text, range: NSRange(text.startIndex..., in: text)).compactMap { Range($0.range(at: 1), in: text).map { String(text[$0]) } }
        }
        for target in matches(#"\]\(([^)\s]+)\)"#) where !target.contains("://") && !target.hasPrefix("mailto:") {
            let parts = target.split(separator: "#", maxSplits: 1, omittingEmptySubsequences: false).map(String.init)
            let path = parts[0].isEmpty ? file : directory + "/" + parts[0]
            guard exists(path) else { problems.append("link \(target): no \(path)"); continue }
            if parts.count == 2, path.hasSuffix(".md"), !anchors(of: path).contains(parts[1]) { problems.append("link \(target): no such heading") }
        }
        if paths {
            let extensions: Set<String> = ["c", "h", "md", "swift", "py", "sh"]
            for span in matches(#"`([A-Za-z0-9_.-]+(?:/[A-Za-z0-9_.-]+)+)`"#) {
                let components = span.split(separator: "/")
                let last = String(components.last!)
                guard extensions.contains((last as NSString).pathExtension) || last == "Makefile",
                      components[0].uppercased() != components[0] || components[0].contains(".") else { continue }
                if !exists(directory + "/" + span) { problems.append("path \(span): no \(directory)/\(span)") }
            }
            // A bare source file name (`pin.c`) names a file the reader can open: one of that name
            // in the tree the guide is in.
            let files = Set(((try? FileManager.default.subpathsOfDirectory(atPath: directory)) ?? []).map { ($0 as NSString).lastPathComponent })
            for name in matches(#"`([A-Za-z0-9_-]+\.[ch])`"#) where !files.contains(name) {
                problems.append("file \(name): none in \(directory)")
            }
        }
        return problems
    }

    /// The anchors of a Markdown file's headings, as renderers make them: lower case, punctuation
    /// dropped, spaces as hyphens.
    static func anchors(of file: String) -> Set<String> {
        let text = String(decoding: readBytes(file) ?? [], as: UTF8.self)
        return Set(text.split(separator: "\n").filter { $0.hasPrefix("#") }.map { line in
            String(line.drop { $0 == "#" }.dropFirst().lowercased().compactMap { c -> Character? in
                c == " " ? "-" : (c.isLetter || c.isNumber || c == "-" || c == "_") ? c : nil
            })
        })
    }

    /// The CLI run from the build directory searches its own directory: the test plugins, built
    /// there too, must not be among what it lists (only the first-party plugins are).
    @Test func theBuildDirectoryCLIListsNoTestPlugin() throws {
        let box = Sandbox()
        var env = box.environment
        env["KEYBAY_PLUGIN_PATH"] = nil
        let plugins = try run(cliPath, ["plugins", "--json"], environment: env)
        #expect(plugins.status == 0, "\(plugins.stderr)")
        let listed = try #require(try JSONSerialization.jsonObject(with: Data(plugins.out.utf8)) as? [[String: Any]]).compactMap { $0["id"] as? String }
        #expect(!listed.isEmpty && !listed.contains { $0.hasPrefix("test-") }, "the build directory's CLI lists \(listed)")
        // Named, their directory gives them.
        let named = try run(cliPath, ["plugins", "--plugin-dir", testPluginDirectory], environment: env)
        #expect(named.out.contains("test-counting") && named.out.contains("test-fido2"), "\(named.out)")
    }

    @Test(arguments: ["keybay-methods", "git-credential-keybay", "docker-credential-keybay"])
    func theManPageRendersWithoutWarnings(program: String) throws {
        let r = try run("/usr/bin/groff", ["-man", "-Tutf8", "-ww", packageDirectory + "/docs/\(program).1"], environment: ["PATH": "/usr/bin:/bin"])
        #expect(r.status == 0 && r.stderr.isEmpty && r.out.contains(program), "\(r.stderr)")
    }

    @Test func theCompletionCompletesCommandsAndPluginIds() throws {
        let box = Sandbox()
        func complete(_ words: [String]) throws -> [String] {
            let script = """
                source "\(packageDirectory)/completions/keybay-methods.bash"
                COMP_WORDS=(\(words.map { "'\($0)'" }.joined(separator: " ")))
                COMP_CWORD=\(words.count - 1)
                COMP_LINE="${COMP_WORDS[*]}"; COMP_POINT=${#COMP_LINE}
                _keybay_methods
                printf '%s\\n' "${COMPREPLY[@]}"
                """
            var env = box.environment
            env["PATH"] = buildDirectory + ":/usr/bin:/bin"
            return try run("/bin/bash", ["-c", script], environment: env).out.split(separator: "\n").map(String.init)
        }
        #expect(try Set(complete(["keybay-methods", ""])).isSuperset(of: ["status", "get", "set", "enroll", "remove", "plugins", "reset"]))
        #expect(try complete(["keybay-methods", "re"]).sorted() == ["remove", "reset"])
        #expect(try complete(["keybay-methods", "un"]) == ["unlock"])
        #expect(try complete(["keybay-methods", "unlock", "--f"]) == ["--for"])
        #expect(try Set(complete(["keybay-methods", "unlock", "--for", ""])).isSuperset(of: ["15m", "0"]))
        #expect(try complete(["keybay-methods", "lock", "--a"]).sorted() == ["--all", "--app"])
        #expect(try Set(complete(["keybay-methods", "enroll", ""])).isSuperset(of: ["passphrase"]))
        // Record keys: every argument of get (KEY...), the first of rm only.
        for key in ["alpha", "beta"] { #expect(try box.cli("set", key, "v").status == 0) }
        #expect(try complete(["keybay-methods", "get", "alpha", ""]).sorted() == ["alpha", "beta"])
        #expect(try complete(["keybay-methods", "rm", "alpha", ""]).isEmpty)
    }
}
