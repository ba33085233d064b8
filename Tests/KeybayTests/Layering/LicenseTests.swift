// SPDX-License-Identifier: Apache-2.0
import Foundation
import Testing

/// The licence a packager reads: LICENSE is the Apache License 2.0, and every source file
/// (Swift, C, Python, shell, make, module maps) says so in an SPDX line within its first three
/// lines (after a shebang or the tools-version line).
@Suite struct LicenseTests {
    static let sourceExtensions: Set<String> = ["swift", "c", "h", "cpp", "py", "sh", "rs", "modulemap"]
    static let directories = ["Sources", "Plugins", "Tests", "Examples", "Fuzz", "bindings", "integrations", "scripts", "docs/examples", "completions", ".ci"]

    @Test func theLicenceIsApache2() throws {
        let text = try String(contentsOfFile: packageDirectory + "/LICENSE", encoding: .utf8)
        #expect(text.contains("Apache License") && text.contains("Version 2.0, January 2004"))
    }

    @Test func everySourceFileCarriesItsSPDXLine() throws {
        let files = Self.sourceFiles() + ["Package.swift", "Makefile"].map { packageDirectory + "/" + $0 }
        #expect(files.count > 200, "the walk found \(files.count) files")
        let missing = files.filter { !Self.hasSPDXLine($0) }.map { String($0.dropFirst(packageDirectory.count + 1)) }
        #expect(missing.isEmpty, "without an SPDX line: \(missing)")
    }

    /// The check can fail: a file whose SPDX line is on its fourth line, or missing, is reported.
    @Test func aFileWithoutTheLineIsReported() throws {
        let box = Sandbox()
        let late = box.root + "/late.c", good = box.root + "/good.sh"
        try "/* one */\n/* two */\n/* three */\n// SPDX-License-Identifier: Apache-2.0\n".write(toFile: late, atomically: true, encoding: .utf8)
        try "#!/bin/sh\n# SPDX-License-Identifier: Apache-2.0\n".write(toFile: good, atomically: true, encoding: .utf8)
        #expect(!Self.hasSPDXLine(late))
        #expect(Self.hasSPDXLine(good))
    }

    static func hasSPDXLine(_ path: String) -> Bool {
        guard let text = try? String(contentsOfFile: path, encoding: .utf8) else { return false }
        return text.split(separator: "\n", maxSplits: 3, omittingEmptySubsequences: false).prefix(3)
            .contains { $0.contains("SPDX-License-Identifier: Apache-2.0") }
    }

    static func sourceFiles() -> [String] {
        var found: [String] = []
        let fm = FileManager.default
        for top in directories {
            guard let walk = fm.enumerator(atPath: packageDirectory + "/" + top) else { continue }
            while let relative = walk.nextObject() as? String {
                let name = (relative as NSString).lastPathComponent
                if name.hasPrefix(".") || name == "__pycache__" || name == "build" || name.hasSuffix(".egg-info") { walk.skipDescendants(); continue }
                let path = packageDirectory + "/" + top + "/" + relative
                let isRun = top == ".ci" && name == "run"
                guard isRun || sourceExtensions.contains((name as NSString).pathExtension) || name == "Makefile" || top == "completions" else { continue }
                if (try? fm.destinationOfSymbolicLink(atPath: path)) != nil { continue }
                found.append(path)
            }
        }
        return found
    }
}
