// SPDX-License-Identifier: Apache-2.0
import Foundation
import Testing

/// What a host developer meets in the first hour: the version, and a missing plugin that says
/// where plugins are looked for.
@Suite struct FirstHourTests {
    @Test func versionPrintsTheReleaseAndThePluginABI() throws {
        let box = Sandbox()
        let text = try box.cli("--version")
        #expect(text.status == 0)
        #expect(text.out.range(of: #"^keybay-methods [0-9]+\.[0-9]+\.[0-9]+ \(plugin ABI 1\)\n$"#, options: .regularExpression) != nil, "\(text.out)")
        let json = try box.cli("status", "--version", "--json")
        let object = try JSONSerialization.jsonObject(with: Data(json.stdout)) as? [String: Any]
        #expect(json.status == 0 && object?["pluginABI"] as? Int == 1 && object?["version"] is String, "\(json.out)")
        #expect(!exists(box.storeDirectory), "--version ran the command")
    }

    @Test func aMissingPluginNamesTheVariableThatAddsDirectories() throws {
        let box = Sandbox()
        let r = try box.cli("enroll", "no-such-plugin", "--no-input")
        #expect(r.status == 1 && r.stderr.hasSuffix("[plugin-not-found]\n") && r.stderr.contains("KEYBAY_PLUGIN_PATH"), "\(r.stderr)")
    }
}
