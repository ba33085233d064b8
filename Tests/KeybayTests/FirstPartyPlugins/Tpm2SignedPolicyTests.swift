// SPDX-License-Identifier: Apache-2.0
import Foundation
import Glibc
import Testing
@testable import Keybay

/// A PCR signer as systemd-measure is one, made with openssl: a key pair, and
/// tpm2-pcr-signature.json entries signing the PolicyPCR digest of given PCR 11 values.
struct PCRSigner {
    let directory: String
    let name: String
    var privateKey: String { directory + "/\(name).key.pem" }
    var publicKey: String { directory + "/\(name).pub.pem" }

    /// `algorithm`: "RSA" (2048 bits) or "EC" (P-256).
    init(_ directory: String, name: String, algorithm: String) throws {
        self.directory = directory
        self.name = name
        let options = algorithm == "RSA" ? ["-pkeyopt", "rsa_keygen_bits:2048"] : ["-pkeyopt", "ec_paramgen_curve:P-256"]
        try Self.succeeded(run("/usr/bin/openssl", ["genpkey", "-algorithm", algorithm] + options + ["-out", privateKey], environment: [:]), 0)
        try Self.succeeded(run("/usr/bin/openssl", ["pkey", "-in", privateKey, "-pubout", "-out", publicKey], environment: [:]), 0)
    }

    /// systemd's `pkfp`: SHA-256 of the key as OpenSSL's i2d_PublicKey writes it, the PKCS#1
    /// RSAPublicKey for RSA (`openssl rsa -RSAPublicKey_out`), the uncompressed point for EC (the
    /// last 65 bytes of the SubjectPublicKeyInfo).
    func fingerprint() throws -> [UInt8] {
        let rsa = try run("/usr/bin/openssl", ["rsa", "-pubin", "-in", publicKey, "-RSAPublicKey_out", "-outform", "DER"], environment: [:])
        if rsa.status == 0 { return SHA256.hash(rsa.stdout) }
        let der = try run("/usr/bin/openssl", ["pkey", "-pubin", "-in", publicKey, "-outform", "DER"], environment: [:])
        try Self.succeeded(der, 0)
        return SHA256.hash(Array(der.stdout.suffix(65)))
    }

    /// The PolicyPCR digest (SHA-256 bank) of PCRs `pcrs` holding `values` (docs/format.md §12).
    static func policy(pcrs: [Int], values: [[UInt8]]) -> [UInt8] {
        var mask: UInt32 = 0
        for p in pcrs { mask |= 1 << UInt32(p) }
        let head = [UInt8](repeating: 0, count: 32) + [0, 0, 0x01, 0x7f, 0, 0, 0, 1, 0, 0x0b, 3, UInt8(mask & 0xff), UInt8(mask >> 8 & 0xff), UInt8(mask >> 16 & 0xff)]
        return SHA256.hash(head + SHA256.hash(values.flatMap { $0 }))
    }

    /// openssl's signature over SHA-256(policy) (PKCS#1 v1.5 for RSA, DER ECDSA for EC).
    func sign(_ policy: [UInt8]) throws -> [UInt8] {
        let input = directory + "/pol-\(UUID().uuidString)", output = input + ".sig"
        try Data(policy).write(to: URL(fileURLWithPath: input))
        try Self.succeeded(run("/usr/bin/openssl", ["dgst", "-sha256", "-sign", privateKey, "-out", output, input], environment: [:]), 0)
        return try #require(readBytes(output))
    }

    /// One sha256 entry: signed by `self` unless `signedBy` says otherwise, for PCR 11 = `value`.
    func entry(pcr11 value: [UInt8], signedBy: PCRSigner? = nil) throws -> String {
        let pol = Self.policy(pcrs: [11], values: [value])
        let sig = try (signedBy ?? self).sign(pol)
        return "{\"pcrs\":[11],\"pkfp\":\"\(hex(try fingerprint()))\",\"pol\":\"\(hex(pol))\",\"sig\":\"\(Data(sig).base64EncodedString())\"}"
    }

    func hex(_ bytes: [UInt8]) -> String { bytes.map { String(format: "%02x", $0) }.joined() }

    /// Throws unless `r` exited with `status` (openssl failing is the test's failure, loudly).
    static func succeeded(_ r: RunResult, _ status: Int32) throws {
        guard r.status == status else { throw KeybayTestFailure("exit \(r.status): \(r.stderr)") }
    }
}

/// Signed PCR policies of the tpm2 root on a swtpm (`--opt pcr-public-key=`, `--opt pcr-signature=`).
@Suite struct Tpm2SignedPolicyTests {
    static func write(_ entries: [String], to path: String) throws {
        try ("{\"sha256\":[" + entries.joined(separator: ",") + "]}\n").write(toFile: path, atomically: true, encoding: .utf8)
    }

    static func pcr11(_ tpm: SoftwareTPM, _ box: Sandbox) throws -> [UInt8] { try Tpm2PolicyTests.pcrValues(tpm, [11], in: box) }

    @Test(arguments: ["RSA", "EC"])
    func aNewSignatureOpensTheStoreAfterPCR11ChangesAndNothingElseDoes(_ algorithm: String) throws {
        let tpm = try SoftwareTPM(), box = Sandbox(), root = RootUnderTest.tpm2(tpm)
        let signer = try PCRSigner(box.root, name: "signer", algorithm: algorithm), other = try PCRSigner(box.root, name: "other", algorithm: algorithm)
        let signatures = box.root + "/tpm2-pcr-signature.json"
        try Self.write([try signer.entry(pcr11: try Self.pcr11(tpm, box))], to: signatures)
        let made = try root.cli(box, ["init", "--opt", "pcr-public-key=" + signer.publicKey, "--opt", "pcr-signature=" + signatures, "--json"])
        #expect(made.status == 0 && Tpm2PolicyTests.object(made)?["warnings"] == nil, "\(made.out)\(made.stderr)")
        #expect(try root.cli(box, ["set", "k", "v"]).status == 0)
        #expect(try root.cli(box, ["get", "k"]).out == "v")
        let policy = Tpm2PolicyTests.object(try root.cli(box, ["status", "--json"]))?["rootPolicy"] as? [String: Any]
        let fingerprint = signer.hex(try signer.fingerprint())
        #expect(policy?["policy"] as? String == "signed" && (policy?["pcrs"] as? [Int]) == [11] && policy?["satisfied"] as? Bool == true
                && policy?["key"] as? String == fingerprint, "\(String(describing: policy))")

        // An update: PCR 11 moves; the old signature matches nothing.
        #expect(try tpm.tools("tpm2_pcrextend", "11:sha256=" + Tpm2PolicyTests.extendDigest).status == 0)
        let lost = try root.cli(box, ["get", "k", "--json"])
        #expect(lost.status == 1 && lost.error?.code == "platform-key-invalidated" && lost.error?.reason == "pcr-mismatch" && lost.error?.pcrs == [11],
                "\(lost.out)")
        #expect(try root.cli(box, ["root", "check", "--json"]).error?.pcrs == [11])
        let now = try Self.pcr11(tpm, box)
        // Another key's signature for the values now, and one that claims the right key but is
        // another's, and the right key's for other values: none opens the store.
        for (what, entries) in [("another key's", [try other.entry(pcr11: now)]), ("a forged", [try signer.entry(pcr11: now, signedBy: other)]),
                                ("other values'", [try signer.entry(pcr11: [UInt8](repeating: 7, count: 32))])] {
            try Self.write(entries, to: signatures)
            let r = try root.cli(box, ["get", "k", "--json"])
            #expect(r.status == 1 && r.error?.reason == "pcr-mismatch", "\(what) signature: \(r.out)")
        }
        // The new kernel's signature in place, and nothing run in between: it opens.
        try Self.write([try other.entry(pcr11: now), try signer.entry(pcr11: now)], to: signatures)
        let back = try root.cli(box, ["get", "k"])
        #expect(back.status == 0 && back.out == "v", "\(back.stderr)")
        #expect(try root.cli(box, ["root", "check"]).status == 0)
        #expect(try tpm.handles("handles-transient").isEmpty, "nothing left loaded")
    }

    /// Root recovery beside a signed policy: `root reseal` seals the root again under the same
    /// key's policy, so it needs a signature for the state in effect (it checks that the new
    /// object unseals); without one it changes nothing.
    @Test func rootRecoveryBesideASignedPolicyResealsUnderTheSamePolicy() throws {
        let tpm = try SoftwareTPM(), box = Sandbox(), root = RootUnderTest.tpm2(tpm)
        let signer = try PCRSigner(box.root, name: "signer", algorithm: "EC")
        let signatures = box.root + "/sig.json"
        try Self.write([try signer.entry(pcr11: try Self.pcr11(tpm, box))], to: signatures)
        let made = try root.cli(box, ["init", "--opt", "pcr-public-key=" + signer.publicKey, "--opt", "pcr-signature=" + signatures,
                                      "--opt", "recovery=yes", "--json"])
        let key = try #require(Tpm2PolicyTests.object(made)?["recoveryKey"] as? String, "\(made.out)\(made.stderr)")
        #expect(try root.cli(box, ["set", "k", "v"]).status == 0)
        #expect(try tpm.tools("tpm2_pcrextend", "11:sha256=" + Tpm2PolicyTests.extendDigest).status == 0)
        #expect(try root.cli(box, ["get", "k", "--json"]).error?.reason == "pcr-mismatch")
        let rootFile = readBytes(Tpm2Tests.rootPath(box))
        let unsigned = try Tpm2RootRecoveryTests.reseal(root, box, key)
        #expect(unsigned.status == 1 && unsigned.error?.reason == "pcr-mismatch" && readBytes(Tpm2Tests.rootPath(box)) == rootFile, "\(unsigned.out)")
        try Self.write([try signer.entry(pcr11: try Self.pcr11(tpm, box))], to: signatures)
        let resealed = try Tpm2RootRecoveryTests.reseal(root, box, key)
        #expect(resealed.status == 0 && readBytes(Tpm2Tests.rootPath(box)) != rootFile, "\(resealed.out)\(resealed.stderr)")
        #expect(try root.cli(box, ["get", "k"]).out == "v")
    }

    /// The TPM's verification ticket kept beside the root file (docs/format.md §12): written by
    /// an open, never trusted (a corrupted one is verified afresh and replaced), no substitute for
    /// the signature (an entry removed from the file refuses the store), removed by reset.
    @Test func aKeptTicketSavesTheVerificationAndIsNeverTrusted() throws {
        let tpm = try SoftwareTPM(), box = Sandbox(), root = RootUnderTest.tpm2(tpm)
        let signer = try PCRSigner(box.root, name: "signer", algorithm: "RSA")
        let signatures = box.root + "/sig.json", ticket = box.stateHome + "/keybay/" + box.app + "/tpm2-root.ticket"
        let value = try Self.pcr11(tpm, box)
        try Self.write([try signer.entry(pcr11: value)], to: signatures)
        #expect(try root.cli(box, ["init", "--opt", "pcr-public-key=" + signer.publicKey, "--opt", "pcr-signature=" + signatures]).status == 0)
        #expect(try root.cli(box, ["set", "k", "v"]).status == 0)
        let kept = try #require(readBytes(ticket), "an open kept the ticket")
        let pol = PCRSigner.policy(pcrs: [11], values: [value]), fingerprint = try signer.fingerprint()
        #expect(kept.count > 82 && Array(kept[0..<6]) == Array("KBTK".utf8) + [0, 1] && Array(kept[6..<38]) == fingerprint
                && Array(kept[38..<42]) == [0, 0, 0x08, 0] && Array(kept[42..<74]) == pol && mode(ticket) == 0o600, "\(kept)")
        // A ticket the TPM did not make: the open verifies the signature again and keeps the real one.
        var forged = kept
        forged[forged.count - 1] ^= 0x01
        try Data(forged).write(to: URL(fileURLWithPath: ticket))
        let again = try root.cli(box, ["get", "k"])
        #expect(again.status == 0 && again.out == "v", "\(again.stderr)")
        #expect(readBytes(ticket) == kept, "the verified ticket replaced the forged one")
        // The signature gone from the file: the kept ticket does not open the store.
        try Self.write([], to: signatures)
        let gone = try root.cli(box, ["get", "k", "--json"])
        #expect(gone.status == 1 && gone.error?.reason == "pcr-mismatch", "\(gone.out)")
        #expect(try root.cli(box, ["reset", "--yes"]).status == 0)
        #expect(!exists(ticket) && !exists(Tpm2Tests.rootPath(box)))
    }

    @Test func badKeysAndSignatureFilesAreRefused() throws {
        let tpm = try SoftwareTPM(), box = Sandbox(), root = RootUnderTest.tpm2(tpm)
        let rsa1024 = box.root + "/small.pem"
        try PCRSigner.succeeded(run("/usr/bin/openssl", ["genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:1024", "-out", rsa1024 + ".key"], environment: [:]), 0)
        try PCRSigner.succeeded(run("/usr/bin/openssl", ["pkey", "-in", rsa1024 + ".key", "-pubout", "-out", rsa1024], environment: [:]), 0)
        let small = try root.cli(box, ["init", "--opt", "pcr-public-key=" + rsa1024, "--json"])
        #expect(small.status == 2 && small.error?.reason == "invalid-public-key", "\(small.out)")
        #expect(!exists(Tpm2Tests.rootPath(box)))
        let relative = try root.cli(box, ["init", "--opt", "pcr-public-key=key.pem", "--json"])
        #expect(relative.status == 2 && relative.error?.reason == "invalid-path", "\(relative.out)")
        let signer = try PCRSigner(box.root, name: "signer", algorithm: "EC")
        let signatures = box.root + "/sig.json"
        try Self.write([try signer.entry(pcr11: try Self.pcr11(tpm, box))], to: signatures)
        let made = try root.cli(box, ["init", "--opt", "pcr-public-key=" + signer.publicKey, "--opt", "pcr-signature=" + signatures])
        #expect(made.status == 0, "\(made.stderr)")
        try "{\"sha256\": [ {\"pcrs\": [11], ".write(toFile: signatures, atomically: true, encoding: .utf8)
        let r = try root.cli(box, ["get", "k", "--json"])
        #expect(r.status == 1 && r.error?.reason == "invalid-pcr-signature", "\(r.out)")
    }
}

/// tpm2-pin with a signed PCR policy, and a PIN method whose PCRs changed beside another method.
@Suite struct Tpm2PinPolicyTests {
    @Test func aSignedPINMethodOpensWithEachNewSignature() throws {
        let tpm = try SoftwareTPM(), box = Sandbox()
        let signer = try PCRSigner(box.root, name: "signer", algorithm: "EC")
        let signatures = box.root + "/tpm2-pcr-signature.json"
        try Tpm2SignedPolicyTests.write([try signer.entry(pcr11: try Tpm2SignedPolicyTests.pcr11(tpm, box))], to: signatures)
        _ = try Tpm2PinTests.pinStore(box, tpm, options: ["--opt", "pcr-public-key=" + signer.publicKey, "--opt", "pcr-signature=" + signatures])
        #expect(try Tpm2PinTests.get(box, tpm, pin: Tpm2PinTests.pin).out == "v")
        #expect(try tpm.tools("tpm2_pcrextend", "11:sha256=" + Tpm2PolicyTests.extendDigest).status == 0)
        let lost = try Tpm2PinTests.get(box, tpm, pin: Tpm2PinTests.pin, json: true)
        #expect(lost.status == 1 && lost.error?.code == "method-unavailable" && lost.error?.reason == "pcr-mismatch" && lost.error?.pcrs == [11],
                "\(lost.out)")
        try Tpm2SignedPolicyTests.write([try signer.entry(pcr11: try Tpm2SignedPolicyTests.pcr11(tpm, box))], to: signatures)
        let back = try Tpm2PinTests.get(box, tpm, pin: Tpm2PinTests.pin)
        #expect(back.status == 0 && back.out == "v", "\(back.stderr)")
        // The wrong PIN still counts: the signed policy adds to the PIN, it does not replace it.
        let wrong = try Tpm2PinTests.get(box, tpm, pin: Tpm2PinTests.otherPin, json: true)
        #expect(wrong.status == 1 && wrong.error?.reason == "wrong-pin", "\(wrong.out)")
    }

    /// The store's other method still opens it once a PCR-bound PIN method no longer does.
    @Test func anotherMethodOpensTheStoreAfterThePINMethodsPCRsChanged() throws {
        let tpm = try SoftwareTPM(), box = Sandbox()
        let pinID = try Tpm2PinTests.pinStore(box, tpm, options: ["--opt", "pcrs=7"])
        let env = Tpm2PinTests.environment(box, tpm)
        let enrolled = try MethodLifecycleTests.cli(box, ["enroll", "passphrase", "--method", pinID] + fastPassphraseFlags,
                                                    secrets: ["--pin-fd": Tpm2PinTests.pin, "--new-passphrase-fd": "correct horse"], environment: env)
        #expect(enrolled.status == 0, "\(enrolled.stderr)")
        let passphraseID = try #require(try methodIDs(box, environment: env).first { $0 != pinID })
        #expect(try tpm.tools("tpm2_pcrextend", "7:sha256=" + Tpm2PolicyTests.extendDigest).status == 0)
        let pin = try Tpm2PinTests.cli(box, tpm, ["get", "k", "--json", "--method", pinID], pin: Tpm2PinTests.pin)
        #expect(pin.status == 1 && pin.error?.code == "method-unavailable" && pin.error?.reason == "pcr-mismatch" && pin.error?.pcrs == [7], "\(pin.out)")
        let other = try MethodLifecycleTests.cli(box, ["get", "k", "--method", passphraseID], secrets: ["--passphrase-fd": "correct horse"], environment: env)
        #expect(other.status == 0 && other.out == "v", "\(other.stderr)")
    }
}
