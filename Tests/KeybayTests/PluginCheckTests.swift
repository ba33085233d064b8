import Foundation
import Testing
@testable import Keybay

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

    @Test func aBrokenPluginFails() throws {
        let box = Sandbox()
        // Loads, but enroll always answers UNSUPPORTED.
        let path = try PluginLoaderTests.build(PluginLoaderTests.source(id: "broken"), fileID: "broken", in: box.root + "/broken")
        let r = try run(cliPath, ["plugin-check", path], environment: box.environment)
        #expect(r.status == 1 && r.out.contains("FAIL  enroll succeeds"), "\(r.out)")
        let refused = try run(cliPath, ["plugin-check", box.root + "/broken/not-a-plugin.so"], environment: box.environment)
        #expect(refused.status == 1 && refused.out.contains("FAIL"))
    }
}
