// SPDX-License-Identifier: Apache-2.0
import Foundation
import Testing

/// The rules that hold the whole tree, beside the core's layers (LayeringTests): members that an
/// extension adds are called only from its layer or above; the CLI, the C API and KeybayPrompt
/// are clients of Keybay's public API; C includes go down; no Swift file of `Sources` is over 300
/// lines and no C file over 500. Each rule is also run on a planted break, to see it report one.
@Suite struct TreeLayeringTests {
    @Test func extensionMembersAreCalledOnlyFromTheirLayerOrAbove() throws {
        let violations = SourceLayering(try LayeringTests.readSources()).extensionMemberViolations(allowed: LayeringTests.allowed)
        #expect(violations.isEmpty, "\(violations.joined(separator: "\n"))")
        let planted = [
            SourceFile(path: "API/Engine+Host.swift", layer: "API", text: """
                extension StoreEngine {
                    public private(set) var hostName: String { "" }
                    func describeForHost() -> String { count.description }
                    struct Nested { func notAMemberOfTheExtension() {} }
                }
                extension StoreEngine { static let oneLine = 1 }
                """),
            SourceFile(path: "Engine/Engine.swift", layer: "Engine", text: """
                struct StoreEngine { func f(_ a: [Int]) { _ = describeForHost(); _ = self.describeForHost(); _ = a.count; _ = Nested().notAMemberOfTheExtension(); _ = Self.oneLine } }
                struct Other {
                    let hostName = ""
                    func g() { _ = self.hostName }
                }
                """),
            SourceFile(path: "API/Store.swift", layer: "API", text: "func h(e: StoreEngine) { _ = e.describeForHost() }\n"),
        ]
        #expect(SourceLayering(planted).extensionMemberViolations(allowed: LayeringTests.allowed)
                == ["Engine/Engine.swift uses .describeForHost (an extension in API)", "Engine/Engine.swift uses .oneLine (an extension in API)"])
    }

    /// The Swift clients in the package, type-checked as a host outside it would be: Keybay's
    /// `package` declarations hidden. KeybayConformance (plugin-check's table, linked by the
    /// CLI alone, no product) is not one: it reaches the plugin loader, which is no public API,
    /// through them; the CLI uses its public interface (`PluginCheck`, `CheckResult`).
    static let publicAPIClients = ["keybay-methods", "KeybayCAPI", "KeybayPrompt"]

    @Test(arguments: publicAPIClients) func aClientUsesOnlyKeybaysPublicAPI(_ target: String) throws {
        let directory = packageDirectory + "/Sources/" + target
        let files = try #require(FileManager.default.subpaths(atPath: directory)).filter { $0.hasSuffix(".swift") }.map { directory + "/" + $0 }
        #expect(files.count >= 3)
        let privileged = try files.filter { file in
            let code = SourceLayering.code(of: try String(contentsOfFile: file, encoding: .utf8))
            return code.contains("@testable") || code.contains("@_spi") || code.contains("@_private")
        }
        #expect(privileged.isEmpty, "\(privileged)")
        let r = try SwiftClient(box: Sandbox()).typeChecking(files, asLibrary: !files.contains { $0.hasSuffix("/main.swift") })
        #expect(r.status == 0, "\(r.stderr)")
    }

    /// The check sees a `package` declaration used (`ErrorLineObserver`, which KeybayConformance
    /// uses): a client naming one does not type-check, the same client naming the public API does.
    @Test func aClientUsingAPackageDeclarationIsRefused() throws {
        let box = Sandbox()
        let client = SwiftClient(box: box)
        let uses = box.root + "/uses.swift", clean = box.root + "/clean.swift"
        try "import Keybay\nfunc f(_ observer: any ErrorLineObserver) {}\n".write(toFile: uses, atomically: true, encoding: .utf8)
        try "import Keybay\nfunc f() -> Any { KeybayStore.self }\n".write(toFile: clean, atomically: true, encoding: .utf8)
        #expect(try client.typeChecking([uses], asLibrary: true).status == 1)
        #expect(try client.typeChecking([clean], asLibrary: true).status == 0)
    }

    /// Every C file of the product (Sources, Plugins, the helpers), path → text.
    static func cFiles() throws -> [String: String] {
        var files: [String: String] = [:]
        for top in ["Sources", "Plugins", "integrations"] {
            for relative in try #require(FileManager.default.subpaths(atPath: packageDirectory + "/" + top)) where relative.hasSuffix(".c") || relative.hasSuffix(".h") {
                files[top + "/" + relative] = try String(contentsOfFile: packageDirectory + "/\(top)/\(relative)", encoding: .utf8)
            }
        }
        return files
    }

    @Test func cIncludesGoOnlyDown() throws {
        let box = Sandbox()
        let includes = try CIncludes.ofPackage(scratch: box.root + "/scratch")
        #expect(includes.targets.contains { $0.name == "Keybay" } && includes.targets.count > 30)
        let files = try Self.cFiles()
        #expect(files.count > 60)
        let violations = includes.violations(files: files)
        #expect(violations.isEmpty, "\(violations.joined(separator: "\n"))")
    }

    /// A shared file including a plugin's header, a plugin including another's, and a dependency
    /// on a plugin are reported; a plugin including shared code and the ABI, and a system header, are not.
    @Test func anUpwardIncludeIsReported() {
        let includes = CIncludes(targets: [
            .init(name: "CKeybayPlugin", path: "Sources/CKeybayPlugin", dependencies: []),
            .init(name: "Shared", path: "Plugins/Support/shared", dependencies: ["CKeybayPlugin"]),
            .init(name: "A", path: "Plugins/a", dependencies: ["Shared"]),
            .init(name: "B", path: "Plugins/b", dependencies: ["CKeybayPlugin", "A"]),
            .init(name: "Core", path: "Sources/Core", dependencies: ["Shared"]),
        ])
        let files = [
            "Sources/CKeybayPlugin/include/keybay_plugin.h": "",
            "Plugins/Support/shared/include/shared.h": "#include \"keybay_plugin.h\"\n",
            "Plugins/Support/shared/shared.c": "#include \"shared.h\"\n#include \"a.h\"\n",
            "Plugins/a/a.h": "", "Plugins/a/a.c": "#include <stdio.h>\n#include \"shared.h\"\n  #  include <keybay_plugin.h>\n",
            "Plugins/b/b.c": "#include \"../a/a.h\"\n",
        ]
        #expect(includes.violations(files: files).sorted() == [
            "B depends on the plugin A",
            "Core (Sources) depends on Shared (Plugins)",
            "Plugins/Support/shared/shared.c includes a.h (A), which Shared does not depend on",
        ])
    }

    /// Each file over its cap: Swift in `Sources` 300 lines, C (`.c`, `.h`) 500.
    static func overCap(_ files: [String: String]) -> [String] {
        files.compactMap { path, text in
            let cap = path.hasSuffix(".swift") ? 300 : 500
            let lines = text.split(separator: "\n", omittingEmptySubsequences: false).count - (text.hasSuffix("\n") ? 1 : 0)
            return lines > cap ? "\(path): \(lines) lines (at most \(cap))" : nil
        }.sorted()
    }

    @Test func noSourceFileIsOverItsLineCap() throws {
        var files = try Self.cFiles()
        for relative in try #require(FileManager.default.subpaths(atPath: packageDirectory + "/Sources")) where relative.hasSuffix(".swift") {
            files["Sources/" + relative] = try String(contentsOfFile: packageDirectory + "/Sources/" + relative, encoding: .utf8)
        }
        #expect(files.keys.filter { $0.hasSuffix(".swift") }.count > 150)
        let over = Self.overCap(files)
        #expect(over.isEmpty, "\(over.joined(separator: "\n"))")
        let line = "x\n"
        #expect(Self.overCap(["a.swift": String(repeating: line, count: 300), "b.swift": String(repeating: line, count: 301),
                              "c.c": String(repeating: line, count: 500), "d.h": String(repeating: line, count: 501)])
                == ["b.swift: 301 lines (at most 300)", "d.h: 501 lines (at most 500)"])
    }
}
