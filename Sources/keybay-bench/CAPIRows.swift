// SPDX-License-Identifier: Apache-2.0
import Glibc
import Keybay

/// The C API's rows (scripts/bench.sh builds `capi_get` from scripts/bench/capi_get.c against
/// this build's libkeybay.so, beside keybay-bench). Each side is timed inside its own process,
/// so the rows compare what a call costs a host that is already running.
enum CAPIRows {
    static var program: String { exeDirectory + "/capi_get" }

    /// Runs `capi_get` with `arguments`, whose last is the file it writes its figures to; returns them.
    static func figures(_ arguments: [String], env: [String: String], base: String) -> [Double] {
        let out = base + "/capi-figures"
        let run = spawnTimed([program] + arguments + [out], env: env)
        precondition(run.status == 0, "capi_get \(arguments.joined(separator: " ")) failed (exit \(run.status))")
        return String(decoding: readAll(out), as: UTF8.self).split(whereSeparator: { $0 == " " || $0 == "\n" }).compactMap { Double($0) }
    }

    /// `env` with this process's session bus and runtime directory (the bench's private
    /// gnome-keyring), or nil when there is no session bus.
    static func withSessionBus(_ env: [String: String]) -> [String: String]? {
        guard let bus = getenv("DBUS_SESSION_BUS_ADDRESS").map({ String(cString: $0) }) else { return nil }
        var busEnv = env
        busEnv["DBUS_SESSION_BUS_ADDRESS"] = bus
        if let runtime = getenv("XDG_RUNTIME_DIR") { busEnv["XDG_RUNTIME_DIR"] = String(cString: runtime) }
        return busEnv
    }

    /// In-process `keybay_get` of a 64-byte value through the C API against the Swift API's
    /// `get` on the same store (1024 records), alternating runs of 20 000 calls each.
    @MainActor static func benchGet(runs: Int, base: String, env: [String: String], config: (String) throws -> KeybayConfiguration) throws {
        guard access(program, X_OK) == 0 else { print("  (capi_get not built: run scripts/bench.sh)"); return }
        let store = try KeybayStore.open(config("capi"))
        var names: [String] = []
        for i in 0..<1024 { names.append("k/\(i)"); try store.set("k/\(i)", bytes: [UInt8](repeating: 7, count: 64)) }
        let calls = 20_000
        var ours: [Double] = [], swift: [Double] = []
        for _ in 0..<runs {
            ours.append(figures(["get", "capi", String(calls)], env: env, base: base)[0])
            _ = try store.get(names[0])
            let t0 = now()
            for i in 0..<calls { _ = try store.get(names[i % 1024]) }
            swift.append((now() - t0) / Double(calls) * 1e9)
        }
        store.close()
        let o = median(ours), s = median(swift)
        report(Row(name: "in-process keybay_get through the C API (64-byte value) vs the Swift API's get (same store)",
                   ours: fixed(o, 0) + " ns/call", reference: fixed(s, 0) + " ns/call", ratio: fixed(o / s), target: "<= 1.2"))
    }

    /// keybay_open + keybay_get + keybay_close of a platform-only store from C against libsecret's
    /// secret_password_lookup_sync of one item, alternating in one process (medians of `runs` × 20
    /// rounds): on file-root (the target row) and on the secret-service root, which asks the same
    /// gnome-keyring for the root's item that libsecret asks for its item.
    @MainActor static func benchOpen(runs: Int, base: String, env: [String: String], cli: String) {
        guard access(program, X_OK) == 0, let secretTool = which("secret-tool"), let busEnv = withSessionBus(env) else {
            print("  (capi_get, secret-tool or a session bus missing: run scripts/bench.sh)")
            return
        }
        writeFile(base + "/libsecret-value", Array("a 64-byte secret, the size of the C API row's value, for libsecret".utf8.prefix(64)))
        precondition(spawnTimed([secretTool, "store", "--label=keybay bench", "bench", "capi"], env: busEnv, stdin: base + "/libsecret-value").status == 0,
                     "secret-tool store failed")
        for (app, root, target) in [("capi-open", "file-root", "<= 1.0"), ("capi-open-ss", "secret-service", "-")] {
            precondition(spawnTimed([cli, "--app", app, "--root", root, "set", "k/0", String(repeating: "v", count: 64)], env: busEnv).status == 0,
                         "cannot make the \(root) store")
            var ours: [Double] = [], theirs: [Double] = []
            for _ in 0..<runs {
                let f = figures(["open", app, root, "20"], env: busEnv, base: base)
                ours.append(f[0])
                theirs.append(f[1])
            }
            reportTimes("C keybay_open + keybay_get + keybay_close (\(root) store) vs libsecret secret_password_lookup_sync (one item, same gnome-keyring)",
                        median(ours) / 1e9, median(theirs) / 1e9, target: target, digits: 3)
            _ = spawnTimed([cli, "--app", app, "reset", "--yes"], env: busEnv)
        }
    }

    /// The Python package's Store.get against keyring's SecretService backend get_password (what
    /// Python applications use today) on the same gnome-keyring, alternating in one process.
    @MainActor static func benchPython(runs: Int, base: String, env: [String: String], cli: String) {
        // The python3 scripts/bench.sh found (with keyring installed), not necessarily /usr/bin's.
        guard let scripts = getenv("KEYBAY_BENCH_SCRIPTS").map({ String(cString: $0) }), let python = getenv("KEYBAY_BENCH_PYTHON").map({ String(cString: $0) }),
              var pyEnv = withSessionBus(env) else {
            print("  (KEYBAY_BENCH_SCRIPTS, KEYBAY_BENCH_PYTHON or a session bus missing: run scripts/bench.sh)")
            return
        }
        pyEnv["PYTHONPATH"] = scripts + "/../../bindings/python"
        pyEnv["KEYBAY_LIBRARY"] = exeDirectory + "/libkeybay.so"
        precondition(spawnTimed([cli, "--app", "python-get", "set", "k/0", String(repeating: "v", count: 64)], env: pyEnv).status == 0, "set failed")
        let stored = "import keyring.backends.SecretService as s; s.Keyring().set_password('keybay-bench', 'bench', 'v' * 64)"
        precondition(spawnTimed([python, "-c", stored], env: pyEnv).status == 0, "keyring's SecretService backend could not store the item")
        let out = base + "/python-figures"
        var ours: [Double] = [], theirs: [Double] = []
        for _ in 0..<max(1, runs / 4) {
            let run = spawnTimed([python, scripts + "/python_get.py", "python-get", "200", out], env: pyEnv)
            precondition(run.status == 0, "python_get.py failed (exit \(run.status))")
            let f = String(decoding: readAll(out), as: UTF8.self).split(whereSeparator: { $0 == " " || $0 == "\n" }).compactMap { Double($0) }
            ours.append(f[0])
            theirs.append(f[1])
        }
        reportTimes("Python keybay Store.get vs keyring's SecretService get_password (same gnome-keyring, in one process)",
                    median(ours) / 1e9, median(theirs) / 1e9, target: "<= 0.1", digits: 3)
    }
}
