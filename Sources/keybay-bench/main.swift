// SPDX-License-Identifier: Apache-2.0
// keybay-bench: speed measured side by side in one run, as ratios of medians over alternating
// runs (never timed assertions in tests). Run it through scripts/bench.sh, which installs the
// references (age, cryptsetup-bin) and builds in release mode.
//
//   keybay-bench [RUNS]          the whole table
//   keybay-bench RUNS ROW...     only these rows: get verify set open inproc plugins tpm2 tpm2signed ssget tpm2pin pkcs11 agent
//                                capi capiopen python gitfill keyringget
//   (ssget, capiopen, python, gitfill and keyringget need a Secret Service on
//   DBUS_SESSION_BUS_ADDRESS: scripts/bench.sh runs the bench in a private session with a
//   throwaway, unlocked gnome-keyring; python, gitfill and keyringget also the KEYBAY_BENCH_*
//   settings it passes)
//   keybay-bench load-plugins    (internal) time discovery + loading of the plugins, in a fresh process
import CSodium
import Glibc
import Keybay

// MARK: - The internal plugin-loading probe

if CommandLine.arguments.dropFirst().first == "load-plugins" {
    // Discovery of the search path plus loading (dlopen, checks) of the three first-party
    // plugins; no probing (fido2's probe enumerates USB devices, which `get` never does).
    let t0 = now()
    let found = try KeybayPlugins.discover()
    for id in ["file-root", "passphrase", "fido2"] { _ = try KeybayPlugins.load(id) }
    let elapsed = now() - t0
    print("\(elapsed * 1000) \(found.count)")
    exit(0)
}

// MARK: - Setup

let runs = CommandLine.arguments.dropFirst().first.flatMap(Int.init) ?? 21
let onlyRows = Set(CommandLine.arguments.dropFirst(2))
func wanted(_ row: String) -> Bool { onlyRows.isEmpty || onlyRows.contains(row) }
var template = Array(("/tmp/keybay-bench-" + String(repeating: "X", count: 6)).utf8CString) // mkdtemp template
guard let made = template.withUnsafeMutableBufferPointer({ mkdtemp($0.baseAddress!) }) else { fatalError("mkdtemp") }
let base = String(cString: made)
defer { _ = system("rm -rf '\(base)'") }
let env = ["XDG_DATA_HOME": base + "/data", "XDG_STATE_HOME": base + "/state", "HOME": base, "PATH": "/usr/bin:/bin"]
let cli = exeDirectory + "/keybay-methods"
precondition(sodium_init() >= 0)
print("keybay-bench: \(runs) alternating runs per row, medians")

func config(_ app: String) throws -> KeybayConfiguration {
    try KeybayConfiguration(applicationID: app, dataHome: base + "/data", stateHome: base + "/state")
}

if wanted("get") { try benchGet() }
if wanted("verify") { try benchVerify() }
if wanted("set") { try benchSet() }
if wanted("open") { try benchOpen() }
if wanted("inproc") { try benchInProcess() }
if wanted("plugins") { benchPluginLoading() }
if wanted("tpm2") { benchTpm2() }
if wanted("ssget") { benchSecretServiceGet() }
if wanted("tpm2pin") { benchTpm2Pin() }
// 13. A tpm2 store with a signed PCR policy vs tpm2_unseal through a PolicyAuthorize session.
if wanted("tpm2signed") { benchSignedPolicy() }
if wanted("capi") { try CAPIRows.benchGet(runs: runs, base: base, env: env, config: config) }
if wanted("capiopen") { CAPIRows.benchOpen(runs: runs, base: base, env: env, cli: cli) }
if wanted("python") { CAPIRows.benchPython(runs: runs, base: base, env: env, cli: cli) }
// 10. A pkcs11 unlock vs pkcs11-tool --decrypt with the same key on the same SoftHSM2 token.
if wanted("pkcs11") { benchPkcs11(runs: runs, base: base, env: env, cli: cli) }
// 11. The integrations (docs/integrations.md): git credential fill and keyring get, each against
// the tool's own Secret Service store.
if wanted("gitfill") || wanted("keyringget") {
    if let settings = IntegrationSettings.fromEnvironment(env) {
        if wanted("gitfill") { benchGitFill(runs: runs, base: base, settings: settings) }
        if wanted("keyringget") { benchKeyringGet(runs: runs, base: base, settings: settings) }
    } else {
        print("  (no session bus or KEYBAY_BENCH_* settings: run scripts/bench.sh)")
    }
}
// 11. The agent: get through it vs the whole unlock, vs secret-tool lookup, vs a file-root get.
if wanted("agent") { benchAgent(runs: runs, base: base, env: env, cli: cli) }
// 12. Method plugins isolated (keybay-plugin-host) vs in process.
if wanted("isolation") { benchIsolation(runs: runs, base: base, env: env, cli: cli) }

print("")
print("| row | ours | reference | ratio | target |")
print("|---|---|---|---|---|")
for r in rows { print("| \(r.name) | \(r.ours) | \(r.reference) | \(r.ratio) | \(r.target) |") }
