// SPDX-License-Identifier: Apache-2.0
import Foundation
import Testing
@testable import Keybay

/// `export` and `import age` through the CLI, checked with Debian's `age` and `age-keygen`: the
/// issue's acceptance, the conflict rules, dry runs, and the agent rule.
@Suite struct ExportImportCLITests {
    func keygen(_ box: Sandbox) throws -> (path: String, recipient: String) {
        let path = box.root + "/key.txt"
        try #require(try run("/usr/bin/age-keygen", ["-o", path], environment: box.environment).status == 0)
        let recipient = try run("/usr/bin/age-keygen", ["-y", path], environment: box.environment).out
        return (path, recipient.trimmingCharacters(in: .whitespacesAndNewlines))
    }

    func ageDecrypt(_ file: [UInt8], _ identity: String, _ box: Sandbox) throws -> RunResult {
        writeBytes(box.root + "/out.age", file)
        return try run("/usr/bin/age", ["-d", "-i", identity, box.root + "/out.age"], environment: box.environment)
    }

    /// A file made outside Keybay: the layout by hand, encrypted by `age -r`.
    func handMade(_ layout: String, to recipient: String, _ box: Sandbox) throws -> String {
        writeBytes(box.root + "/layout", Array(layout.utf8))
        let path = box.root + "/hand.age"
        let r = try run("/usr/bin/age", ["-r", recipient, "-o", path, box.root + "/layout"], environment: box.environment)
        try #require(r.status == 0, "\(r.stderr)")
        return path
    }

    @Test func ageDecryptsTheExportToTheDocumentedLayout() throws {
        let box = Sandbox()
        let key = try keygen(box)
        try #require(try box.cli("set", "alice", "s3cret").status == 0)
        try #require(try box.cli("set", "ci/token", "").status == 0)
        try #require(try box.cli("set", "bob", "hunter2").status == 0)
        let all = try box.cli("export", "--to", key.recipient)
        #expect(all.status == 0, "\(all.stderr)")
        #expect(all.stdout.starts(with: Array("age-encryption.org/v1\n".utf8)))
        #expect(try ageDecrypt(all.stdout, key.path, box).out == "keybay-export/v1\nalice czNjcmV0\nbob aHVudGVyMg==\nci/token \n")
        // Selected keys, and a recipients file with a comment and a second recipient.
        let other = KeybayAge.generateIdentity()
        writeBytes(box.root + "/recipients", Array("# team\n\(other.recipient)\n\(key.recipient)\n".utf8))
        let some = try box.cli("export", "--to-file", box.root + "/recipients", "alice")
        #expect(try ageDecrypt(some.stdout, key.path, box).out == "keybay-export/v1\nalice czNjcmV0\n")
    }

    @Test func refusalsNameTheCause() throws {
        let box = Sandbox()
        try #require(try box.cli("set", "alice", "s3cret").status == 0)
        #expect(try box.cli("export").status == 2)
        #expect(jsonErrorCode(try box.cli("export", "--json", "--to", "age1notarecipient")) == "invalid-argument")
        let key = try keygen(box)
        #expect(try box.cli("export", "--to", key.recipient, "missing").status == 2)
        // An identity file that holds something else never has it printed.
        writeBytes(box.root + "/bad.txt", Array("AGE-SECRET-KEY-1SECRETMARKER\n".utf8))
        let bad = try box.cli("import", "age", "--identity", box.root + "/bad.txt", box.root + "/none")
        #expect(bad.status == 2)
        #expect(!bad.stderr.contains("SECRETMARKER") && !bad.out.contains("SECRETMARKER"))
    }

    @Test func aHandMadeFileImportsWithTheConflictRules() throws {
        let box = Sandbox()
        let key = try keygen(box)
        try #require(try box.cli("set", "alice", "old").status == 0)
        try #require(try box.cli("set", "carol", "same").status == 0)
        let path = try handMade("keybay-export/v1\nbob aHVudGVyMg==\nalice bmV3\ncarol c2FtZQ==\n", to: key.recipient, box)
        let before = readBytes(box.storePath)

        let dry = try box.cli("import", "age", "--identity", key.path, "--dry-run", "--json", path)
        #expect(dry.status == 1)
        #expect(dry.out.hasPrefix(#"{"imported":["bob"],"unchanged":["carol"],"conflicts":["alice"],"replaced":[],"dryRun":true}"#))
        #expect(readBytes(box.storePath) == before)

        let kept = try box.cli("import", "age", "--identity", key.path, "--json", path)
        #expect(kept.status == 1)
        #expect(kept.out.hasPrefix(#"{"imported":["bob"],"unchanged":["carol"],"conflicts":["alice"],"replaced":[],"dryRun":false}"#))
        #expect(try box.cli("get", "alice").out == "old")
        #expect(try box.cli("get", "bob").out == "hunter2")

        let replaced = try box.cli("import", "age", "--identity", key.path, "--replace", "--json", stdin: readBytes(path))
        #expect(replaced.status == 0, "\(replaced.stderr)")
        #expect(replaced.out.hasPrefix(#"{"imported":[],"unchanged":["bob","carol"],"conflicts":[],"replaced":["alice"],"dryRun":false}"#))
        #expect(try box.cli("get", "alice").out == "new")
    }

    @Test func aDamagedOrForeignFileChangesNothing() throws {
        let box = Sandbox()
        let key = try keygen(box)
        try #require(try box.cli("set", "alice", "old").status == 0)
        let before = readBytes(box.storePath)
        let path = try handMade("keybay-export/v1\nbob aHVudGVyMg==\n", to: key.recipient, box)
        var damaged = try #require(readBytes(path))
        damaged[damaged.count - 3] ^= 1
        #expect(jsonErrorCode(try box.cli("import", "age", "--identity", key.path, "--json", stdin: damaged)) == "integrity")
        let other = KeybayAge.generateIdentity()
        writeBytes(box.root + "/other.txt", other.identity.withUnsafeBytes { Array($0) } + [0x0a])
        #expect(jsonErrorCode(try box.cli("import", "age", "--identity", box.root + "/other.txt", "--json", path)) == "wrong-secret")
        let notLayout = try handMade("alice c2VjcmV0\n", to: key.recipient, box)
        #expect(jsonErrorCode(try box.cli("import", "age", "--identity", key.path, "--json", notLayout)) == "malformed")
        #expect(readBytes(box.storePath) == before)
    }

    @Test func throughTheAgentOnlyWithAllowAgent() throws {
        let agent = AgentSandbox()
        try agent.makeProtectedStore([("alice", "s3cret")])
        try #require(try agent.unlock("5m").status == 0)
        let key = try keygen(agent.box)
        // Unlocked in the agent, the export still needs the passphrase...
        let asked = try agent.cli("export", "--no-input", "--json", "--to", key.recipient)
        #expect(asked.status == 4)
        #expect(jsonErrorCode(asked) == "interaction-required")
        let withPassphrase = try agent.withPassphrase(["export", "--to", key.recipient])
        #expect(withPassphrase.status == 0)
        #expect(try ageDecrypt(withPassphrase.stdout, key.path, agent.box).out == "keybay-export/v1\nalice czNjcmV0\n")
        // ...unless the agent is allowed.
        let allowed = try agent.cli("export", "--no-input", "--allow-agent", "--to", key.recipient)
        #expect(allowed.status == 0, "\(allowed.stderr)")
        #expect(try ageDecrypt(allowed.stdout, key.path, agent.box).out == "keybay-export/v1\nalice czNjcmV0\n")
    }
}
