// SPDX-License-Identifier: Apache-2.0
import Foundation
import Glibc
import Testing
@testable import Keybay

/// Root recovery of the tpm2 root on a swtpm (`init --opt recovery=yes`, `root reseal`): after a
/// bound PCR changes, the recovery key seals the root again; wrong keys count toward the TPM's
/// lockout; another machine's TPM opens nothing.
@Suite struct Tpm2RootRecoveryTests {
    /// `init` with recovery: its exit status, the recovery key `--json` printed, and the output.
    static func initWithRecovery(_ root: RootUnderTest, _ box: Sandbox, pcrs: String = "7") throws -> (key: String, object: [String: Any]) {
        let made = try root.cli(box, ["init", "--opt", "pcrs=" + pcrs, "--opt", "recovery=yes", "--json"])
        try #require(made.status == 0, "\(made.stderr)")
        let object = try #require(Tpm2PolicyTests.object(made))
        return (try #require(object["recoveryKey"] as? String), object)
    }

    /// `root reseal` with `key` on descriptor 3.
    static func reseal(_ root: RootUnderTest, _ box: Sandbox, _ key: String) throws -> RunResult {
        try box.cli(["root", "reseal", "--json"], secret: key, option: "--recovery-key-fd", environment: root.environment(box))
    }

    @Test func aPCRChangeIsUndoneByTheRecoveryKeyAndWrongKeysCountTowardTheLockout() throws {
        let tpm = try SoftwareTPM(), box = Sandbox(), root = RootUnderTest.tpm2(tpm)
        let (key, made) = try Self.initWithRecovery(root, box)
        #expect(key.count == 62 && key.split(separator: "-").count == 7, "the recovery key's format: \(key)")
        #expect(made["warnings"] == nil && made["initialized"] as? Bool == true, "no warning with recovery")
        #expect(try root.cli(box, ["set", "k", "v"]).status == 0)
        let policy = Tpm2PolicyTests.object(try root.cli(box, ["status", "--json"]))?["rootPolicy"] as? [String: Any]
        #expect(policy?["recovery"] as? Bool == true, "\(String(describing: policy))")

        #expect(try tpm.tools("tpm2_pcrextend", "7:sha256=" + Tpm2PolicyTests.extendDigest).status == 0)
        let lost = try root.cli(box, ["get", "k", "--json"])
        #expect(lost.status == 1 && lost.error?.reason == "pcr-mismatch" && lost.error?.pcrs == [7], "\(lost.out)")

        // Another store's recovery key is well formed: the TPM refuses it and counts it.
        let other = Sandbox(app: "com.example.other")
        let (otherKey, _) = try Self.initWithRecovery(root, other, pcrs: "0")
        let rootFile = readBytes(Tpm2Tests.rootPath(box)), store = readBytes(box.storePath)
        let before = try Tpm2PinTests.lockoutCounter(tpm)
        let wrong = try Self.reseal(root, box, otherKey)
        #expect(wrong.status == 1 && wrong.error?.code == "wrong-secret" && wrong.error?.reason == "wrong-recovery-key"
                && wrong.error?.triesLeft != nil, "\(wrong.out)")
        #expect(try Tpm2PinTests.lockoutCounter(tpm) == before + 1, "the wrong key counted toward the lockout")
        // A typo is told before the TPM is asked: it counts nothing.
        let typo = try Self.reseal(root, box, String(key.dropLast()) + (key.last == "0" ? "1" : "0"))
        #expect(typo.status == 1 && typo.error?.code == "wrong-secret" && typo.error?.reason == "typo-checksum", "\(typo.out)")
        #expect(try Tpm2PinTests.lockoutCounter(tpm) == before + 1)
        #expect(readBytes(Tpm2Tests.rootPath(box)) == rootFile && readBytes(box.storePath) == store, "a refused key changed nothing")

        let back = try Self.reseal(root, box, key.lowercased().replacingOccurrences(of: "-", with: " "))
        #expect(back.status == 0, "\(back.out)\(back.stderr)")
        let got = try root.cli(box, ["get", "k"])
        #expect(got.status == 0 && got.out == "v", "\(got.stderr)")
        #expect(readBytes(box.storePath) == store, "the store file is not rewritten")
        #expect(readBytes(Tpm2Tests.rootPath(box)) != rootFile, "the root file holds the new object")
        #expect(try root.cli(box, ["root", "check"]).status == 0)
        #expect(try tpm.handles("handles-transient").isEmpty, "nothing left loaded")
    }

    /// Copies of both directories on another machine (a fresh swtpm) open nothing, recovery key or not.
    @Test func anotherMachinesTPMOpensNothingWithTheRecoveryKey() throws {
        let tpm = try SoftwareTPM(), box = Sandbox()
        let (key, _) = try Self.initWithRecovery(.tpm2(tpm), box)
        #expect(try RootUnderTest.tpm2(tpm).cli(box, ["set", "k", "v"]).status == 0)
        let other = RootUnderTest.tpm2(try SoftwareTPM())
        let r = try Self.reseal(other, box, key)
        #expect(r.status == 1 && r.error?.code == "platform-key-invalidated" && r.error?.reason == "foreign-object", "\(r.out)")
        #expect(try other.cli(box, ["get", "k", "--json"]).error?.code == "platform-key-invalidated")
    }

    /// A root without recovery says so; init's option is checked.
    @Test func withoutRecoveryThereIsNothingToReseal() throws {
        let tpm = try SoftwareTPM(), box = Sandbox(), root = RootUnderTest.tpm2(tpm)
        #expect(try root.cli(box, ["init", "--opt", "pcrs=7"]).status == 0)
        let r = try Self.reseal(root, box, String(repeating: "0", count: 56))
        #expect(r.status == 1 && r.error?.code == "unsupported" && r.error?.reason == "no-root-recovery", "\(r.out)")
        let bad = try root.cli(Sandbox(), ["init", "--opt", "recovery=maybe", "--json"])
        #expect(bad.status == 2 && bad.error?.reason == "invalid-recovery", "\(bad.out)")
    }
}

extension Tpm2RootRecoveryTests {
    /// keybay_root_reseal from a C host (Tests/capi/root_reseal.c, built against the installed
    /// prefix): a wrong key is `wrong-secret` `wrong-recovery-key`, the right one brings the
    /// store back after the PCR change.
    @Test func theCAPIResealsTheRoot() throws {
        let prefix = try CAPITests.installed.get()
        let program = try CAPITests.built(prefix, as: "root_reseal", from: "root_reseal.c")
        let tpm = try SoftwareTPM(), box = Sandbox(app: "com.example.c-reseal"), root = RootUnderTest.tpm2(tpm)
        let (key, _) = try Self.initWithRecovery(root, box)
        #expect(try root.cli(box, ["set", "k", "v"]).status == 0)
        #expect(try tpm.tools("tpm2_pcrextend", "7:sha256=" + Tpm2PolicyTests.extendDigest).status == 0)
        var environment = root.environment(box)
        environment["KEYBAY_PLUGIN_PATH"] = nil // the installed library finds the installed plugins
        let other = Sandbox(app: "com.example.c-other")
        let (otherKey, _) = try Self.initWithRecovery(root, other, pcrs: "0")
        let wrong = try run(program, [otherKey], environment: environment)
        #expect(wrong.status == 0 && wrong.out == "wrong-secret wrong-recovery-key\n", "\(wrong.out) \(wrong.stderr)")
        let right = try run(program, [key], environment: environment)
        #expect(right.status == 0 && right.out == "ok\n", "\(right.out) \(right.stderr)")
        #expect(try root.cli(box, ["get", "k"]).out == "v")
    }
}
