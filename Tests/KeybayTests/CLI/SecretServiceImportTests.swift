// SPDX-License-Identifier: Apache-2.0
import Foundation
import Glibc
import Testing
@testable import Keybay

/// `import secret-service` against a real gnome-keyring-daemon on a private bus
/// (PrivateSecretService): items made by `secret-tool store` and by Python keyring's
/// SecretService backend, the key mapping, conflicts, `--remove-source` and a locked keyring.
@Suite struct SecretServiceImportTests {
    struct Fixture {
        let box = Sandbox(app: "com.example.import")
        let service: PrivateSecretService
        init() throws { service = try PrivateSecretService(under: box.root) }

        var env: [String: String] { service.environment(box.environment) }

        @discardableResult
        func cli(_ arguments: String...) throws -> RunResult { try run(cliPath, arguments, environment: env) }

        func store(_ secret: String, _ attributes: [String]) throws {
            let r = try service.secretTool(["store", "--label", "x"] + attributes, stdin: Array(secret.utf8))
            try #require(r.status == 0, "secret-tool store: \(r.stderr)")
        }

        func report(_ r: RunResult) -> [String: [String]] {
            let object = (try? JSONSerialization.jsonObject(with: Data(r.stdout)) as? [String: Any]) ?? [:]
            return object.compactMapValues { $0 as? [String] }
        }
    }

    @Test func secretToolItemsBecomeRecordsByTheirAttribute() throws {
        let f = try Fixture()
        try f.store("alice-secret", ["app", "demo", "user", "alice"])
        try f.store("bob-secret", ["app", "demo", "user", "bob"])
        try f.store("not-this-one", ["app", "other", "user", "carol"])
        let r = try f.cli("import", "secret-service", "--attr", "app=demo", "--key-from", "user", "--json")
        #expect(r.status == 0, "\(r.stderr)")
        #expect(r.stderr.isEmpty, "GLib or libsecret complained: \(r.stderr)")
        #expect(f.report(r)["imported"] == ["alice", "bob"])
        #expect(try f.cli("get", "alice").out == "alice-secret")
        #expect(try f.cli("get", "bob").out == "bob-secret")
        #expect(try f.cli("keys").out == "alice\nbob\n")
        // Without --remove-source the items stay; a second import finds them unchanged.
        #expect(try f.service.items(["app": "demo"]).count == 2)
        #expect(f.report(try f.cli("import", "secret-service", "--attr", "app=demo", "--key-from", "user", "--json"))["unchanged"] == ["alice", "bob"])
    }

    @Test func valuesAreMappedInjectivelyUnderThePrefix() throws {
        let f = try Fixture()
        try f.store("1", ["app", "map", "user", "a b/c_d"])
        try f.store("2", ["app", "map", "user", ".hidden"])
        try f.store("3", ["app", "map", "user", "x_x"])
        let r = try f.cli("import", "secret-service", "--attr", "app=map", "--key-from", "user", "--prefix", "from/keyring", "--json")
        #expect(r.status == 0, "\(r.stderr)")
        #expect(f.report(r)["imported"] == ["from/keyring/a_20b_2fc_5fd", "from/keyring/x_5fx", "from/keyring/x_x.hidden"])
    }

    @Test func conflictsAreKeptAndRemoveSourceDeletesOnlyWhatReadsBack() throws {
        let f = try Fixture()
        try #require(try f.cli("set", "alice", "already-here").status == 0)
        try f.store("alice-secret", ["app", "demo", "user", "alice"])
        try f.store("bob-secret", ["app", "demo", "user", "bob"])
        let dry = try f.cli("import", "secret-service", "--attr", "app=demo", "--key-from", "user", "--dry-run", "--remove-source", "--json")
        #expect(dry.status == 1)
        #expect(f.report(dry)["imported"] == ["bob"] && f.report(dry)["conflicts"] == ["alice"])
        #expect(try f.service.items(["app": "demo"]).count == 2)
        #expect(try f.cli("keys").out == "alice\n")

        let kept = try f.cli("import", "secret-service", "--attr", "app=demo", "--key-from", "user", "--remove-source", "--json")
        #expect(kept.status == 1)
        #expect(try f.cli("get", "alice").out == "already-here")
        #expect(try f.cli("get", "bob").out == "bob-secret")
        let left = try f.service.items(["app": "demo"])
        #expect(left.count == 1)
        #expect(try f.service.attribute("user", of: try #require(left.first)) == "alice")

        let replaced = try f.cli("import", "secret-service", "--attr", "app=demo", "--key-from", "user", "--remove-source", "--replace")
        #expect(replaced.status == 0, "\(replaced.stderr)")
        #expect(try f.cli("get", "alice").out == "alice-secret")
        #expect(try f.service.items(["app": "demo"]).isEmpty)
    }

    @Test func pythonKeyringItemsImportByService() throws {
        let f = try Fixture()
        let script = "import keyring.backends.SecretService as s; k = s.Keyring(); k.set_password('svc', 'dora', 'py-secret'); k.set_password('svc', 'eve', 'py-2')"
        // The python3 the tests run with, whose site-packages hold keyring (pip, as the Python suite uses it).
        var env = f.env
        env["PATH"] = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
        let made = try run("/usr/bin/env", ["python3", "-c", script], environment: env)
        try #require(made.status == 0, "python keyring: \(made.stderr.suffix(600))")
        let r = try f.cli("import", "secret-service", "--attr", "service=svc", "--key-from", "username", "--json")
        #expect(r.status == 0, "\(r.stderr)")
        #expect(f.report(r)["imported"] == ["dora", "eve"])
        #expect(try f.cli("get", "dora").out == "py-secret")
    }

    @Test func aLockedKeyringIsInteractionWithNoInput() throws {
        let f = try Fixture()
        try f.store("alice-secret", ["app", "demo", "user", "alice"])
        try f.service.lock()
        let r = try f.cli("import", "secret-service", "--attr", "app=demo", "--key-from", "user", "--no-input", "--json")
        #expect(r.status == 4)
        #expect(jsonErrorCode(r) == "interaction-required")
        #expect(!exists(f.box.storePath))
    }

    /// `--remove-source` with each write, fsync, rename and pread64 of the CLI (and of the
    /// threads libsecret starts) that is not on the bus socket failing in turn: an item is gone
    /// from the keyring only when its record reads back from the store with its secret. Each run
    /// imports into a store of its own.
    @Test func everyFailingCallDeletesOnlyItemsThatReadBack() throws {
        let f = try Fixture()
        let secrets = ["alice": "alice-secret", "bob": "bob-secret"]
        func makeItems() throws { for (user, secret) in secrets { try f.store(secret, ["app", "faults", "user", user]) } }
        func environment(_ run: Int) -> [String: String] { f.env.merging(["KEYBAY_APP_ID": "com.example.faults\(run)"]) { $1 } }
        let arguments = ["import", "secret-service", "--attr", "app=faults", "--key-from", "user", "--remove-source", "--no-input"]
        try makeItems()
        let trace = f.box.root + "/trace"
        let clean = try run("/usr/bin/strace", ["-f", "-qq", "-y", "-o", trace, "-e", "trace=" + FaultInjectionTests.calls.joined(separator: ","), cliPath]
                            + arguments, environment: environment(0))
        #expect(clean.status == 0, "undisturbed: \(clean.stderr)")
        let made = FaultInjectionTests.parseTrace(readBytes(trace) ?? [])
        var runs = 0
        for call in FaultInjectionTests.calls {
            // GLib's own wake-ups (eventfd) and the bus socket are left alone: a lost one costs
            // GDBus's 25-second reply timeout, and the deletions come after every store call anyway.
            for (n, targets) in FaultInjectionTests.invocations(made[call, default: []])
            where !targets.allSatisfy(FaultInjectionTests.isSharedLibrary) && !targets.allSatisfy({ $0.contains("socket:") || $0.contains("anon_inode") }) {
                runs += 1
                try makeItems()
                let env = environment(runs)
                let r = try run("/usr/bin/strace", ["-f", "-qq", "-o", "/dev/null", "-e", "trace=\(call)", "-e", "inject=\(call):error=EIO:when=\(n)", cliPath]
                                + arguments, environment: env)
                let what = "\(call) #\(n) (\(targets[0])) failing: exit \(r.status), \(r.stderr.suffix(300))"
                #expect(!r.signalled, "\(what)")
                let left = try Set(f.service.items(["app": "faults"]).compactMap { try f.service.attribute("user", of: $0) })
                for (user, secret) in secrets where !left.contains(user) {
                    let back = try run(cliPath, ["get", user, "--no-input"], environment: env)
                    #expect(back.status == 0 && back.out == secret, "\(what): the item of \(user) was deleted but its record does not read back")
                }
            }
        }
        #expect(runs >= 10, "only \(runs) runs")
    }
}
