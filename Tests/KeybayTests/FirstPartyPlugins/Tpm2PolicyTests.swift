// SPDX-License-Identifier: Apache-2.0
import Foundation
import Glibc
import Testing
@testable import Keybay

/// The tpm2 root's platform policy on a swtpm: the PCR values recorded at sealing (docs/format.md
/// §12, version 2), `pcr-mismatch` naming the PCRs that changed, `root check`, `status` and
/// `init`'s warning.
@Suite struct Tpm2PolicyTests {
    static let extendDigest = String(repeating: "ab", count: 32)

    /// The JSON object `--json` printed as its one line.
    static func object(_ r: RunResult) -> [String: Any]? {
        try? JSONSerialization.jsonObject(with: Data(r.out.utf8)) as? [String: Any]
    }

    /// The SHA-256 values of `pcrs` as tpm2_pcrread reads them, concatenated in PCR order.
    static func pcrValues(_ tpm: SoftwareTPM, _ pcrs: [Int], in box: Sandbox) throws -> [UInt8] {
        let out = box.root + "/pcrs.bin"
        let r = try tpm.tools("tpm2_pcrread", "sha256:" + pcrs.map(String.init).joined(separator: ","), "-o", out)
        try #require(r.status == 0, "\(r.stderr)")
        return try #require(readBytes(out))
    }

    @Test func aChangedPCRIsNamedAndCheckedWithoutUnsealing() throws {
        let tpm = try SoftwareTPM(), box = Sandbox(), root = RootUnderTest.tpm2(tpm)
        let made = try root.cli(box, ["init", "--opt", "pcrs=0,7", "--json"])
        #expect(made.status == 0, "\(made.stderr)")
        let warnings = Self.object(made)?["warnings"] as? [[String: Any]]
        #expect(warnings?.count == 1 && warnings?.first?["reason"] as? String == "pcr-change-loses-store"
                && (warnings?.first?["pcrs"] as? [Int]) == [0, 7], "\(made.out)")
        #expect(made.stderr.contains("warning:"), "the warning is on standard error too")

        // Version 2, the bound PCRs' values at sealing in the last field (tag 0x8001, 2 × 32 bytes).
        let file = try #require(readBytes(Tpm2Tests.rootPath(box)))
        #expect(Array(file[4..<6]) == [0, 2] && Array(file[18..<22]) == [0, 0, 0, 0x81], "version 2, PCRs 0 and 7")
        let values = try Self.pcrValues(tpm, [0, 7], in: box)
        #expect(values.count == 64 && Array(file.suffix(68)) == [0x80, 0x01, 0, 64] + values, "the values recorded are the PCRs' at sealing")

        #expect(try root.cli(box, ["set", "k", "v"]).status == 0)
        let fine = try root.cli(box, ["root", "check", "--json"])
        #expect(fine.status == 0 && Self.object(fine)?["opens"] as? Bool == true, "\(fine.out)\(fine.stderr)")
        let status = Self.object(try root.cli(box, ["status", "--json"]))?["rootPolicy"] as? [String: Any]
        #expect(status?["policy"] as? String == "pcrs" && (status?["pcrs"] as? [Int]) == [0, 7] && status?["satisfied"] as? Bool == true
                && status?["recovery"] as? Bool == false, "\(String(describing: status))")

        #expect(try tpm.tools("tpm2_pcrextend", "7:sha256=" + Self.extendDigest).status == 0)
        let got = try root.cli(box, ["get", "k", "--json"])
        #expect(got.status == 1 && got.error?.code == "platform-key-invalidated" && got.error?.reason == "pcr-mismatch" && got.error?.pcrs == [7],
                "\(got.out)")
        let check = try root.cli(box, ["root", "check", "--json"])
        #expect(check.status == 1 && check.error?.reason == "pcr-mismatch" && check.error?.pcrs == [7], "\(check.out)")
        let after = Self.object(try root.cli(box, ["status", "--json"]))?["rootPolicy"] as? [String: Any]
        #expect(after?["satisfied"] as? Bool == false && (after?["differingPcrs"] as? [Int]) == [7], "\(String(describing: after))")
        #expect(try tpm.handles("handles-transient").isEmpty, "the check left nothing loaded")
    }

    /// A root without PCRs is written as before (version 1), has no policy, warns of nothing,
    /// and its check reads the file alone.
    @Test func aRootWithoutPCRsIsVersionOneWithNoPolicy() throws {
        let tpm = try SoftwareTPM(), box = Sandbox(), root = RootUnderTest.tpm2(tpm)
        let made = try root.cli(box, ["init", "--json"])
        #expect(made.status == 0 && Self.object(made)?["warnings"] == nil && !made.stderr.contains("warning"), "\(made.out)\(made.stderr)")
        let file = try #require(readBytes(Tpm2Tests.rootPath(box)))
        #expect(Array(file[4..<6]) == [0, 1], "version 1")
        let check = try root.cli(box, ["root", "check", "--json"])
        let policy = Self.object(check)?["policy"] as? [String: Any]
        #expect(check.status == 0 && policy?["policy"] as? String == "none", "\(check.out)\(check.stderr)")
    }
}
