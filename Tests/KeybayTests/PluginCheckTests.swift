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
}
