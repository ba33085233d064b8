import CKeybayPlugin
import Glibc
import Synchronization

/// `keybay-methods plugin-check PATH.so`: a conformance run for plugin authors. It loads the
/// plugin through the real loader (every refusal applies), then drives each operation with a
/// scripted host and checks the documented behaviour. Each check passes, fails (with a detail
/// saying what was tried and what came back), is skipped (the runner has no way to try it, and
/// says why) or is not run (an earlier step it needs failed).
public enum KeybayPluginCheck {
    public struct Result: Sendable {
        public enum Outcome: String, Sendable { case pass, fail, skip, notRun = "not-run" }
        public let name: String
        public let outcome: Outcome
        public let detail: String
        /// True only for a check that ran and passed.
        public var passed: Bool { outcome == .pass }
    }

    /// Runs every check that applies to the plugin at `path`; `options` are passed to `enroll`.
    /// `wrongOptions`, laid over `options`, enroll a second, different credential: the way to
    /// check a method that asks the host for no secret (a key file, a device without a PIN).
    /// `changeCredential`, a shell command run (`/bin/sh -c`) after every other check, changes
    /// the enrolled credential (`cp b.key a.key`): the enrolled parameters must then unwrap to
    /// another M or WRONG_SECRET, which proves the dependency even when the parameters carry a salt.
    public static func run(path: String, options: [(String, String)] = [], wrongOptions: [(String, String)] = [],
                           changeCredential: String? = nil) -> [Result] {
        var results = Results()
        var st = stat()
        guard lstat(path, &st) == 0 else {
            results.fail("\(path) exists", "lstat: \(String(cString: strerror(errno)))")
            return results.list
        }
        let file = path.split(separator: "/").last.map(String.init) ?? path
        guard let id = KeybayPluginSearch.pluginID(inFileName: file) else {
            results.fail("file name is libkeybay-<id>.so", "the file is named '\(file)'")
            return results.list
        }
        let validID = KeybayPluginSearch.isValidPluginID(id)
        results.check("id '\(id)' matches [a-z0-9][a-z0-9._-]{0,63}", validID, validID ? "" : "use lowercase letters, digits, '.', '_' and '-', at most 64")
        let directory = path.contains("/") ? String(path[..<path.lastIndex(of: "/")!]) : "."
        let absolute = directory.hasPrefix("/") ? directory : (currentDirectory() + "/" + directory)
        let plugin: LoadedPlugin
        do {
            plugin = try PluginLoader.load(id: id, kind: nil, search: KeybayPluginSearch(directories: [absolute], environmentPath: nil))
            results.pass("loads: file and directory checks, entry symbol, ABI version \(KEYBAY_PLUGIN_ABI_VERSION), descriptor size, id, kind")
        } catch {
            results.fail("loads: file and directory checks, entry symbol, ABI version, descriptor size, id, kind", "\(error)")
            return results.list
        }
        let named = "name '\(plugin.name)', version '\(plugin.version)'"
        results.check("name and version are set", !plugin.name.isEmpty && !plugin.version.isEmpty, named, shown: named)
        let badOptions = plugin.options.enumerated().filter { $0.element.name.isEmpty || $0.element.help.isEmpty }
        results.check("options have names and help", badOptions.isEmpty,
                      badOptions.map { "option \($0.offset + 1) ('\($0.element.name)') has \($0.element.name.isEmpty ? "no name" : "no help")" }.joined(separator: "; "))
        if plugin.isRoot {
            rootChecks(plugin, &results)
            if changeCredential != nil { results.add("--change-credential", .skip, "a root plugin has no credential to change; the command was not run") }
        } else {
            MethodRun(plugin: plugin, options: options, wrongOptions: wrongOptions, changeCredential: changeCredential).checks(&results)
        }
        return results.list
    }

    private static func currentDirectory() -> String {
        var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        return getcwd(&buffer, buffer.count).map { String(cString: $0) } ?? "."
    }

    /// The results so far.
    struct Results {
        var list: [Result] = []
        mutating func add(_ name: String, _ outcome: Result.Outcome, _ detail: String = "") {
            list.append(Result(name: name, outcome: outcome, detail: detail))
        }
        mutating func pass(_ name: String, _ detail: String = "") { add(name, .pass, detail) }
        mutating func fail(_ name: String, _ detail: String) { add(name, .fail, detail) }
        /// Passes (showing `shown`, what came back, if anything), or fails with `failure`: what was
        /// tried and what came back.
        mutating func check(_ name: String, _ passed: Bool, _ failure: String, shown: String = "") {
            add(name, passed ? .pass : .fail, passed ? shown : failure)
        }
    }

    /// Answers every secret request with the same bytes (a recovery key with `recoveryKey`, the
    /// text an enrollment showed, when given) and records what was asked and shown, and every
    /// set_error line the plugin gave.
    final class ScriptedHost: KeybayInteraction, ErrorLineObserver, @unchecked Sendable {
        let secret: [UInt8]
        let recoveryKey: [UInt8]?
        let refuse: Bool
        let asks = Mutex(0)
        /// The text of the secret the plugin showed (a recovery key), if it showed one.
        let shown = Mutex<[UInt8]?>(nil)
        let errorLines = Mutex<[String]>([])
        init(secret: String, recoveryKey: [UInt8]? = nil, refuse: Bool = false) {
            self.secret = Array(secret.utf8)
            self.recoveryKey = recoveryKey
            self.refuse = refuse
        }
        func askSecret(_ request: KeybaySecretRequest, into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
            asks.withLock { $0 += 1 }
            if refuse { throw KeybayError(.interactionRequired, "plugin-check: no interaction") }
            let answer = request.kind == .recoveryKey ? recoveryKey ?? secret : secret
            guard answer.count <= buffer.count else { throw KeybayError(.invalidArgument, "plugin-check: the plugin's buffer is too small") }
            buffer.copyBytes(from: answer)
            return answer.count
        }
        func showSecret(_ secret: KeybayShownSecret) throws {
            if refuse { throw KeybayError(.interactionRequired, "plugin-check: no interaction") }
            let text = secret.text.withUnsafeBytes { Array($0) }
            shown.withLock { $0 = text }
        }
        func confirm(_ question: String) throws -> Bool {
            if refuse { throw KeybayError(.interactionRequired, "plugin-check: no interaction") }
            return true
        }
        func pluginSetError(_ line: String) { errorLines.withLock { $0.append(line) } }
        var asked: Int { asks.withLock { $0 } }
        var gaveErrorLine: Bool { errorLines.withLock { !$0.isEmpty } }
    }

    /// What a call came back with, for a FAIL detail: "OK" or the error with its code.
    static func outcome(_ body: () throws -> Void) -> (code: KeybayError.Code?, text: String) {
        do { try body(); return (nil, "OK") } catch let e as KeybayError { return (e.code, e.description) } catch { return (.pluginFailed, "\(error)") }
    }

    private static func rootChecks(_ plugin: LoadedPlugin, _ results: inout Results) {
        var template = Array(("/tmp/keybay-plugin-check-" + String(repeating: "X", count: 6)).utf8CString) // mkdtemp template
        guard let made = template.withUnsafeMutableBufferPointer({ mkdtemp($0.baseAddress!) }) else {
            results.fail("temporary state directory", "mkdtemp under /tmp: \(String(cString: strerror(errno)))")
            return
        }
        let home = String(cString: made)
        defer { removeTree(home) }
        let domain = [UInt8](repeating: 0x42, count: 32)
        let root = PluginRoot(plugin: plugin, applicationID: "plugin-check", stateHome: home, domain: domain)
        func expect(_ name: String, _ want: KeybayError.Code?, _ body: () throws -> Void) {
            let got = outcome(body)
            results.check(name, got.code == want, got.code == want ? "" : "returned \(got.text); expected \(want.map { "[\($0.rawValue)]" } ?? "OK")")
        }
        do {
            results.check("exists is false before create", try !root.exists(), "root_exists said 1 in an empty state directory \(home)")
            let state = try root.create(options: [])
            results.check("create returns a provider state of 1 to 64 bytes", !state.isEmpty && state.count <= 64, "returned \(state.count) bytes")
            results.check("exists is true after create", try root.exists(), "root_exists said 0 after root_create succeeded")
            expect("create never overwrites (ROOT_EXISTS)", .stateConflict) { _ = try root.create(options: []) }
            let secret = SecureBytes(copying: Array("a 57-byte package would go here, any length is fine....".utf8))
            let aad = Array("aad".utf8)
            let sealed = try root.seal(secret, aad: aad, providerState: state)
            results.check("open returns what seal sealed", try root.open(sealed[...], aad: aad, providerState: state).package.equals(secret),
                          "root_open of what root_seal returned gave other bytes")
            if root.keepsFloor {
                let initial = try root.open(sealed[...], aad: aad, providerState: state).floor
                results.check("a new root's rollback floor is 0", initial == 0, "the floor of a new root is \(initial)")
                try root.raiseFloor(to: 3, providerState: state)
                try root.raiseFloor(to: 2, providerState: state)
                let floor = try root.open(sealed[...], aad: aad, providerState: state).floor
                results.check("the rollback floor rises and never falls", floor == 3, "floor \(floor) after raising to 3, then to 2")
                var other = state
                other[0] ^= 1
                expect("raising the floor with another provider state gives ROOT_MISMATCH", .platformKeyInvalidated) {
                    try root.raiseFloor(to: 4, providerState: other)
                }
            }
            var tampered = sealed
            tampered[tampered.count / 2] ^= 1
            expect("tampered sealed data gives INTEGRITY", .integrity) { _ = try root.open(tampered[...], aad: aad, providerState: state) }
            expect("another AAD gives INTEGRITY", .integrity) { _ = try root.open(sealed[...], aad: [1], providerState: state) }
            var otherState = state
            otherState[otherState.count - 1] ^= 1 // the root's own part (a tagged state names the root first)
            expect("another provider state gives ROOT_MISMATCH before decrypting", .platformKeyInvalidated) {
                _ = try root.open(sealed[...], aad: aad, providerState: otherState)
            }
            try root.reset()
            results.check("reset removes the root", try !root.exists(), "root_exists said 1 after root_reset")
            expect("reset is idempotent", nil) { try root.reset() }
            expect("open without a root gives ROOT_MISSING", .platformKeyInvalidated) { _ = try root.open(sealed[...], aad: aad, providerState: state) }
            let location = root.location
            results.check("location names where the root lives", !location.isEmpty && !location.hasPrefix("(unknown"), "location: \(location)", shown: location)
            if plugin.descriptor.pointee.root_protection != nil {
                let note = root.protection
                results.check("protection note is one line", note.map { !$0.isEmpty && !$0.contains("\n") } ?? false,
                              note.map { "the note is \($0.isEmpty ? "empty" : "several lines")" } ?? "root_protection failed", shown: note ?? "")
            }
        } catch {
            results.fail("root operations succeed", "\(error)")
        }
    }

    /// rm -r of the temporary state home (links are removed, never followed).
    private static func removeTree(_ path: String) {
        var st = stat()
        guard lstat(path, &st) == 0 else { return }
        if st.st_mode & S_IFMT == S_IFDIR, let names = directoryEntries(path) {
            names.forEach { removeTree(path + "/" + $0) }
            rmdir(path)
        } else {
            unlink(path)
        }
    }
}
