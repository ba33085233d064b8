// SPDX-License-Identifier: Apache-2.0
import Foundation
import Testing

/// keybay_export and keybay_import_age from a C host (Tests/capi/export_check.c, built against
/// the installed prefix as CAPITests builds capi_check); Debian's `age -d` reads its export.
@Suite struct CExportTests {
    @Test func aCHostExportsToAgeAndImportsItBack() throws {
        let prefix = try CAPITests.installed.get()
        let program = try CAPITests.built(prefix, as: "export_check", from: "export_check.c")
        let box = Sandbox(app: "com.example.c-export")
        var environment = box.environment
        environment["KEYBAY_PLUGIN_PATH"] = nil
        let key = box.root + "/key.txt"
        try #require(try run("/usr/bin/age-keygen", ["-o", key], environment: environment).status == 0)
        let recipient = try run("/usr/bin/age-keygen", ["-y", key], environment: environment).out.trimmingCharacters(in: .whitespacesAndNewlines)
        let r = try run(program, [recipient, key, box.root + "/out.age"], environment: environment)
        #expect(r.status == 0, "\(r.out) \(r.stderr)")
        #expect(r.out.hasSuffix(" checks, 0 failures\n"), "\(r.out)")
        let shown = try run("/usr/bin/age", ["-d", "-i", key, box.root + "/out.age"], environment: environment)
        #expect(shown.out == "keybay-export/v1\nalice czNjcmV0\nbob \n")
    }
}
