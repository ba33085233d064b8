// SPDX-License-Identifier: Apache-2.0
import Foundation
import Glibc
import Testing
@testable import Keybay

/// The portal root through the CLI, inside bwrap sandboxes around a written `/.flatpak-info`
/// (FlatpakSandbox), against a real xdg-desktop-portal and gnome-keyring's portal backend on a
/// private session bus (PrivateSecretService.startPortal). A test that cannot start them fails.
@Suite struct PortalRootTests {
    static let notes = "org.example.Notes"
    static let other = "org.example.Other"

    /// Two applications' XDG directories, the private bus with the portal, and one sandbox per app.
    struct Fixture {
        let notes: Sandbox
        let other: Sandbox
        let service: PrivateSecretService
        let notesSandbox: FlatpakSandbox
        let otherSandbox: FlatpakSandbox

        init() throws {
            notes = Sandbox(app: PortalRootTests.notes)
            other = Sandbox(app: PortalRootTests.other)
            service = try PrivateSecretService(under: notes.root)
            try service.startPortal()
            notesSandbox = try FlatpakSandbox(app: PortalRootTests.notes, under: notes.root)
            otherSandbox = try FlatpakSandbox(app: PortalRootTests.other, under: notes.root)
        }

        /// The CLI in `sandbox` (nil: unsandboxed) with `box`'s directories and app id.
        @discardableResult
        func cli(_ box: Sandbox, in sandbox: FlatpakSandbox?, _ arguments: String..., extra: [String: String] = [:]) throws -> RunResult {
            let environment = service.environment(box.environment).merging(extra) { _, new in new }
            guard let sandbox else { return try run(cliPath, arguments, environment: environment) }
            return try sandbox.run(cliPath, arguments, environment: environment)
        }

        func status(_ box: Sandbox, in sandbox: FlatpakSandbox) throws -> [String: Any] {
            let result = try cli(box, in: sandbox, "status", "--json")
            return (try? JSONSerialization.jsonObject(with: Data(result.stdout)) as? [String: Any]) ?? [:]
        }
    }

    static func floorPath(_ box: Sandbox) -> String { box.stateHome + "/keybay/" + box.app + "/portal-root.floor" }

    static func code(_ result: RunResult) -> String? {
        result.stderr.range(of: #"\[[a-z-]+\]"#, options: .regularExpression).map { String(result.stderr[$0].dropFirst().dropLast()) }
    }

    @Test func aSandboxedAppKeepsItsStoreOnThePortalAndNoOtherOpensIt() throws {
        let f = try Fixture()
        let created = try f.cli(f.notes, in: f.notesSandbox, "init", "--root", "portal")
        #expect(created.status == 0, "\(created.stderr)")
        #expect(try f.cli(f.notes, in: f.notesSandbox, "set", "api/token", "s3cret").status == 0)
        let got = try f.cli(f.notes, in: f.notesSandbox, "get", "api/token")
        #expect(got.status == 0 && got.out == "s3cret", "\(got.stderr)")
        let status = try f.status(f.notes, in: f.notesSandbox)
        #expect(status["rootPlugin"] as? String == "portal", "\(status)")
        #expect(status["state"] as? String == "platform-only")
        // The bootstrap names the root; the floor file (78 bytes: version 2, the root's nonce,
        // floor 0) is the root's presence.
        let store = try #require(readBytes(f.notes.storePath))
        #expect(try RootTag.decode(Array(store[10..<(10 + Int(store[9]))]), context: "test").root == "portal")
        let floor = try #require(readBytes(Self.floorPath(f.notes)))
        #expect(floor.count == 78 && Array(floor[0..<6]) == Array("KBPF".utf8) + [0, 2] && floor[38..<46].allSatisfy { $0 == 0 }
                && !floor[6..<38].allSatisfy { $0 == 0 })
        #expect(mode(Self.floorPath(f.notes)) == 0o600)
        #expect(!exists(f.notes.rootPath), "no file-root key for a store on the portal")
        // Both directories carry the backup markers, and status lists them read back.
        let markers = status["backupExclusion"] as? [String: [String]]
        #expect(markers?["storeDirectory"] == BackupExclusionTests.allNames && markers?["rootDirectory"] == BackupExclusionTests.allNames, "\(status)")
        // A tar and a borg archive of the home hold neither the store nor the floor file.
        writeBytes(f.notes.root + "/notes.txt", Array("kept".utf8))
        let scratch = "/tmp/keybay-backups-" + UUID().uuidString
        mkdir(scratch, 0o700)
        defer { try? FileManager.default.removeItem(atPath: scratch) }
        for (tool, backup) in [("borg", BackupTools.borg), ("tar", BackupTools.tar)] as [(String, (BackupTools) -> (String) throws -> Set<String>)] {
            mkdir(scratch + "/" + tool, 0o700)
            let held = try backup(BackupTools(scratch: scratch + "/" + tool))(f.notes.root)
            #expect(held.contains("notes.txt") && !held.contains("data/keybay/\(Self.notes)/keybay.v2.store")
                    && !held.contains("state/keybay/\(Self.notes)/portal-root.floor"), "\(tool): \(held.sorted())")
        }

        // Another sandbox, with the store's own app id: refused, the id is not the sandbox's.
        let foreign = try f.cli(f.notes, in: f.otherSandbox, "get", "api/token")
        #expect(foreign.status == 2 && Self.code(foreign) == "invalid-argument", "\(foreign.stderr)")
        // Inside the first sandbox, another app id: refused the same way, on any root (the
        // configuration checks it), and nothing is made.
        for root in ["portal", "file-root"] {
            let wrongID = try f.cli(f.other, in: f.notesSandbox, "init", "--root", root)
            #expect(wrongID.status == 2 && Self.code(wrongID) == "invalid-argument", "\(root): \(wrongID.stderr)")
        }
        #expect(!exists(f.other.storeDirectory) && !exists(f.other.stateHome))
        // Outside any sandbox: the portal gives every program one secret, so the root refuses.
        let outside = try f.cli(f.notes, in: nil, "get", "api/token")
        #expect(outside.status == 1 && Self.code(outside) == "root-unavailable", "\(outside.stderr)")
        #expect(!outside.stdout.contains(Array("s3cret".utf8)))
        // A snap without snapd's snapctl cannot show its password-manager-service connection.
        let snap = try f.cli(f.notes, in: nil, "get", "api/token", extra: ["SNAP_NAME": "notes", "SNAP_INSTANCE_NAME": Self.notes])
        #expect(snap.status == 1 && Self.code(snap) == "root-unavailable", "\(snap.stderr)")

        // The other app's own store, then the files swapped: Notes' store and floor file under
        // Other's directories, opened in Other's sandbox as Other. Another secret, another
        // domain: the root does not belong to the store.
        #expect(try f.cli(f.other, in: f.otherSandbox, "init", "--root", "portal").status == 0)
        #expect(try f.cli(f.other, in: f.otherSandbox, "set", "api/token", "other").status == 0)
        let otherStore = try #require(readBytes(f.other.storePath)), otherFloor = try #require(readBytes(Self.floorPath(f.other)))
        writeBytes(f.other.storePath, store)
        writeBytes(Self.floorPath(f.other), floor)
        let swapped = try f.cli(f.other, in: f.otherSandbox, "get", "api/token")
        #expect(swapped.status != 0 && Self.code(swapped) == "platform-key-invalidated", "\(swapped.stderr)")
        #expect(!swapped.stdout.contains(Array("s3cret".utf8)))
        writeBytes(f.notes.storePath, otherStore)
        writeBytes(Self.floorPath(f.notes), otherFloor)
        let swappedBack = try f.cli(f.notes, in: f.notesSandbox, "get", "api/token")
        #expect(swappedBack.status != 0 && Self.code(swappedBack) == "platform-key-invalidated", "\(swappedBack.stderr)")
        writeBytes(f.notes.storePath, store)
        writeBytes(Self.floorPath(f.notes), floor)

        // The independent reader opens the store from docs/format.md alone, given the portal's
        // secret for Notes (which an unsandboxed process reads from the keyring) and the floor file.
        let secretFile = f.notes.root + "/portal-secret"
        writeBytes(secretFile, try f.service.portalSecret(app: Self.notes))
        let read = try run("/usr/bin/python3", [IndependentReaderTests.reader, "--app", Self.notes, "--portal-secret", secretFile,
                                                "--portal-floor", Self.floorPath(f.notes), "--store", f.notes.storePath],
                           environment: f.notes.environment)
        #expect(read.status == 0 && read.out == "{\"api/token\": \"\(hexString(Array("s3cret".utf8)))\"}\n", "\(read.out) \(read.stderr)")
        // Other's secret does not read it.
        writeBytes(secretFile, try f.service.portalSecret(app: Self.other))
        let wrong = try run("/usr/bin/python3", [IndependentReaderTests.reader, "--app", Self.notes, "--portal-secret", secretFile,
                                                 "--portal-floor", Self.floorPath(f.notes), "--store", f.notes.storePath],
                            environment: f.notes.environment)
        #expect(wrong.status == 1 && wrong.stdout.isEmpty, "\(wrong.stderr)")
    }

    /// Two layers refuse an application id that is not the sandbox's, and each does alone. The
    /// configuration (before any root is loaded) refuses `--app org.example.Other` in Notes'
    /// sandbox on file-root, which checks no sandbox (the first test). The portal root refuses it
    /// for a host that has no such configuration: plugin-check gives the root it checks the
    /// application id `plugin-check`, so in Notes' sandbox its first root check fails with
    /// `invalid-argument` and none after it runs, while in a sandbox of the application
    /// `plugin-check` every check passes against the same portal.
    @Test func thePortalRootItselfRefusesAnotherApplicationsID() throws {
        let f = try Fixture()
        let own = try FlatpakSandbox(app: "plugin-check", under: f.notes.root)
        let plugin = pluginDirectory + "/libkeybay-portal.so"
        func check(in sandbox: FlatpakSandbox) throws -> (status: Int32, results: [[String: Any]]) {
            let r = try f.cli(f.notes, in: sandbox, "plugin-check", plugin, "--json")
            let results = (try? JSONSerialization.jsonObject(with: Data(r.stdout)) as? [[String: Any]]) ?? []
            #expect(!results.isEmpty, "\(r.out) \(r.stderr)")
            return (r.status, results)
        }
        let matching = try check(in: own)
        #expect(matching.status == 0 && matching.results.allSatisfy { $0["result"] as? String == "pass" }, "\(matching.results)")
        let foreign = try check(in: f.notesSandbox)
        let first = try #require(foreign.results.firstIndex { $0["check"] as? String == "exists is false before create" })
        #expect(foreign.status == 1 && foreign.results[first]["result"] as? String == "fail"
                && (foreign.results[first]["detail"] as? String)?.hasSuffix(" [invalid-argument]") == true, "\(foreign.results[first])")
        #expect(foreign.results[..<first].allSatisfy { $0["result"] as? String == "pass" }, "\(foreign.results)")
        #expect(foreign.results[(first + 1)...].allSatisfy { $0["result"] as? String == "not-run" }, "\(foreign.results)")
    }

    /// Inside a sandbox `auto` is the portal root; outside one it stays as it was (file-root
    /// here, where no Secret Service is asked for: the keyring is on the test's private bus).
    @Test func autoInsideASandboxIsThePortal() throws {
        let f = try Fixture()
        let created = try f.cli(f.notes, in: f.notesSandbox, "init", "--root", "auto")
        #expect(created.status == 0, "\(created.stderr)")
        #expect(try f.status(f.notes, in: f.notesSandbox)["rootPlugin"] as? String == "portal")
        let outside = try run(cliPath, ["init", "--root", "auto"], environment: f.other.environment)
        #expect(outside.status == 0, "\(outside.stderr)")
        #expect(try f.cli(f.other, in: nil, "status", "--json").out.contains("\"rootPlugin\":\"file-root\""))
    }

    /// A rollback floor that was raised is kept in the floor file, authenticated: a flipped byte
    /// fails the open, and a store older than the floor is refused.
    @Test func theFloorFileIsAuthenticatedAndHoldsTheFloor() throws {
        let f = try Fixture()
        #expect(try f.cli(f.notes, in: f.notesSandbox, "init", "--root", "portal").status == 0)
        #expect(try f.cli(f.notes, in: f.notesSandbox, "set", "k", "v").status == 0)
        let epoch1 = try #require(readBytes(f.notes.storePath))
        // A rotation raises the floor: enrolling a recovery key makes epoch 2.
        let enrolled = try f.cli(f.notes, in: f.notesSandbox, "enroll", "recovery", "--json", "--no-input")
        #expect(enrolled.status == 0, "\(enrolled.stderr)")
        let raised = try #require(readBytes(Self.floorPath(f.notes)))
        #expect(raised.count == 78 && raised[45] == 2 && raised[38..<45].allSatisfy { $0 == 0 }, "the floor is the rotation's epoch")
        let epoch2 = try #require(readBytes(f.notes.storePath))
        writeBytes(f.notes.storePath, epoch1)
        let rolledBack = try f.cli(f.notes, in: f.notesSandbox, "get", "k")
        #expect(rolledBack.status != 0 && Self.code(rolledBack) == "rolled-back", "\(rolledBack.stderr)")
        writeBytes(f.notes.storePath, epoch2)
        // A flipped floor byte fails the HMAC; a flipped nonce byte gives another root; a file of
        // another length is damaged, not a lost key.
        for (offset, expected) in [(40, "integrity"), (20, "platform-key-invalidated")] {
            var floor = raised
            floor[offset] ^= 1
            writeBytes(Self.floorPath(f.notes), floor)
            let tampered = try f.cli(f.notes, in: f.notesSandbox, "get", "k", "--no-input")
            #expect(tampered.status != 0 && Self.code(tampered) == expected, "byte \(offset): \(tampered.stderr)")
        }
        writeBytes(Self.floorPath(f.notes), Array(raised.prefix(46)))
        let short = try f.cli(f.notes, in: f.notesSandbox, "get", "k", "--no-input")
        #expect(short.status != 0 && Self.code(short) == "integrity", "\(short.stderr)")
        writeBytes(Self.floorPath(f.notes), raised)
        // Put back, it opens again (status opens the key package with the root).
        #expect(try f.cli(f.notes, in: f.notesSandbox, "status", "--json").status == 0)
        unlink(Self.floorPath(f.notes))
        let missing = try f.cli(f.notes, in: f.notesSandbox, "get", "k", "--no-input")
        #expect(missing.status != 0 && Self.code(missing) == "platform-key-invalidated", "\(missing.stderr)")
    }

    /// The portal cannot delete its secret, so reset destroys the root's nonce instead: after a
    /// reset and a new init, a copy of the old store put back does not open.
    @Test func aResetStoreNeverOpensAgain() throws {
        let f = try Fixture()
        #expect(try f.cli(f.notes, in: f.notesSandbox, "init", "--root", "portal").status == 0)
        #expect(try f.cli(f.notes, in: f.notesSandbox, "set", "k", "old").status == 0)
        let old = try #require(readBytes(f.notes.storePath))
        #expect(try f.cli(f.notes, in: f.notesSandbox, "reset", "--yes").status == 0)
        #expect(try f.cli(f.notes, in: f.notesSandbox, "init", "--root", "portal").status == 0)
        writeBytes(f.notes.storePath, old)
        let reopened = try f.cli(f.notes, in: f.notesSandbox, "get", "k", "--no-input")
        #expect(reopened.status != 0 && Self.code(reopened) == "platform-key-invalidated", "\(reopened.out) \(reopened.stderr)")
    }

    /// A portal that is gone, or that owns its name and never answers, is root-unavailable
    /// within the plugin's bound (10 s), never a hang.
    @Test func aStoppedPortalIsRootUnavailable() throws {
        let f = try Fixture()
        #expect(try f.cli(f.notes, in: f.notesSandbox, "init", "--root", "portal").status == 0)
        #expect(try f.cli(f.notes, in: f.notesSandbox, "set", "k", "v").status == 0)
        f.service.pausePortal()
        let start = Date()
        let paused = try f.cli(f.notes, in: f.notesSandbox, "get", "k")
        let took = Date().timeIntervalSince(start)
        f.service.resumePortal()
        #expect(paused.status == 1 && Self.code(paused) == "root-unavailable", "\(paused.stderr)")
        #expect(took < 30, "a paused portal held the CLI for \(took) s")
        f.service.stopPortal()
        let stopped = try f.cli(f.notes, in: f.notesSandbox, "get", "k")
        #expect(stopped.status == 1 && Self.code(stopped) == "root-unavailable", "\(stopped.stderr)")
    }
}
