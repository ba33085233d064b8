// SPDX-License-Identifier: Apache-2.0
import Glibc
import Keybay

/// One plugin-check run: its inputs, and what the checks so far found (the loaded plugin, an
/// enrollment, a root's provider state) for the checks after them.
final class CheckRun {
    let path: String
    /// Passed to every enrollment.
    let options: [(String, String)]
    /// Laid over `options`, they enroll a second, different credential.
    let wrongOptions: [(String, String)]
    /// A shell command (`/bin/sh -c`) run after every other check, which changes the enrolled credential.
    let changeCredential: String?
    /// The PIN a device fixes (`--pin-fd N`), answering every PIN request but the wrong-secret check's.
    let pin: SecureBytes?
    /// Where the plugin runs (a host's rule: `KEYBAY_PLUGIN_ISOLATION` by default).
    let isolation: KeybayPluginIsolation
    /// The last part of `path`.
    let fileName: String
    /// The id its file name claims (`libkeybay-<id>.so`), not yet checked; nil for another name.
    let id: String?

    /// Set by the check that loads the plugin.
    var plugin: PluginUnderCheck?
    /// What probe returned (nil: OK).
    var probe: CallOutcome?
    /// The first enrollment with the scripted host, and the secret it showed (a recovery key), if any.
    var enrolled: PluginUnderCheck.Enrolled?
    var shownKey: [UInt8]?
    /// The secret a second enrollment showed, when the first showed one.
    var otherKey: [UInt8]?

    /// A root plugin's: its temporary state home (removed at the end), the root, its state, one sealed package.
    var stateHome: String?
    var root: RootUnderCheck?
    var providerState: [UInt8]?
    var sealed: (data: [UInt8], secret: SecureBytes, aad: [UInt8])?

    init(path: String, options: [(String, String)], wrongOptions: [(String, String)], changeCredential: String?, pin: SecureBytes? = nil,
         isolation: KeybayPluginIsolation = .fromEnvironment) {
        self.pin = pin
        self.isolation = isolation
        self.path = path
        self.options = options
        self.wrongOptions = wrongOptions
        self.changeCredential = changeCredential
        fileName = path.split(separator: "/").last.map(String.init) ?? path
        id = PluginUnderCheck.id(inFileName: fileName)
    }

    /// What an earlier check left, or an error saying which step is missing (a check run out of order).
    func needs<T>(_ value: T?, _ what: String) throws -> T {
        guard let value else { throw KeybayError(.invalidArgument, "plugin-check: no \(what) (the check that makes it did not run)") }
        return value
    }

    /// The root of application "plugin-check" in a fresh state home under /tmp.
    func rootUnderTest() throws -> RootUnderCheck {
        if let root { return root }
        let plugin = try needs(plugin, "loaded plugin")
        var template = Array(("/tmp/keybay-plugin-check-" + String(repeating: "X", count: 6)).utf8CString) // mkdtemp template
        guard let made = template.withUnsafeMutableBufferPointer({ mkdtemp($0.baseAddress!) }) else {
            throw KeybayError(.io, "temporary state directory: mkdtemp under /tmp: \(String(cString: strerror(errno)))")
        }
        let home = String(cString: made)
        stateHome = home
        let fresh = plugin.root(applicationID: "plugin-check", stateHome: home, domain: [UInt8](repeating: 0x42, count: 32))
        root = fresh
        return fresh
    }

    /// Removes the temporary state home, if a root check made one.
    func finish() {
        if let stateHome { Self.removeTree(stateHome) }
        stateHome = nil
    }

    /// rm -r (links are removed, never followed).
    private static func removeTree(_ path: String) {
        var st = stat()
        guard lstat(path, &st) == 0 else { return }
        if st.st_mode & S_IFMT == S_IFDIR, let dir = opendir(path) {
            var names: [String] = []
            while let entry = readdir(dir) {
                let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
                if name != "." && name != ".." { names.append(name) }
            }
            closedir(dir)
            names.forEach { removeTree(path + "/" + $0) }
            rmdir(path)
        } else {
            unlink(path)
        }
    }
}
