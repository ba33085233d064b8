// SPDX-License-Identifier: Apache-2.0
import Foundation
import Glibc
import Testing
@testable import Keybay

/// `root reseal` cut short at every fsync, rename and TPM command (tss2's swtpm TCTI writes each
/// command to its socket with `write`): with the call failing (EIO) and with the process SIGKILLed there
/// (strace `-e inject`). Each run leaves the new root in place (the store opens) or the old one
/// byte for byte, which a second `root reseal` with the same key brings back: never neither.
/// Every fsync and rename always; of the TPM commands, the first, the last and every third by
/// default, every one with `KEYBAY_TPM2_FAULTS_ALL=1` (the long run: about three times as long).
@Suite struct Tpm2RootRecoveryFaultTests {
    static let calls = ["fsync", "fdatasync", "rename", "renameat", "renameat2", "write"]

    /// A call worth cutting short: not the loader's, and a write only to the TPM's socket.
    static func counts(_ call: String, _ targets: [String]) -> Bool {
        call == "write" ? targets.contains { $0.contains("socket:") } : !targets.allSatisfy(FaultInjectionTests.isSharedLibrary)
    }

    /// The TPM commands (the `index`th of `count` socket writes) the run cuts short.
    static func cutsCommand(_ index: Int, of count: Int) -> Bool {
        getenv("KEYBAY_TPM2_FAULTS_ALL") != nil || index == 0 || index == count - 1 || index % 3 == 0
    }

    @Test func everyCallOfARootResealFailingOrKilledLeavesTheOldRootOrTheNew() throws {
        let tpm = try SoftwareTPM(), template = Sandbox(), root = RootUnderTest.tpm2(tpm)
        let (key, _) = try Tpm2RootRecoveryTests.initWithRecovery(root, template)
        #expect(try root.cli(template, ["set", "k", "v"]).status == 0)
        #expect(try tpm.tools("tpm2_pcrextend", "7:sha256=" + Tpm2PolicyTests.extendDigest).status == 0)
        let oldRoot = try #require(readBytes(Tpm2Tests.rootPath(template)))
        let env = { (box: Sandbox) in root.environment(box) }
        let arguments = ["root", "reseal", "--recovery-key-fd", "0"]

        // The calls an undisturbed reseal of a copy makes.
        let traced = try FaultInjectionTests.copy(template), trace = traced.root + "/trace"
        let undisturbed = try run("/usr/bin/strace", ["-f", "-qq", "-y", "-o", trace, "-e", "trace=" + Self.calls.joined(separator: ","), cliPath]
                                  + arguments, environment: env(traced), stdin: Array(key.utf8))
        #expect(undisturbed.status == 0, "\(undisturbed.stderr)")
        let made = FaultInjectionTests.parseTrace(readBytes(trace) ?? [])
        #expect(made["fsync", default: []].count >= 2 && made["write", default: []].filter { $0.target.contains("socket:") }.count >= 10
                && made["rename", default: []].count + made["renameat", default: []].count + made["renameat2", default: []].count >= 1,
                "strace saw too few calls: \(made.mapValues(\.count))")

        var runs = 0, newRoots = 0, oldRoots = 0
        for call in Self.calls {
            let cut = FaultInjectionTests.invocations(made[call, default: []]).filter { Self.counts(call, $0.targets) }
            for (index, (n, targets)) in cut.enumerated() where call != "write" || Self.cutsCommand(index, of: cut.count) {
                for injection in ["error=EIO", "signal=KILL"] {
                    let box = try FaultInjectionTests.copy(template)
                    let what = "\(call) #\(n) on \(targets) with \(injection)"
                    let r = try run("/usr/bin/strace", ["-f", "-qq", "-o", "/dev/null", "-e", "trace=\(call)", "-e", "inject=\(call):\(injection):when=\(n)",
                                                        cliPath] + arguments, environment: env(box), stdin: Array(key.utf8))
                    if injection == "error=EIO" { #expect(!r.signalled && (r.status == 0 || r.status == 1), "\(what): \(r.status) \(r.stderr)") }
                    let got = try root.cli(box, ["get", "k"])
                    if got.status == 0 {
                        #expect(got.out == "v", "\(what)")
                        newRoots += 1
                    } else {
                        #expect(readBytes(Tpm2Tests.rootPath(box)) == oldRoot, "\(what): the store does not open and the old root changed: \(got.stderr)")
                        let retried = try run(cliPath, arguments, environment: env(box), stdin: Array(key.utf8))
                        #expect(retried.status == 0, "\(what): a second reseal: \(retried.stderr)")
                        #expect(try root.cli(box, ["get", "k"]).out == "v", "\(what): after the second reseal")
                        oldRoots += 1
                    }
                    runs += 1
                }
            }
        }
        #expect(runs >= 20 && newRoots > 0 && oldRoots > 0, "runs \(runs), new \(newRoots), old \(oldRoots)")
    }
}
