// SPDX-License-Identifier: Apache-2.0
import Foundation
import Glibc
import Testing
@testable import Keybay

/// The tpm2 root's signed policy with systemd-measure itself (Debian's systemd ships
/// /usr/lib/systemd/systemd-measure): it signs the PCR 11 values of a unified kernel image's
/// boot phases (it reaches the swtpm with --tpm2-device for its policy digests), the swtpm's PCR
/// 11 is extended as systemd-stub and systemd-pcrphase extend it, and the root opens in each
/// signed phase and in no other.
@Suite struct Tpm2SystemdMeasureTests {
    static let measure = "/usr/lib/systemd/systemd-measure"

    @Test func aSignatureBySystemdMeasureOpensTheStoreInEachSignedPhase() throws {
        guard FileManager.default.isExecutableFile(atPath: Self.measure) else {
            throw KeybayTestFailure("\(Self.measure) is missing (Debian: systemd 252 or later)")
        }
        let tpm = try SoftwareTPM(), box = Sandbox(), root = RootUnderTest.tpm2(tpm)
        let signer = try PCRSigner(box.root, name: "uki", algorithm: "RSA")
        let sections = [(".linux", "linux", "a kernel"), (".osrel", "osrel", "ID=keybay-test\n"), (".cmdline", "cmdline", "quiet\n")]
        var arguments = ["sign", "--bank=sha256", "--phase=enter-initrd", "--phase=enter-initrd:leave-initrd",
                         "--private-key=" + signer.privateKey, "--public-key=" + signer.publicKey, "--tpm2-device=" + tpm.tcti]
        for (section, option, content) in sections {
            try content.write(toFile: box.root + "/" + option, atomically: true, encoding: .utf8)
            arguments.append("--\(option)=" + box.root + "/" + option)
        }
        let signed = try run(Self.measure, arguments, environment: ["PATH": "/usr/bin:/bin", "SYSTEMD_LOG_LEVEL": "err"])
        try #require(signed.status == 0, "systemd-measure sign: \(signed.stderr)")
        let signatures = box.root + "/tpm2-pcr-signature.json"
        try Data(signed.stdout).write(to: URL(fileURLWithPath: signatures))

        // As systemd-stub measures each section (its name with the NUL, then its contents) and
        // systemd-pcrphase each phase's name.
        func extend(_ bytes: [UInt8]) throws {
            let digest = SHA256.hash(bytes).map { String(format: "%02x", $0) }.joined()
            try #require(try tpm.tools("tpm2_pcrextend", "11:sha256=" + digest).status == 0)
        }
        for (section, _, content) in sections {
            try extend(Array(section.utf8) + [0])
            try extend(Array(content.utf8))
        }
        try extend(Array("enter-initrd".utf8))
        let made = try root.cli(box, ["init", "--opt", "pcr-public-key=" + signer.publicKey, "--opt", "pcr-signature=" + signatures])
        #expect(made.status == 0, "\(made.stderr)")
        #expect(try root.cli(box, ["set", "k", "v"]).status == 0)
        try extend(Array("leave-initrd".utf8))
        let next = try root.cli(box, ["get", "k"])
        #expect(next.status == 0 && next.out == "v", "the next signed phase opens with nothing re-sealed: \(next.stderr)")
        try extend(Array("sysinit".utf8))
        let unsigned = try root.cli(box, ["get", "k", "--json"])
        #expect(unsigned.status == 1 && unsigned.error?.reason == "pcr-mismatch" && unsigned.error?.pcrs == [11], "\(unsigned.out)")
    }
}
