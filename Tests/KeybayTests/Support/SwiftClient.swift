// SPDX-License-Identifier: Apache-2.0
import Foundation
import Glibc
import Testing

/// A Swift client of this package's modules, as a host outside the package writes one: a source
/// file type-checked by `swiftc` against the modules of the build (not `@testable`, so only
/// their public interface), with the module maps of every C target and libsodium's.
struct SwiftClient {
    let box: Sandbox

    /// Type-checks `import <module>` and `let _ = <name>.self`: the compiler's exit status and
    /// output (status 1, "cannot find '<name>' in scope", when the module does not offer it).
    func naming(_ name: String, importing module: String) throws -> RunResult {
        let file = box.root + "/client-\(module)-\(name).swift"
        try "import \(module)\nlet _ = \(name).self\n".write(toFile: file, atomically: true, encoding: .utf8)
        return try typeChecking([file], asLibrary: false)
    }

    /// Type-checks `files` as one module outside the package (no `-package-name`, so Keybay's
    /// `package` declarations are as hidden as its internal ones): a library's, or with top-level
    /// code (a `main.swift`, a one-file client) when `asLibrary` is false.
    func typeChecking(_ files: [String], asLibrary: Bool) throws -> RunResult {
        let maps = try FileManager.default.contentsOfDirectory(atPath: buildDirectory).filter { $0.hasPrefix("C") && $0.hasSuffix(".build") }
            .map { buildDirectory + "/" + $0 + "/module.modulemap" }.filter { access($0, R_OK) == 0 }
            + [packageDirectory + "/Sources/CSodium/module.modulemap"]
        let swiftc = try #require((ProcessInfo.processInfo.environment["PATH"] ?? "").split(separator: ":")
            .map { String($0) + "/swiftc" }.first { access($0, X_OK) == 0 }, "swiftc is not on PATH")
        let library = asLibrary ? ["-parse-as-library"] : []
        return try run(swiftc, ["-typecheck"] + library + ["-I", buildDirectory + "/Modules"] + maps.flatMap { ["-Xcc", "-fmodule-map-file=" + $0] } + files,
                       environment: ProcessInfo.processInfo.environment)
    }
}
