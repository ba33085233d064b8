// SPDX-License-Identifier: Apache-2.0
import Glibc

/// The isolation rows (docs/plugins.md, "Isolation"): the same CLI `get` with its method plugin
/// in `keybay-plugin-host` against `KEYBAY_PLUGIN_ISOLATION=none`, each run a fresh process, so
/// the isolated side pays for starting its helper every time. (1) A passphrase store whose
/// Argon2id takes 64 MiB: the cost next to a real unlock, as a ratio. (2) The counting test
/// plugin, whose unlock costs nothing (one HMAC): the cost itself, as a difference.
@MainActor func benchIsolation(runs: Int, base: String, env: [String: String], cli: String) {
    let isolated = env, inProcess = env.merging(["KEYBAY_PLUGIN_ISOLATION": "none"]) { $1 }
    writeFile(base + "/isolation-pass", Array("correct horse battery staple\n".utf8))
    precondition(spawnTimed([cli, "--app", "isopass", "set", "k", "v"], env: env).status == 0, "set failed")
    precondition(spawnTimed([cli, "--app", "isopass", "enroll", "passphrase", "--opt", "memory-kib=65536", "--opt", "iterations=4",
                             "--opt", "lanes=2", "--passphrase-fd", "0"], env: env, stdin: base + "/isolation-pass").status == 0,
                 "enroll passphrase failed")
    let passphraseGet = [cli, "--app", "isopass", "get", "k", "--passphrase-fd", "0"]
    let m = alternate(max(5, runs / 2), ours: passphraseGet, reference: passphraseGet, env: isolated, referenceEnv: inProcess,
                      stdin: base + "/isolation-pass")
    reportTimes("CLI get of a passphrase store (64 MiB, t=4, p=2), method isolated vs in process", m.ours, m.reference, target: "<= 1.05", digits: 3)

    // The counting plugin is built as libkeybaytest-counting.so (not a plugin file name): copied
    // under its plugin file name into a directory of the bench's own.
    let plugins = base + "/isolation-plugins"
    mkdir(plugins, 0o755)
    writeFile(plugins + "/libkeybay-test-counting.so", readAll(exeDirectory + "/libkeybaytest-counting.so"), mode: 0o755)
    writeFile(base + "/isolation-pin", Array("1234\n".utf8))
    let counting = [cli, "--app", "isocount", "--plugin-dir", plugins]
    precondition(spawnTimed(counting + ["set", "k", "v"], env: env).status == 0, "set failed")
    precondition(spawnTimed(counting + ["enroll", "test-counting", "--pin-fd", "0"], env: env, stdin: base + "/isolation-pin").status == 0,
                 "enroll test-counting failed")
    let countingGet = counting + ["get", "k", "--pin-fd", "0"]
    let c = alternate(runs, ours: countingGet, reference: countingGet, env: isolated, referenceEnv: inProcess, stdin: base + "/isolation-pin")
    report(Row(name: "CLI get with the counting method (costs nothing), isolated vs in process", ours: fixed(c.ours * 1000) + " ms",
               reference: fixed(c.reference * 1000) + " ms", ratio: "+" + fixed((c.ours - c.reference) * 1000) + " ms", target: "<= +3 ms"))
}
