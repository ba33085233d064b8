import CKeybayPlugin
import Glibc
import Synchronization

/// `keybay-methods plugin-check PATH.so`: a conformance run for plugin authors. It loads the
/// plugin through the real loader (every refusal applies), then drives each operation with a
/// scripted host and checks the documented behaviour. Each check reports PASS or FAIL.
public enum KeybayPluginCheck {
    public struct Result: Sendable {
        public let name: String
        public let passed: Bool
        public let detail: String
    }

    /// Runs every check that applies to the plugin at `path`; `options` are passed to `enroll`.
    public static func run(path: String, options: [(String, String)] = []) -> [Result] {
        var results: [Result] = []
        func check(_ name: String, _ passed: Bool, _ detail: String = "") { results.append(Result(name: name, passed: passed, detail: detail)) }

        var st = stat()
        guard lstat(path, &st) == 0 else {
            check("\(path) exists", false, String(cString: strerror(errno)))
            return results
        }
        let file = path.split(separator: "/").last.map(String.init) ?? path
        guard let id = KeybayPluginSearch.pluginID(inFileName: file) else {
            check("file name is libkeybay-<id>.so", false, file)
            return results
        }
        check("id '\(id)' matches [a-z0-9][a-z0-9._-]{0,63}", KeybayPluginSearch.isValidPluginID(id))
        let directory = path.contains("/") ? String(path[..<path.lastIndex(of: "/")!]) : "."
        let absolute = directory.hasPrefix("/") ? directory : (currentDirectory() + "/" + directory)
        let plugin: LoadedPlugin
        do {
            plugin = try PluginLoader.load(id: id, kind: nil, search: KeybayPluginSearch(directories: [absolute], environmentPath: nil))
            check("loads: file and directory checks, entry symbol, ABI version \(KEYBAY_PLUGIN_ABI_VERSION), descriptor size, id, kind", true)
        } catch {
            check("loads: file and directory checks, entry symbol, ABI version, descriptor size, id, kind", false, "\(error)")
            return results
        }
        check("name and version are set", !plugin.name.isEmpty && !plugin.version.isEmpty, "\(plugin.name) \(plugin.version)")
        check("options have names and help", plugin.options.allSatisfy { !$0.name.isEmpty && !$0.help.isEmpty })
        if plugin.isRoot {
            results += rootChecks(plugin)
        } else {
            results += methodChecks(plugin, options: options)
        }
        return results
    }

    private static func currentDirectory() -> String {
        var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        return getcwd(&buffer, buffer.count).map { String(cString: $0) } ?? "."
    }

    /// Answers every secret request with the same bytes (a recovery key with `recoveryKey`, the
    /// text an enrollment showed, when given) and records what was asked and shown.
    final class ScriptedHost: KeybayInteraction, @unchecked Sendable {
        let secret: [UInt8]
        let recoveryKey: [UInt8]?
        let refuse: Bool
        let asks = Mutex(0)
        /// The text of the secret the plugin showed (a recovery key), if it showed one.
        let shown = Mutex<[UInt8]?>(nil)
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
    }

    private static func code(_ body: () throws -> Void) -> KeybayError.Code? {
        do { try body(); return nil } catch let e as KeybayError { return e.code } catch { return .pluginFailed }
    }

    private static func methodChecks(_ plugin: LoadedPlugin, options: [(String, String)]) -> [Result] {
        var results: [Result] = []
        func check(_ name: String, _ passed: Bool, _ detail: String = "") { results.append(Result(name: name, passed: passed, detail: detail)) }

        let probeHost = ScriptedHost(secret: "x", refuse: true)
        let probeError = code { try plugin.call(probeHost, "probe") { d, h in d.pointee.probe(h) } }
        check("probe never prompts", probeHost.asks.withLock { $0 } == 0)
        check("probe answers OK or NOT_AVAILABLE", probeError == nil || probeError == .methodUnavailable, "\(String(describing: probeError))")
        if probeError == .methodUnavailable {
            check("(enroll and unwrap skipped: the method is not available here)", true)
            return results
        }

        let host = ScriptedHost(secret: "plugin-check secret 1")
        let enrolled: (params: [UInt8], secret: SecureBytes)
        do {
            enrolled = try plugin.enroll(options: options, interaction: host)
            check("enroll returns parameters (\(enrolled.params.count) bytes) and a 32-byte secret", true)
        } catch {
            check("enroll succeeds with a scripted host", false, "\(error)")
            return results
        }
        // A plugin that showed a secret (a recovery key) is answered with it; the wrong secret is
        // then one a second enrollment showed.
        let shownKey = host.shown.withLock { $0 }
        var otherKey: [UInt8]?
        if shownKey != nil {
            let second = ScriptedHost(secret: "plugin-check secret 2")
            _ = try? plugin.enroll(options: options, interaction: second)
            otherKey = second.shown.withLock { $0 }
            check("a second enrollment shows a different secret", otherKey != nil && otherKey != shownKey)
        }
        do {
            let again = try plugin.unwrap(params: enrolled.params, interaction: ScriptedHost(secret: "plugin-check secret 1", recoveryKey: shownKey))
            check("unwrap with the same secret returns the same M", again.equals(enrolled.secret))
            let verified = try plugin.unwrap(params: enrolled.params, interaction: ScriptedHost(secret: "plugin-check secret 1", recoveryKey: shownKey),
                                             forVerification: true)
            check("verify with the same secret returns the same M", verified.equals(enrolled.secret))
        } catch {
            check("unwrap with the same secret succeeds", false, "\(error)")
        }
        do {
            let other = try plugin.unwrap(params: enrolled.params, interaction: ScriptedHost(secret: "plugin-check secret 2", recoveryKey: otherKey))
            check("a wrong secret gives a different M (or WRONG_SECRET)", !other.equals(enrolled.secret))
        } catch let e as KeybayError {
            check("a wrong secret gives a different M (or WRONG_SECRET)", e.code == .wrongSecret, e.description)
        } catch {
            check("a wrong secret gives a different M (or WRONG_SECRET)", false, "\(error)")
        }
        if plugin.isInteractive {
            let refused = code { _ = try plugin.unwrap(params: enrolled.params, interaction: ScriptedHost(secret: "", refuse: true)) }
            check("with no interaction available, unwrap reports INTERACTION_UNAVAILABLE", refused == .interactionRequired, "\(String(describing: refused))")
        }
        for (name, params) in [("empty", [UInt8]()), ("truncated", Array(enrolled.params.dropLast())), ("extended", enrolled.params + [0]),
                               ("garbage", [UInt8](repeating: 0xff, count: max(1, enrolled.params.count)))] where params != enrolled.params {
            let e = code { _ = try plugin.unwrap(params: params, interaction: ScriptedHost(secret: "plugin-check secret 1", recoveryKey: shownKey)) }
            check("\(name) parameters give MALFORMED_PARAMS", e == .malformed, "\(String(describing: e))")
        }
        let unknown = code { _ = try plugin.enroll(options: [("plugin-check-unknown-option", "1")], interaction: host) }
        check("an unknown enroll option gives INVALID_OPTION", unknown == .invalidArgument, "\(String(describing: unknown))")
        do {
            let text = try plugin.describe(params: enrolled.params)
            check("describe returns one line of text", !text.isEmpty && !text.contains("\n"), text)
        } catch {
            check("describe succeeds", false, "\(error)")
        }
        check("buffers come back through free_buffer, which clears them", freeBufferClears(plugin))
        return results
    }

    /// free_buffer must accept its own buffer and leave it empty (data NULL, length 0).
    private static func freeBufferClears(_ plugin: LoadedPlugin) -> Bool {
        var text = keybay_buffer()
        let probeParams: [UInt8] = []
        try? plugin.call(NonInteractive(), "could not describe empty parameters") { d, h in LoadedPlugin.describe(d, h, probeParams, &text) }
        guard text.data != nil else { return true } // describe refused empty params; nothing handed out
        plugin.descriptor.pointee.free_buffer(&text)
        return text.data == nil && text.length == 0
    }

    private static func rootChecks(_ plugin: LoadedPlugin) -> [Result] {
        var results: [Result] = []
        func check(_ name: String, _ passed: Bool, _ detail: String = "") { results.append(Result(name: name, passed: passed, detail: detail)) }
        var template = Array(("/tmp/keybay-plugin-check-" + String(repeating: "X", count: 6)).utf8CString) // mkdtemp template
        guard let made = template.withUnsafeMutableBufferPointer({ mkdtemp($0.baseAddress!) }) else {
            check("temporary state directory", false)
            return results
        }
        let home = String(cString: made)
        defer { removeTree(home) }
        let domain = [UInt8](repeating: 0x42, count: 32)
        let root = PluginRoot(plugin: plugin, applicationID: "plugin-check", stateHome: home, domain: domain)
        do {
            check("exists is false before create", try !root.exists())
            let state = try root.create()
            check("create returns a provider state of at most 64 bytes", !state.isEmpty && state.count <= 64)
            check("exists is true after create", try root.exists())
            check("create never overwrites", code { _ = try root.create() } == .stateConflict)
            let secret = SecureBytes(copying: Array("a 57-byte package would go here, any length is fine....".utf8))
            let aad = Array("aad".utf8)
            let sealed = try root.seal(secret, aad: aad, providerState: state)
            check("open returns what seal sealed", try root.open(sealed[...], aad: aad, providerState: state).package.equals(secret))
            if root.keepsFloor {
                check("a new root's rollback floor is 0", try root.open(sealed[...], aad: aad, providerState: state).floor == 0)
                try root.raiseFloor(to: 3, providerState: state)
                try root.raiseFloor(to: 2, providerState: state)
                let floor = try root.open(sealed[...], aad: aad, providerState: state).floor
                check("the rollback floor rises and never falls", floor == 3, "floor \(floor) after raising to 3, then to 2")
                var other = state
                other[0] ^= 1
                check("raising the floor with another provider state gives ROOT_MISMATCH", code { try root.raiseFloor(to: 4, providerState: other) } == .platformKeyInvalidated)
            }
            var tampered = sealed
            tampered[tampered.count / 2] ^= 1
            check("tampered sealed data gives INTEGRITY", code { _ = try root.open(tampered[...], aad: aad, providerState: state) } == .integrity)
            check("another AAD gives INTEGRITY", code { _ = try root.open(sealed[...], aad: [1], providerState: state) } == .integrity)
            var otherState = state
            otherState[0] ^= 1
            check("another provider state gives ROOT_MISMATCH before decrypting", code { _ = try root.open(sealed[...], aad: aad, providerState: otherState) } == .platformKeyInvalidated)
            try root.reset()
            check("reset removes the root", try !root.exists())
            check("reset is idempotent", code { try root.reset() } == nil)
            check("open without a root gives ROOT_MISSING", code { _ = try root.open(sealed[...], aad: aad, providerState: state) } == .platformKeyInvalidated)
            check("location names where the root lives", !root.location.isEmpty && !root.location.hasPrefix("(unknown"), root.location)
            if plugin.descriptor.pointee.root_protection != nil {
                let note = root.protection
                check("protection note is one line", note.map { !$0.isEmpty && !$0.contains("\n") } ?? false, note ?? "none")
            }
        } catch {
            check("root operations succeed", false, "\(error)")
        }
        return results
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
