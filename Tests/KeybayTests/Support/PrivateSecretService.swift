// SPDX-License-Identifier: Apache-2.0
import Foundation
import Glibc
import Testing

/// A private D-Bus session bus and an unlocked gnome-keyring-daemon on it (and, when asked,
/// xdg-desktop-portal with gnome-keyring's Secret backend: startPortal), started for one test
/// and stopped when it ends; never the user's own bus. Everything lives under the sandbox: the
/// bus socket and its configuration, XDG_RUNTIME_DIR and the keyrings (HOME). The bus activates
/// nothing (no service directories): no second keyring daemon and no prompter can start behind
/// the test's back, so an unlock prompt fails as it does without a display. A test that cannot
/// start it fails: the initialiser throws, it never skips.
final class PrivateSecretService: @unchecked Sendable {
    static let password = "keybay-test-keyring"
    static let login = "/org/freedesktop/secrets/collection/login"

    let home: String
    let runtime: String
    let address: String
    private let passwordFile: String
    private var bus: pid_t = 0
    private var keyring: pid_t = 0
    private var portal: pid_t = 0

    struct StartFailure: Error, CustomStringConvertible { let description: String }

    init(under directory: String) throws {
        home = directory + "/keyring-home"
        runtime = directory + "/run"
        address = "unix:path=" + directory + "/bus"
        passwordFile = directory + "/keyring-password"
        mkdir(home, 0o700)
        mkdir(runtime, 0o700)
        writeBytes(passwordFile, Array(Self.password.utf8))
        let config = directory + "/bus.conf"
        try """
            <!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
             "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
            <busconfig>
              <type>session</type>
              <listen>\(address)</listen>
              <policy context="default">
                <allow send_destination="*" eavesdrop="true"/>
                <allow eavesdrop="true"/>
                <allow own="*"/>
              </policy>
            </busconfig>
            """.write(toFile: config, atomically: true, encoding: .utf8)
        bus = try start("/usr/bin/dbus-daemon", ["--config-file=" + config, "--nofork"])
        try waitUntil("the private session bus at \(address)") { exists(directory + "/bus") }
        try startKeyring(replacing: false)
    }

    deinit { stop() }

    /// What a process needs to find this bus (and nothing of the user's session).
    var environment: [String: String] {
        ["DBUS_SESSION_BUS_ADDRESS": address, "XDG_RUNTIME_DIR": runtime]
    }

    /// `base` with this bus: the CLI's environment for a store on the secret-service root.
    func environment(_ base: [String: String]) -> [String: String] {
        base.merging(environment) { _, new in new }
    }

    /// SIGTERM, then SIGKILL after two seconds; always reaped.
    func stop() {
        for pid in [portal, keyring, bus] where pid > 0 { Self.end(pid) }
        portal = 0
        keyring = 0
        bus = 0
    }

    private static func end(_ pid: pid_t) {
        kill(pid, SIGCONT) // a paused portal (pausePortal) must be able to exit
        kill(pid, SIGTERM)
        var status: Int32 = 0
        for _ in 0..<40 {
            if waitpid(pid, &status, WNOHANG) != 0 { return }
            usleep(50_000)
        }
        kill(pid, SIGKILL)
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
    }

    /// Locks the login collection (org.freedesktop.Secret.Service.Lock).
    func lock() throws {
        try gdbus("/org/freedesktop/secrets", "org.freedesktop.Secret.Service.Lock", "['\(Self.login)']")
        guard try isLocked() else { throw StartFailure(description: "the login collection did not lock") }
    }

    /// Unlocks it again without a prompt: a new daemon replaces the old one, fed the password.
    func unlock() throws {
        let old = keyring
        try startKeyring(replacing: true)
        Self.end(old)
    }

    /// A crash of the keyring daemon, and a fresh one on the same bus and keyring directory that
    /// is not given the password: the login collection loads locked from its file, as after a
    /// logout, a crash or a session whose keyring was not unlocked at login. Its items then show
    /// only hashes of their attributes until it is unlocked (`unlock()` does that).
    func restartLocked() throws {
        kill(keyring, SIGKILL)
        var status: Int32 = 0
        while waitpid(keyring, &status, 0) < 0 && errno == EINTR {}
        keyring = try start("/usr/bin/gnome-keyring-daemon", ["--foreground", "--components=secrets", "--replace"])
        try waitUntil("a fresh gnome-keyring-daemon answering with a locked login collection on \(address)") {
            (try? gdbus("/org/freedesktop/secrets", "org.freedesktop.Secret.Service.ReadAlias", "default").contains(Self.login)) == true
                && (try? isLocked()) == true
        }
    }

    /// Points the default alias at another collection ("session": gnome-keyring's in-memory one,
    /// never locked), as a user who made another keyring the default does.
    func setDefault(_ collection: String) throws {
        try gdbus("/org/freedesktop/secrets", "org.freedesktop.Secret.Service.SetAlias", "default", collection)
        guard try gdbus("/org/freedesktop/secrets", "org.freedesktop.Secret.Service.ReadAlias", "default").contains(collection) else {
            throw StartFailure(description: "the default alias did not move to \(collection)")
        }
    }

    func isLocked() throws -> Bool {
        try gdbus(Self.login, "org.freedesktop.DBus.Properties.Get", "org.freedesktop.Secret.Collection", "Locked").contains("true")
    }

    /// The object paths of the items whose attributes include `attributes` (locked ones too).
    func items(_ attributes: [String: String]) throws -> [String] {
        let dictionary = "{" + attributes.map { "'\($0.key)': '\($0.value)'" }.joined(separator: ", ") + "}"
        return Self.paths(try gdbus("/org/freedesktop/secrets", "org.freedesktop.Secret.Service.SearchItems", dictionary))
    }

    /// Every item of the login collection.
    func allItems() throws -> [String] {
        Self.paths(try gdbus(Self.login, "org.freedesktop.DBus.Properties.Get", "org.freedesktop.Secret.Collection", "Items"))
    }

    func delete(_ item: String) throws {
        try gdbus(item, "org.freedesktop.Secret.Item.Delete")
    }

    /// One attribute of an item, as the Secret Service reports it.
    func attribute(_ name: String, of item: String) throws -> String? {
        let text = try gdbus(item, "org.freedesktop.DBus.Properties.Get", "org.freedesktop.Secret.Item", "Attributes")
        guard let range = text.range(of: "'\(name)': '") else { return nil }
        return String(text[range.upperBound...].prefix { $0 != "'" })
    }

    /// secret-tool (libsecret-tools) on this bus.
    func secretTool(_ arguments: [String], stdin: [UInt8]? = nil) throws -> RunResult {
        try run("/usr/bin/secret-tool", arguments, environment: processEnvironment, stdin: stdin)
    }

    /// The Keybay root items of application `app` (of every state home).
    func rootItems(app: String) throws -> [String] {
        try items(["keybay-application": app])
    }

    /// The Keybay root items of application `app` for one state home.
    func rootItems(app: String, stateHome: String) throws -> [String] {
        try items(["keybay-application": app, "keybay-state-home": stateHome])
    }

    // MARK: - The XDG Secret portal

    /// Starts xdg-desktop-portal on this bus with gnome-keyring's Secret backend
    /// (gnome-keyring.portal, used in GNOME): org.freedesktop.portal.Secret then answers on
    /// /org/freedesktop/portal/desktop, giving each sandboxed application its own secret.
    func startPortal() throws {
        guard portal == 0 else { return }
        let executable = "/usr/libexec/xdg-desktop-portal"
        guard access(executable, X_OK) == 0 else {
            throw StartFailure(description: "\(executable) is missing: run scripts/setup.sh (xdg-desktop-portal)")
        }
        var environment = processEnvironment
        environment["XDG_CURRENT_DESKTOP"] = "GNOME"
        portal = spawnChild(executable, ["-r"], environment: environment, stdinPath: "/dev/null")
        try waitUntil("xdg-desktop-portal owning org.freedesktop.portal.Desktop on \(address)") { portalAnswers }
    }

    /// Ends the portal (SIGTERM, reaped): a portal that is gone.
    func stopPortal() {
        if portal > 0 { Self.end(portal) }
        portal = 0
    }

    /// SIGSTOP / SIGCONT: a portal that owns its name but does not answer.
    func pausePortal() { kill(portal, SIGSTOP) }
    func resumePortal() { kill(portal, SIGCONT) }

    var portalAnswers: Bool {
        (try? run("/usr/bin/gdbus", ["call", "--session", "--dest", "org.freedesktop.DBus", "--object-path", "/org/freedesktop/DBus",
                                      "--method", "org.freedesktop.DBus.NameHasOwner", "org.freedesktop.portal.Desktop"],
                  environment: processEnvironment).out.contains("true")) == true
    }

    /// The secret the portal gives application `app`, as gnome-keyring's backend keeps it: a
    /// keyring item with the attribute app_id, which any unsandboxed process of the user can
    /// read while the keyring is unlocked (docs/security.md says so).
    func portalSecret(app: String) throws -> [UInt8] {
        let r = try secretTool(["lookup", "app_id", app])
        guard r.status == 0, !r.stdout.isEmpty else { throw StartFailure(description: "no portal secret for \(app): \(r.stderr)") }
        return r.stdout
    }

    // MARK: -

    private static func paths(_ text: String) -> [String] {
        text.split(separator: "'").map(String.init).filter { $0.hasPrefix(login + "/") }
    }

    @discardableResult
    private func gdbus(_ object: String, _ method: String, _ arguments: String...) throws -> String {
        let result = try run("/usr/bin/gdbus", ["call", "--session", "--dest", "org.freedesktop.secrets", "--object-path", object,
                                                "--method", method] + arguments, environment: processEnvironment)
        guard result.status == 0 else { throw StartFailure(description: "gdbus \(method) on \(object) failed: \(result.stderr)") }
        return result.out
    }

    private var processEnvironment: [String: String] {
        ["HOME": home, "PATH": "/usr/bin:/bin", "DBUS_SESSION_BUS_ADDRESS": address, "XDG_RUNTIME_DIR": runtime]
    }

    private func startKeyring(replacing: Bool) throws {
        let arguments = ["--foreground", "--unlock", "--components=secrets"] + (replacing ? ["--replace"] : [])
        keyring = try start("/usr/bin/gnome-keyring-daemon", arguments, input: passwordFile)
        try waitUntil("gnome-keyring-daemon answering with an unlocked login collection on \(address)") {
            (try? gdbus("/org/freedesktop/secrets", "org.freedesktop.Secret.Service.ReadAlias", "default").contains(Self.login)) == true
                && (try? isLocked()) == false
        }
    }

    private func start(_ executable: String, _ arguments: [String], input: String = "/dev/null") throws -> pid_t {
        guard access(executable, X_OK) == 0 else {
            throw StartFailure(description: "\(executable) is missing: run scripts/setup.sh (gnome-keyring, dbus)")
        }
        return spawnChild(executable, arguments, environment: processEnvironment, stdinPath: input)
    }

    private func waitUntil(_ what: String, _ ready: () -> Bool) throws {
        for _ in 0..<200 {
            if ready() { return }
            usleep(50_000)
        }
        throw StartFailure(description: "\(what) did not come up within 10 s")
    }
}
