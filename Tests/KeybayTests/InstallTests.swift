import Foundation
import Glibc
import Testing
@testable import Keybay

/// `make install` into a temporary prefix, then the installed CLI finds its installed plugins;
/// the man page renders; the completion completes commands and plugin ids.
@Suite struct InstallTests {
    @Test func installedCLIUsesItsInstalledPlugins() throws {
        let box = Sandbox()
        let prefix = box.root + "/prefix"
        // BIN= installs the build the tests run from (plain `make install` builds in release mode).
        let make = try run("/usr/bin/make", ["-C", packageDirectory, "install", "BIN=" + buildDirectory, "PREFIX=" + prefix],
                           environment: ["PATH": "/usr/bin:/bin", "HOME": box.root])
        #expect(make.status == 0, "\(make.stderr)")
        for file in ["bin/keybay-methods", "lib/keybay/plugins/libkeybay-file-root.so", "lib/keybay/plugins/libkeybay-passphrase.so",
                     "include/keybay/keybay_plugin.h", "lib/pkgconfig/keybay-plugin.pc", "share/man/man1/keybay-methods.1",
                     "share/bash-completion/completions/keybay-methods"] {
            #expect(exists(prefix + "/" + file), "\(file) not installed")
        }
        for name in ["libkeybay-test-counting.so", "libkeybay-test-fido2.so", "libkeybaytest-counting.so", "libkeybaytest-fido2.so"] {
            #expect(!exists(prefix + "/lib/keybay/plugins/" + name), "a test plugin was installed: \(name)")
        }
        let installed = prefix + "/bin/keybay-methods"
        var env = box.environment
        env["KEYBAY_PLUGIN_PATH"] = nil // the installed plugins only, even in a sanitizer run
        let plugins = try run(installed, ["plugins", "--json"], environment: env)
        #expect(plugins.out.contains("\"path\":\"\(prefix)/lib/keybay/plugins/libkeybay-file-root.so\""), "\(plugins.out)")
        // Every first-party plugin (a directory under Plugins/ each) is installed and listed, and nothing else.
        let firstParty = try FileManager.default.contentsOfDirectory(atPath: packageDirectory + "/Plugins")
            .filter { var d: ObjCBool = false; return FileManager.default.fileExists(atPath: packageDirectory + "/Plugins/" + $0, isDirectory: &d) && d.boolValue }
        let listed = try #require(try JSONSerialization.jsonObject(with: Data(plugins.out.utf8)) as? [[String: Any]]).compactMap { $0["id"] as? String }
        #expect(firstParty.count >= 3 && Set(listed) == Set(firstParty) && listed.count == firstParty.count, "installed \(listed), Plugins/ has \(firstParty)")
        #expect(try run(installed, ["set", "k", "v"], environment: env).status == 0)
        #expect(try run(installed, ["get", "k"], environment: env).out == "v")
        let uninstall = try run("/usr/bin/make", ["-C", packageDirectory, "uninstall", "PREFIX=" + prefix], environment: ["PATH": "/usr/bin:/bin"])
        #expect(uninstall.status == 0 && !exists(installed) && !exists(prefix + "/lib/keybay/plugins/libkeybay-file-root.so"))
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

    @Test func theManPageRendersWithoutWarnings() throws {
        let r = try run("/usr/bin/groff", ["-man", "-Tutf8", "-ww", packageDirectory + "/docs/keybay-methods.1"], environment: ["PATH": "/usr/bin:/bin"])
        #expect(r.status == 0 && r.stderr.isEmpty && r.out.contains("keybay-methods"), "\(r.stderr)")
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
        #expect(try Set(complete(["keybay-methods", "enroll", ""])).isSuperset(of: ["passphrase"]))
    }
}
