// SPDX-License-Identifier: Apache-2.0
import Glibc

/// The agent rows (docs/performance.md): CLI `get` of one record of a passphrase store (64 ×
/// 1 KiB, Argon2id calibrated as `enroll passphrase` calibrates it) unlocked in the agent,
/// against (1) the same `get` without the agent (the passphrase on a descriptor: the whole
/// unlock), (2) `secret-tool lookup` of one item on the bench's gnome-keyring, and (3) a `get`
/// of the same record from a platform-only file-root store of the same shape. The agent runs in
/// a runtime directory of the bench's own; the references run without it.
@MainActor func benchAgent(runs: Int, base: String, env: [String: String], cli: String) {
    let runtime = base + "/run"
    mkdir(runtime, 0o700)
    var agentEnv = env
    agentEnv["XDG_RUNTIME_DIR"] = runtime
    writeFile(base + "/agent-pass", Array("correct horse battery staple\n".utf8))
    for app in ["agentget", "agentfile"] {
        for i in 0..<64 {
            writeFile(base + "/record", [UInt8](repeating: UInt8(i), count: 1024))
            precondition(spawnTimed([cli, "--app", app, "set", recordName(i), "--stdin"], env: env, stdin: base + "/record").status == 0, "set failed")
        }
    }
    precondition(spawnTimed([cli, "--app", "agentget", "enroll", "passphrase", "--passphrase-fd", "0"], env: env, stdin: base + "/agent-pass").status == 0,
                 "enroll passphrase (calibrated) failed")
    precondition(spawnTimed([cli, "--app", "agentget", "unlock", "--for", "0", "--passphrase-fd", "0"], env: agentEnv, stdin: base + "/agent-pass").status == 0,
                 "unlock failed")
    defer { _ = spawnTimed([cli, "lock", "--all"], env: agentEnv) } // the agent ends once the bench's directory is gone
    let throughAgent = [cli, "--app", "agentget", "get", "record/42", "--no-input"]

    let unlocking = alternate(max(5, runs / 2), ours: throughAgent, reference: [cli, "--app", "agentget", "get", "record/42", "--passphrase-fd", "0"],
                              env: agentEnv, referenceEnv: env, stdin: base + "/agent-pass")
    report(Row(name: "CLI get through the agent vs the same get with the unlock (passphrase, calibrated Argon2id)",
               ours: fixed(unlocking.ours * 1000) + " ms", reference: fixed(unlocking.reference * 1000) + " ms",
               ratio: fixed(unlocking.reference / unlocking.ours, 0) + "x faster", target: ">= 100x"))

    if let bus = getenv("DBUS_SESSION_BUS_ADDRESS").map({ String(cString: $0) }), let secretTool = which("secret-tool") {
        var busEnv = env
        busEnv["DBUS_SESSION_BUS_ADDRESS"] = bus
        if let keyringRuntime = getenv("XDG_RUNTIME_DIR") { busEnv["XDG_RUNTIME_DIR"] = String(cString: keyringRuntime) }
        precondition(spawnTimed([cli, "--app", "agentss", "--root", "secret-service", "set", "record/42", "value"], env: busEnv).status == 0,
                     "cannot make a store on the secret-service root (is a Secret Service running on \(bus)?)")
        defer { _ = spawnTimed([cli, "--app", "agentss", "reset", "--yes"], env: busEnv) }
        let m = alternate(runs, ours: throughAgent, reference: [secretTool, "lookup", "keybay-application", "agentss"], env: agentEnv, referenceEnv: busEnv)
        reportTimes("CLI get through the agent vs secret-tool lookup (the bench's gnome-keyring)", m.ours, m.reference, target: "<= 0.5")
    } else {
        print("  (no session bus or secret-tool: run scripts/bench.sh)")
    }

    let m = alternate(runs, ours: throughAgent, reference: [cli, "--app", "agentfile", "get", "record/42"], env: agentEnv, referenceEnv: env)
    reportTimes("CLI get through the agent vs CLI get of a platform-only file-root store (64 x 1 KiB both)", m.ours, m.reference, target: "<= 1.2")

    // What the agent costs a store it does not hold: the platform-only get asks it first (one
    // round trip), and with no agent running, one connect to a socket that is not there.
    let plain = [cli, "--app", "agentfile", "get", "record/42"]
    let asked = alternate(runs, ours: plain, reference: plain, env: agentEnv, referenceEnv: env)
    reportTimes("CLI get of a platform-only store while the agent runs (holding another) vs without XDG_RUNTIME_DIR", asked.ours, asked.reference,
                target: "<= 1.1")
    let empty = base + "/run-empty"
    mkdir(empty, 0o700)
    let absent = alternate(runs, ours: plain, reference: plain, env: env.merging(["XDG_RUNTIME_DIR": empty]) { $1 }, referenceEnv: env)
    reportTimes("CLI get of a platform-only store, XDG_RUNTIME_DIR set and no agent socket vs without XDG_RUNTIME_DIR", absent.ours, absent.reference,
                target: "<= 1.05")
}
