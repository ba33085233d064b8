// SPDX-License-Identifier: Apache-2.0
import Foundation
import Testing

/// scripts/docs.sh: every public symbol of Keybay and KeybayPluginKit has a doc comment, and both
/// documentation archives build with the toolchain's docc. Only with `KEYBAY_DOCS=1`: the script
/// compiles the two library modules again in a scratch directory of its own (.build/docs-build),
/// about a minute from scratch and half that warm, too long for the default run.
@Suite struct DocsTests {
    @Test(.enabled(if: ProcessInfo.processInfo.environment["KEYBAY_DOCS"] == "1", "set KEYBAY_DOCS=1 to build the documentation"))
    func everyPublicSymbolIsDocumentedAndTheArchivesBuild() throws {
        let r = try run("/bin/bash", [packageDirectory + "/scripts/docs.sh"], environment: ProcessInfo.processInfo.environment)
        #expect(r.status == 0, "\(r.out)\(r.stderr)")
        #expect(r.out.contains(", 0 undocumented;") && r.out.contains("outside the symbol graph, 0 undocumented"), "\(r.out)")
        #expect(r.out.contains("Keybay.doccarchive") && r.out.contains("KeybayPluginKit.doccarchive"), "\(r.out)")
    }
}
