// SPDX-License-Identifier: Apache-2.0
import Foundation
import Testing

/// A first-party plugin exports its entry point and nothing else: what it shares with others
/// (Plugins/Support) and its own files' functions are linked in hidden, so no two plugins (nor a
/// plugin and its host) can bind each other's symbols.
@Suite struct PluginExportsTests {
    @Test func onlyTheEntryPointIsExported() throws {
        let ids = try InstallTests.firstPartyPlugins()
        #expect(ids.count >= 9, "\(ids)")
        for id in ids { try Self.expectOnlyTheEntryPoint(pluginDirectory + "/libkeybay-\(id).so") }
    }

    static func expectOnlyTheEntryPoint(_ file: String) throws {
        let nm = try run("/usr/bin/nm", ["-D", "--defined-only", file], environment: ["PATH": "/usr/bin:/bin", "LC_ALL": "C"])
        try #require(nm.status == 0, "\(file): \(nm.stderr)")
        let linkerSymbols: Set<String> = ["_edata", "_end", "__bss_start"]
        let exported = nm.out.split(separator: "\n").compactMap { $0.split(separator: " ").last.map(String.init) }.filter { !linkerSymbols.contains($0) }
        #expect(exported == ["keybay_plugin_entry_v1"], "\(file) exports \(exported)")
    }
}
