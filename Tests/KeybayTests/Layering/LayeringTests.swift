// SPDX-License-Identifier: Apache-2.0
import Foundation
import Testing

/// The core's layers, read from its sources: each folder of `Sources/Keybay` is a layer, and a
/// file may name only what its own layer and the layers below it declare. Crypto and Format are
/// below Keys, Keys below Engine, Engine below API; Plugins, Root and Methods below API (and
/// Engine); no type the API declares is named anywhere else. Records (the record sources a
/// session reads through: the store itself, and the protocol they share) is above Engine; Agent
/// (the agent's protocol, its client and its record source) above Records; Export (the age
/// format) is below API; Daemon (the agent itself, which serves held stores through their local
/// record sources) is below API, which runs it (`KeybayAgent`), and uses none of it. No file sits at the top of `Sources/Keybay`.
///
/// Every public declaration is in `API/` (Testing's fuzz entry points aside, SPI: see
/// `publicOutsideAPIAllowed`). The public types that lower layers name (`KeybayError`,
/// `SecureBytes`, `KeybayMethod`, `KeybayInteraction` and its requests, `KeybayPluginSearch`,
/// `KeybayPluginIsolation`) are the vocabulary, `API/Vocabulary/`: a layer of its own below all,
/// which names nothing else of the core; lower layers extend those types internally (the plugin
/// search's order is Plugins'), and the rest of `API/` is the top. Methods reach the API only
/// through `Methods/MethodResolver.swift`.
@Suite struct LayeringTests {
    /// Which layers each layer may use (its own always).
    static let allowed: [String: Set<String>] = [
        // API/Vocabulary: the public types every layer names.
        "Vocabulary": [],
        "Crypto": ["Vocabulary"],
        "Format": ["Vocabulary", "Crypto"],
        "Storage": ["Vocabulary", "Crypto", "Format"],
        "Plugins": ["Vocabulary", "Crypto", "Format", "Storage"],
        "Root": ["Vocabulary", "Crypto", "Format", "Storage", "Plugins"],
        // The method interface, its resolver and the per-method seal of an envelope.
        "Methods": ["Vocabulary", "Crypto", "Format", "Storage", "Plugins"],
        "Records": ["Vocabulary", "Crypto", "Format", "Storage", "Plugins", "Root", "Methods", "Keys", "Engine"],
        "Agent": ["Vocabulary", "Crypto", "Format", "Storage", "Records"],
        // The age format of exports: bytes and crypto, nothing of stores.
        "Export": ["Vocabulary", "Crypto", "Format"],
        "Keys": ["Vocabulary", "Crypto", "Format", "Root", "Methods"],
        "Engine": ["Vocabulary", "Crypto", "Format", "Storage", "Plugins", "Root", "Methods", "Keys"],
        // The API's KeybayAgent runs the daemon.
        "API": ["Vocabulary", "Crypto", "Format", "Storage", "Plugins", "Root", "Methods", "Keys", "Engine", "Records", "Agent", "Export", "Daemon"],
        "Daemon": ["Vocabulary", "Crypto", "Format", "Storage", "Plugins", "Root", "Methods", "Keys", "Engine", "Records", "Agent"],
        // The fuzzers' entry points reach into the format and the methods; nothing uses them.
        "Testing": ["Vocabulary", "Crypto", "Format", "Storage", "Plugins", "Root", "Methods", "Keys", "Engine", "API"],
    ]

    static let sourceDirectory = packageDirectory + "/Sources/Keybay"

    @Test func everyLayerUsesOnlyTheLayersBelowIt() throws {
        let sources = try Self.readSources()
        #expect(Set(sources.map(\.layer)).isSubset(of: Set(Self.allowed.keys)), "a folder of Sources/Keybay that is no layer: \(Set(sources.map(\.layer)))")
        let violations = SourceLayering(sources).violations(allowed: Self.allowed)
        #expect(violations.isEmpty, "\(violations.joined(separator: "\n"))")
    }

    /// The check itself can fail: a Format file naming an API type, or a Plugins file naming the
    /// engine, is reported; a name in a comment, a string or after a dot is not a use.
    @Test func aReverseUseIsReportedAndCommentsStringsAndMembersAreNot() {
        let sources = [
            SourceFile(path: "API/Status.swift", layer: "API", text: "public struct KeybayStatus {}\nfunc describe() {}\n"),
            SourceFile(path: "Engine/Engine.swift", layer: "Engine", text: "struct StoreEngine { let s: Bootstrap }\n"),
            SourceFile(path: "Format/Bootstrap.swift", layer: "Format", text: """
                struct Bootstrap {
                    // KeybayStatus in a comment
                    /* StoreEngine in a block comment */
                    let text = "KeybayStatus in a string, \\(count) with an interpolation"
                    func f(x: Thing) { x.describe() }
                    var status: KeybayStatus?
                }
                """),
            SourceFile(path: "Plugins/Loader.swift", layer: "Plugins", text: "enum Loader { static let e = \"\\(StoreEngine.self)\" }\n"),
        ]
        let violations = SourceLayering(sources).violations(allowed: Self.allowed)
        #expect(violations == ["Format/Bootstrap.swift uses KeybayStatus (API)", "Plugins/Loader.swift uses StoreEngine (Engine)"])
    }

    @Test func noFileOfTheCoreIsOver300Lines() throws {
        let long = try Self.readSources().compactMap { file -> String? in
            let lines = file.text.split(separator: "\n", omittingEmptySubsequences: false).count - (file.text.hasSuffix("\n") ? 1 : 0)
            return lines > 300 ? "\(file.path): \(lines) lines" : nil
        }
        #expect(long.isEmpty, "\(long)")
    }

    /// No plugin id drives the core's logic: the first-party ids appear only as the
    /// configuration's defaults (and the plugin search's, of the in-process methods) and as the
    /// format's name for an untagged provider state.
    @Test func noPluginIDAppearsInTheCoresLogic() throws {
        let ids = try FileManager.default.contentsOfDirectory(atPath: packageDirectory + "/Plugins").filter { !$0.contains(".") && $0 != "Support" }
        #expect(ids.contains("file-root") && ids.contains("secret-service"), "\(ids)")
        let permitted = ["API/KeybayConfiguration.swift", "API/Vocabulary/KeybayPluginSearch.swift", "Format/RootTag.swift"]
        let found = try Self.readSources().filter { !permitted.contains($0.path) }.flatMap { file in
            ids.filter { SourceLayering.stringLiterals(in: file.text).contains($0) }.map { "\(file.path): \"\($0)\"" }
        }
        #expect(found.isEmpty, "\(found)")
    }

    /// The words of user interface that the core must not hold (KeybayPrompt holds them): the
    /// pinentry protocol, terminal echo control, and the types that moved there.
    static let userInterfaceWords = ["assuan", "pinentry", "termios", "tcsetattr", "tcgetattr", "/dev/tty", "echoguard",
                                     "keybayterminalinteraction", "keybaydefaultinteraction", "keybayasker"]

    /// Each file that mentions one of `userInterfaceWords` (case aside, comments and strings included).
    static func userInterface(in files: [SourceFile]) -> [String] {
        files.flatMap { file in
            let text = file.text.lowercased()
            return userInterfaceWords.filter { text.contains($0) }.map { "\(file.path): \($0)" }
        }
    }

    /// No file of `Sources/Keybay` speaks to a pinentry, a terminal or its echo: a GUI host links
    /// none of it. The check finds such a file when there is one.
    @Test func theCoreHoldsNoUserInterface() throws {
        let found = Self.userInterface(in: try Self.readSources())
        #expect(found.isEmpty, "\(found)")
        let planted = [SourceFile(path: "API/Prompt.swift", layer: "API", text: "// asks through KeybayPinentry\nlet t = termios()\n")]
        #expect(Self.userInterface(in: planted) == ["API/Prompt.swift: pinentry", "API/Prompt.swift: termios"])
    }

    /// A host that imports `Keybay` alone builds without KeybayPrompt: it compiles naming the
    /// store and cannot name the default interaction, and Keybay's objects refer to no symbol of
    /// KeybayPrompt (`12KeybayPrompt` in a mangled name) and call no termios function, so linking
    /// them pulls none of it in. KeybayPrompt's own objects do (the check can see them).
    @Test func aHostImportingKeybayAloneNeedsNoKeybayPrompt() throws {
        let client = SwiftClient(box: Sandbox())
        let store = try client.naming("KeybayStore", importing: "Keybay")
        #expect(store.status == 0, "\(store.stderr)")
        for name in ["KeybayDefaultInteraction", "KeybayTerminalInteraction", "KeybayPinentry", "KeybayAsker"] {
            let r = try client.naming(name, importing: "Keybay")
            #expect(r.status == 1 && r.stderr.contains("cannot find '\(name)' in scope"), "\(name): \(r.status) \(r.stderr)")
            let prompt = try client.naming(name, importing: "KeybayPrompt")
            #expect(prompt.status == 0, "KeybayPrompt.\(name): \(prompt.stderr)")
        }
        func symbols(_ target: String) throws -> String {
            // The objects of the target's current sources (a file moved away may leave its old one).
            let sources = try #require(FileManager.default.subpaths(atPath: packageDirectory + "/Sources/" + target))
            let objects = sources.filter { $0.hasSuffix(".swift") }.map { buildDirectory + "/\(target).build/" + ($0 as NSString).lastPathComponent + ".o" }
            #expect(objects.count >= 5, "\(target): \(objects)")
            let r = try run("/usr/bin/nm", ["-u"] + objects, environment: [:])
            #expect(r.status == 0, "\(r.stderr)")
            return r.out
        }
        let core = try symbols("Keybay"), prompt = try symbols("KeybayPrompt")
        let referred = ["12KeybayPrompt", "tcsetattr", "tcgetattr"].filter { core.contains($0) }
        #expect(referred.isEmpty, "Keybay's objects refer to \(referred)")
        #expect(prompt.contains("tcsetattr") && prompt.contains("6Keybay"))
    }

    /// Why a file outside `API/` may declare something public.
    static let publicOutsideAPIAllowed: [String: String] = [
        // The libFuzzer targets under Fuzz/ are programs of their own that link the module and can
        // call only public symbols; `@_spi(Fuzzing)` keeps them out of what a host imports.
        "Testing/FuzzEntryPoints.swift": "fuzz entry points, SPI",
    ]

    /// Each `public` (or `open`) declaration outside `API/`, as `path:line`: at file scope, in an
    /// extension or nested, wherever the word stands in code (comments and strings left out).
    static func publicOutsideAPI(in files: [SourceFile]) -> [String] {
        let modifier = try! NSRegularExpression(pattern: #"(?<![\w.`])(public|open(?=\s+(class|func|var|let|subscript|init|static|final|override)\b))\b"#)
        return files.filter { !$0.path.hasPrefix("API/") && publicOutsideAPIAllowed[$0.path] == nil }.flatMap { file in
            SourceLayering.code(of: file.text).split(separator: "\n", omittingEmptySubsequences: false).enumerated().compactMap { number, line in
                let text = String(line)
                return modifier.firstMatch(in: text, range: NSRange(text.startIndex..., in: text)) == nil ? nil : "\(file.path):\(number + 1)"
            }
        }
    }

    /// Every public declaration of the core is in `API/`, members of extensions and nested types
    /// included; the check reports a planted one and ignores the word in comments and strings.
    @Test func everyPublicDeclarationIsInAPI() throws {
        let sources = try Self.readSources()
        let found = Self.publicOutsideAPI(in: sources)
        #expect(found.isEmpty, "public outside API/: \(found)")
        for path in Self.publicOutsideAPIAllowed.keys {
            let file = try #require(sources.first { $0.path == path }, "\(path) is named as allowed but is gone")
            let unexcused = SourceFile(path: "Elsewhere/" + path, layer: file.layer, text: file.text)
            #expect(!Self.publicOutsideAPI(in: [unexcused]).isEmpty, "\(path) declares nothing public: drop its allowance")
        }
        let planted = [
            SourceFile(path: "Plugins/Loader.swift", layer: "Plugins", text: """
                // a public comment
                struct Loader {
                    let text = "public in a string"
                    struct Nested {
                        public var hidden: Int
                    }
                }
                extension Loader { public func shown() {} }
                open class Base {}
                func open(_ x: Int) {}
                """),
            SourceFile(path: "API/Status.swift", layer: "API", text: "public struct KeybayStatus {}\n"),
            SourceFile(path: "Testing/FuzzEntryPoints.swift", layer: "Testing", text: "public enum KeybayFuzzing {}\n"),
        ]
        #expect(Self.publicOutsideAPI(in: planted) == ["Plugins/Loader.swift:5", "Plugins/Loader.swift:8", "Plugins/Loader.swift:9"])
    }

    /// The files outside `Methods/MethodResolver.swift` (and the loader's own `Plugins/`) that
    /// load a plugin as a method (`KEYBAY_KIND_METHOD`) or make a plugin-backed method.
    static func methodLoadsOutsideTheResolver(in files: [SourceFile]) -> [String] {
        files.filter { !$0.path.hasPrefix("Plugins/") && $0.path != "Methods/MethodResolver.swift" }.flatMap { file in
            let code = SourceLayering.code(of: file.text)
            // The file that declares `PluginMethod` does not use it.
            let names = Set(SourceLayering.usedNames(in: code)).subtracting(SourceLayering.topLevelDeclarations(in: code))
            return ["KEYBAY_KIND_METHOD", "PluginMethod", "loadMethod"].filter(names.contains).map { "\(file.path): \($0)" }
        }
    }

    /// The API reaches methods only through `MethodResolver` (built from the configuration's
    /// plugin search): no other file loads a plugin as a method, and the API names no loaded
    /// plugin except where it lists or checks plugin files. A planted load is reported.
    @Test func methodsAreReachedOnlyThroughTheResolver() throws {
        let sources = try Self.readSources()
        let loads = Self.methodLoadsOutsideTheResolver(in: sources)
        #expect(loads.isEmpty, "\(loads)")
        let listingsAndChecks: Set<String> = ["API/KeybayPlugins.swift", "API/PluginUnderCheck.swift"]
        let named = sources.filter { $0.layer == "API" && !listingsAndChecks.contains($0.path) }
            .filter { SourceLayering.usedNames(in: SourceLayering.code(of: $0.text)).contains("LoadedPlugin") }.map(\.path)
        #expect(named.isEmpty, "API files naming LoadedPlugin: \(named)")
        let planted = [
            SourceFile(path: "API/KeybayStore.swift", layer: "API", text: "// KEYBAY_KIND_METHOD\nlet p = try PluginLoader.load(id: id, kind: KEYBAY_KIND_METHOD, search: s)\n"),
            SourceFile(path: "Methods/MethodResolver.swift", layer: "Methods", text: "let m = PluginMethod(plugin: try PluginLoader.load(id: id, kind: KEYBAY_KIND_METHOD, search: s))\n"),
        ]
        #expect(Self.methodLoadsOutsideTheResolver(in: planted) == ["API/KeybayStore.swift: KEYBAY_KIND_METHOD"])
    }

    static func readSources() throws -> [SourceFile] {
        let manager = FileManager.default
        guard let walker = manager.enumerator(atPath: sourceDirectory) else { throw CocoaError(.fileReadNoSuchFile) }
        var files: [SourceFile] = []
        while let relative = walker.nextObject() as? String {
            guard relative.hasSuffix(".swift") else { continue }
            let parts = relative.split(separator: "/")
            // A file at the top is in no layer (the first test reports it).
            let layer = parts.count == 1 ? "(top)" : parts[0] == "API" && parts[1] == "Vocabulary" && parts.count > 2 ? "Vocabulary" : String(parts[0])
            files.append(SourceFile(path: relative, layer: layer, text: try String(contentsOfFile: sourceDirectory + "/" + relative, encoding: .utf8)))
        }
        #expect(files.count > 50, "found \(files.count) sources in \(sourceDirectory)")
        return files.sorted { $0.path < $1.path }
    }
}
