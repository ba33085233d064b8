// SPDX-License-Identifier: Apache-2.0
import Foundation
import Glibc
import Testing
@testable import Keybay

/// The backup markers (BackupExclusion): set, read back with the file system's own tools,
/// removed; and honoured by the real backup tools (BackupTools).
@Suite struct BackupExclusionTests {
    /// A private directory <base>/keybay/<app> as Keybay makes one.
    static func directory(_ base: String, _ app: String = "com.example.test") throws -> PrivateDirectory {
        try #require(try PrivateDirectory.open(base: base, components: ["keybay", app], create: true))
    }

    static let all: [BackupMarker] = [.dejaDupIgnore, .robotsBackupAttribute, .nodump]

    @Test func theMarkersAreSetReadBackAndRemoved() throws {
        let box = Sandbox()
        let directory = try Self.directory(box.dataHome)
        #expect(try BackupExclusion.markers(directory) == [])
        // ext4 (the test directories' file system) takes all three.
        #expect(try BackupExclusion.exclude(directory) == Self.all)
        #expect(mode(directory.pathOf(".deja-dup-ignore")) == 0o600)
        #expect(readBytes(directory.pathOf(".deja-dup-ignore")) == [])
        let attribute = try run("/usr/bin/getfattr", ["--only-values", "-n", "user.xdg.robots.backup", directory.path], environment: box.environment)
        #expect(attribute.status == 0 && attribute.out == "false", "\(attribute.stderr)")
        let flags = try run("/usr/bin/lsattr", ["-d", directory.path], environment: box.environment)
        #expect(flags.status == 0 && flags.out.split(separator: " ").first?.contains("d") == true, "\(flags.out)")
        // Again: nothing changes, nothing fails.
        #expect(try BackupExclusion.exclude(directory) == Self.all)

        // A marker that is not what Keybay writes is not reported.
        #expect(try run("/usr/bin/setfattr", ["-n", "user.xdg.robots.backup", "-v", "true", directory.path], environment: box.environment).status == 0)
        #expect(try BackupExclusion.markers(directory) == [.dejaDupIgnore, .nodump])

        try BackupExclusion.include(directory)
        #expect(try BackupExclusion.markers(directory) == [])
        #expect(!exists(directory.pathOf(".deja-dup-ignore")))
        #expect(try run("/usr/bin/getfattr", ["-n", "user.xdg.robots.backup", directory.path], environment: box.environment).status != 0)
        let cleared = try run("/usr/bin/lsattr", ["-d", directory.path], environment: box.environment)
        #expect(cleared.out.split(separator: " ").first?.contains("d") == false, "\(cleared.out)")
        try BackupExclusion.include(directory) // idempotent
    }

    /// Markers set by hand (touch, setfattr, chattr +d) are read as Keybay's.
    @Test func markersSetWithTheUsualToolsAreReadBack() throws {
        let box = Sandbox()
        let directory = try Self.directory(box.stateHome)
        #expect(try run("/usr/bin/touch", [directory.pathOf(".deja-dup-ignore")], environment: box.environment).status == 0)
        #expect(try run("/usr/bin/setfattr", ["-n", "user.xdg.robots.backup", "-v", "false", directory.path], environment: box.environment).status == 0)
        #expect(try run("/usr/bin/chattr", ["+d", directory.path], environment: box.environment).status == 0)
        #expect(try BackupExclusion.markers(directory) == Self.all)
    }

    /// The backup markers `status --json` lists (backupExclusion).
    static func listed(_ box: Sandbox) throws -> (store: [String], root: [String])? {
        let status = try box.cli("status", "--json")
        guard let object = try? JSONSerialization.jsonObject(with: Data(status.stdout)) as? [String: Any],
              let markers = object["backupExclusion"] as? [String: Any] else { return nil }
        return (markers["storeDirectory"] as? [String] ?? ["?"], markers["rootDirectory"] as? [String] ?? ["?"])
    }

    static let allNames = all.map(\.rawValue)

    /// A home with a store made by `init` (file-root) and a document: duplicity as Déjà Dup runs
    /// it, borg 1.2 with --exclude-nodump and tar with --exclude-tag keep the document and
    /// neither the store nor the root. With `--keep-in-backups` all three keep both.
    @Test(arguments: [false, true]) func initMarksBothDirectoriesAndBackupsLeaveThemOut(keep: Bool) throws {
        let box = Sandbox()
        let created = try box.cli(["init"] + (keep ? ["--keep-in-backups"] : []), secret: nil, option: nil)
        #expect(created.status == 0, "\(created.stderr)")
        #expect(try box.cli("set", "k", "v").status == 0)
        let listed = try #require(try Self.listed(box))
        #expect(listed.store == (keep ? [] : Self.allNames) && listed.root == (keep ? [] : Self.allNames), "\(listed)")
        mkdir(box.root + "/Documents", 0o700)
        writeBytes(box.root + "/Documents/letter.txt", Array("dear".utf8))
        let storeFile = "data/keybay/\(box.app)/keybay.v2.store", rootFile = "state/keybay/\(box.app)/file-root.key"
        let scratch = "/tmp/keybay-backups-" + UUID().uuidString
        mkdir(scratch, 0o700)
        defer { try? FileManager.default.removeItem(atPath: scratch) }
        for (tool, backup) in [("duplicity", BackupTools.duplicity), ("borg", BackupTools.borg), ("tar", BackupTools.tar)] as [(String, (BackupTools) -> (String) throws -> Set<String>)] {
            let directory = scratch + "/" + tool
            mkdir(directory, 0o700)
            let held = try backup(BackupTools(scratch: directory))(box.root)
            #expect(held.contains("Documents/letter.txt"), "\(tool): \(held.sorted())")
            #expect(held.contains(storeFile) == keep, "\(tool): \(held.sorted())")
            #expect(held.contains(rootFile) == keep, "\(tool): \(held.sorted())")
        }
    }

    /// `backup exclude|include` changes an existing store; the store still opens either way.
    @Test func backupExcludeAndIncludeChangeAnExistingStore() throws {
        let box = Sandbox()
        #expect(try box.cli("set", "k", "v").status == 0) // a store made by set: marked too
        #expect(try Self.listed(box).map { [$0.store, $0.root] } == [Self.allNames, Self.allNames])
        let included = try box.cli("backup", "include", "--json")
        #expect(included.status == 0, "\(included.stderr)")
        #expect(try Self.listed(box).map { [$0.store, $0.root] } == [[], []])
        #expect(!exists(box.storeDirectory + "/.deja-dup-ignore"))
        let got = try box.cli("get", "k")
        #expect(got.status == 0 && got.out == "v")
        let excluded = try box.cli("backup", "exclude")
        #expect(excluded.status == 0, "\(excluded.stderr)")
        #expect(try Self.listed(box).map { [$0.store, $0.root] } == [Self.allNames, Self.allNames])
        #expect(try box.cli("get", "k").status == 0)
        // No store: nothing to change (exit 1, store-not-found); a bad word is a usage error.
        let empty = Sandbox()
        let none = try empty.cli("backup", "exclude")
        #expect(none.status == 1 && none.stderr.contains("[store-not-found]"), "\(none.stderr)")
        #expect(!exists(empty.storeDirectory))
        #expect(try box.cli("backup", "sideways").status == 2)
        // Reset keeps the directories; a store made again with --keep-in-backups has no markers.
        #expect(try box.cli("reset", "--yes").status == 0)
        #expect(try box.cli("init", "--keep-in-backups").status == 0)
        #expect(try Self.listed(box).map { [$0.store, $0.root] } == [[], []])
    }
}
