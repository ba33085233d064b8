// SPDX-License-Identifier: Apache-2.0
import Glibc

/// The settings scripts/bench.sh passes for the integration rows: the `make install` prefix of
/// this build (the credential helpers and libkeybay.so.1), git's libsecret helper built from
/// Debian's source, the python3 that has keyring and the Python package's directory.
struct IntegrationSettings {
    let prefix: String, libsecretHelper: String, python: String, pythonPath: String, busEnvironment: [String: String]

    @MainActor static func fromEnvironment(_ env: [String: String]) -> IntegrationSettings? {
        func variable(_ name: String) -> String? { getenv(name).map { String(cString: $0) }.flatMap { $0.isEmpty ? nil : $0 } }
        guard let bus = variable("DBUS_SESSION_BUS_ADDRESS"), let prefix = variable("KEYBAY_BENCH_PREFIX"),
              let helper = variable("KEYBAY_BENCH_LIBSECRET_HELPER"), let python = variable("KEYBAY_BENCH_PYTHON"),
              let pythonPath = variable("KEYBAY_BENCH_PYTHONPATH") else { return nil }
        var busEnvironment = env
        busEnvironment["DBUS_SESSION_BUS_ADDRESS"] = bus
        if let runtime = variable("XDG_RUNTIME_DIR") { busEnvironment["XDG_RUNTIME_DIR"] = runtime }
        return IntegrationSettings(prefix: prefix, libsecretHelper: helper, python: python, pythonPath: pythonPath, busEnvironment: busEnvironment)
    }
}

/// `git credential fill` (a git process that runs the helper) through git-credential-keybay
/// against git's libsecret helper, both on the bench's private, unlocked gnome-keyring: the
/// keybay store on the secret-service root (its key an item of that keyring), and once more on
/// file-root. Each finds one stored credential for the host.
@MainActor func benchGitFill(runs: Int, base: String, settings: IntegrationSettings) {
    guard let git = which("git") else { print("  (git not installed)"); return }
    var env = settings.busEnvironment
    for (k, v) in [("GIT_CONFIG_NOSYSTEM", "1"), ("GIT_ASKPASS", "/bin/false"), ("GIT_TERMINAL_PROMPT", "0")] { env[k] = v }
    func credential(_ helper: String, _ operation: String) -> [String] {
        [git, "-c", "credential.helper=", "-c", "credential.helper=" + helper, "credential", operation]
    }
    writeFile(base + "/git-approve", Array("protocol=https\nhost=bench.example\nusername=bench\npassword=bench-secret\n\n".utf8))
    writeFile(base + "/git-query", Array("protocol=https\nhost=bench.example\n\n".utf8))
    let keybay = settings.prefix + "/bin/git-credential-keybay"
    let fileRoot = keybay + " --app bench.git-file"
    var onKeyring = env
    onKeyring["KEYBAY_ROOT"] = "secret-service"
    precondition(spawnTimed(credential(keybay, "approve"), env: onKeyring, stdin: base + "/git-approve").status == 0, "keybay approve failed")
    precondition(spawnTimed(credential(fileRoot, "approve"), env: env, stdin: base + "/git-approve").status == 0, "keybay approve failed")
    precondition(spawnTimed(credential(settings.libsecretHelper, "approve"), env: env, stdin: base + "/git-approve").status == 0,
                 "libsecret approve failed")
    // GIT_ASKPASS=/bin/false: a fill that finds nothing fails, and `alternate` stops on it.
    var m = alternate(runs, ours: credential(keybay, "fill"), reference: credential(settings.libsecretHelper, "fill"), env: env,
                      stdin: base + "/git-query")
    reportTimes("git credential fill: git-credential-keybay (secret-service store) vs git-credential-libsecret (same daemon)", m.ours, m.reference,
                target: "<= 1.0")
    m = alternate(runs, ours: credential(fileRoot, "fill"), reference: credential(settings.libsecretHelper, "fill"), env: env,
                  stdin: base + "/git-query")
    reportTimes("git credential fill: git-credential-keybay (file-root store) vs git-credential-libsecret", m.ours, m.reference, target: "<= 1.0")
}

/// `python3 -m keyring get` (a new Python process each time, as tools run it) with the keybay
/// backend (its store on the secret-service root of the same daemon) against keyring's
/// SecretService backend: one stored password each.
@MainActor func benchKeyringGet(runs: Int, base: String, settings: IntegrationSettings) {
    var env = settings.busEnvironment
    env["PYTHONPATH"] = settings.pythonPath
    env["KEYBAY_LIBRARY"] = settings.prefix + "/lib/libkeybay.so.1"
    let ours = "keybay.keyring_backend.KeybayKeyring", reference = "keyring.backends.SecretService.Keyring"
    func keyring(_ backend: String, _ arguments: [String]) -> [String] { [settings.python, "-m", "keyring", "-b", backend] + arguments }
    writeFile(base + "/keyring-password", Array("bench-secret\n".utf8))
    var onKeyring = env
    onKeyring["KEYBAY_ROOT"] = "secret-service"
    for backend in [ours, reference] {
        precondition(spawnTimed(keyring(backend, ["set", "bench-service", "bench"]), env: onKeyring, stdin: base + "/keyring-password").status == 0,
                     "keyring set with \(backend) failed")
    }
    let m = alternate(runs, ours: keyring(ours, ["get", "bench-service", "bench"]), reference: keyring(reference, ["get", "bench-service", "bench"]),
                      env: env)
    reportTimes("keyring get (new Python process): KeybayKeyring (secret-service store) vs SecretService backend (same daemon)", m.ours, m.reference,
                target: "<= 1.0")
}
