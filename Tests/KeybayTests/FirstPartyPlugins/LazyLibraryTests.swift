// SPDX-License-Identifier: Apache-2.0
import Foundation
import Glibc
import Testing

/// The library a plugin opens on first use (Plugins/Support/common, keybay_lazy_library.h), met
/// incomplete: a file of its soname found first through LD_LIBRARY_PATH that lacks the functions
/// the plugin calls. The plugin is not available, with a reason naming the library and the
/// missing function; nothing crashes on a half-filled table. (fido2's case is Fido2Tests'.)
@Suite struct LazyLibraryTests {
    @Test(arguments: [("secret-service", "libsecret-1.so.0"), ("pkcs11", "libp11-kit.so.0")])
    func anIncompleteLibraryLeavesThePluginUnavailable(_ id: String, _ soname: String) throws {
        let box = Sandbox()
        let fake = box.root + "/fake-library"
        #expect(mkdir(fake, 0o755) == 0)
        let source = fake + "/fake.c"
        try "int keybay_fake_library_has_nothing_else;\n".write(toFile: source, atomically: true, encoding: .utf8)
        let cc = try run("/usr/bin/cc", ["-shared", "-fPIC", "-o", fake + "/" + soname, source], environment: ["PATH": "/usr/bin:/bin"])
        try #require(cc.status == 0, "\(cc.stderr)")
        var environment = box.environment
        environment["LD_LIBRARY_PATH"] = fake
        let plugin = try #require(try PluginAvailabilityTests.listed(environment)[id], "\(id) is not listed")
        #expect(!plugin.available, "\(plugin)")
        #expect(plugin.reason.contains("cannot load \(soname)") && plugin.reason.contains("undefined symbol"), "\(plugin.reason)")
    }
}
