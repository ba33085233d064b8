// SPDX-License-Identifier: Apache-2.0
import Foundation
import Glibc
import Testing
@testable import Keybay

/// The independent reader (Tests/independent-reader/keybay_read.py, written from docs/format.md
/// alone) opens what the CLI writes: a suite-2 store protected by a passphrase, and the suite-1
/// store that `remove` leaves behind.
@Suite struct IndependentReaderTests {
    static let reader = packageDirectory + "/Tests/independent-reader/keybay_read.py"

    static func read(_ box: Sandbox, _ extra: [String] = []) throws -> RunResult {
        try run("/usr/bin/python3", [reader, "--app", box.app, "--root", box.rootPath, "--store", box.storePath] + extra,
                environment: box.environment)
    }

    /// RFC 5869, RFC 9180 A.2.1, an Argon2id vector, and the format's §9 / §10.5 worked examples.
    @Test func readerSelfTest() throws {
        let r = try run("/usr/bin/python3", [Self.reader, "--self-test"], environment: ["PATH": "/usr/bin:/bin"])
        #expect(r.status == 0 && r.out == "self-test ok\n", "\(r.out) \(r.stderr)")
    }

    @Test func readsAPassphraseStoreThenThePlatformOnlyStoreAfterRemove() throws {
        let box = Sandbox()
        let blob: [UInt8] = [0x00, 0x01, 0x02, 0xff, 0x0a, 0x80]
        #expect(try box.cli("set", "service/token", "correct horse").status == 0)
        #expect(try box.cli("set", "bin/blob", "--stdin", stdin: blob).status == 0)
        let enrolled = try PassphraseTests.cli(box, ["enroll", "passphrase", "--label", "main"] + PassphraseTests.fast,
                                               passphrase: "hunter2 is long")
        #expect(enrolled.status == 0, "\(enrolled.stderr)")
        let protected = readBytes(box.storePath)!
        #expect(Array(protected[0..<6]) == Array("KBV2".utf8) + [0, 2], "not a suite-2 file")

        let good = box.root + "/good", wrong = box.root + "/wrong"
        try "hunter2 is long\n".write(toFile: good, atomically: true, encoding: .utf8)
        try "hunter3 is long\n".write(toFile: wrong, atomically: true, encoding: .utf8)
        let all = "{\"bin/blob\": \"\(hexString(blob))\", \"service/token\": \"\(hexString(Array("correct horse".utf8)))\"}\n"

        let right = try Self.read(box, ["--passphrase-file", good])
        #expect(right.status == 0 && right.out == all, "\(right.out) \(right.stderr)")
        let one = try Self.read(box, ["--passphrase-file", good, "--key", "bin/blob"])
        #expect(one.status == 0 && one.stdout == blob, "\(one.stderr)")

        // Selecting the envelope by its method id gives the same records.
        let id = try #require(try methodIDs(box).first)
        let byId = try Self.read(box, ["--passphrase-file", good, "--method", id])
        #expect(byId.status == 0 && byId.out == all, "\(byId.stderr)")

        let bad = try Self.read(box, ["--passphrase-file", wrong, "--json"])
        #expect(bad.status == 1 && bad.error?.code == "wrong-secret", "\(bad.out) \(bad.stderr)")
        let none = try Self.read(box, ["--json"])
        #expect(none.status == 1 && none.error?.code == "authentication-required", "\(none.out) \(none.stderr)")
        #expect(readBytes(box.storePath)! == protected, "the reader changed the store")

        // The reader is strict on suite 2 too: a flipped byte in the manifest fails it.
        var flipped = protected
        flipped[flipped.count - 10] ^= 1
        writeBytes(box.storePath, flipped)
        #expect(try Self.read(box, ["--passphrase-file", good]).status == 1)
        writeBytes(box.storePath, protected)

        let removed = try PassphraseTests.cli(box, ["remove", id], passphrase: "hunter2 is long")
        #expect(removed.status == 0, "\(removed.stderr)")
        #expect(Array(readBytes(box.storePath)![0..<6]) == Array("KBV2".utf8) + [0, 1], "not a suite-1 file after remove")
        let plain = try Self.read(box)
        #expect(plain.status == 0 && plain.out == all, "\(plain.out) \(plain.stderr)")
    }

    /// A store whose second method had the host open a file for it (its envelope carries a grant:
    /// policy 2) still opens with its passphrase method in the reader.
    @Test func readsAStoreWhoseMethodsCarryAFileGrant() throws {
        let box = Sandbox()
        #expect(try box.cli("set", "service/token", "correct horse").status == 0)
        let enrolled = try PassphraseTests.cli(box, ["enroll", "passphrase", "--label", "main"] + PassphraseTests.fast, passphrase: "hunter2 is long")
        #expect(enrolled.status == 0, "\(enrolled.stderr)")
        let key = HostAccessTests.keyFile(box)
        let dir = try HostAccessTests.build(box, "granted", enroll: """
            int fd = -1; keybay_status st = h->open_file(h->context, "path", &fd);
            if (st != KEYBAY_OK) return st;
            close(fd);
            \(HostAccessTests.succeed)
            """, unwrap: "memset(s, 7, 32); return KEYBAY_OK;")
        let granted = try PassphraseTests.cli(box, ["enroll", "granted", "--opt", "path=" + key, "--plugin-dir", dir], passphrase: "hunter2 is long")
        #expect(granted.status == 0, "\(granted.stderr)")

        let good = box.root + "/good"
        try "hunter2 is long\n".write(toFile: good, atomically: true, encoding: .utf8)
        let read = try Self.read(box, ["--passphrase-file", good, "--key", "service/token"])
        #expect(read.status == 0 && read.out == "correct horse", "\(read.out) \(read.stderr)")
    }
}
