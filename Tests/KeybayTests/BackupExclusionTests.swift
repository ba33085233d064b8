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

    static let all: [KeybayBackupMarker] = [.dejaDupIgnore, .robotsBackupAttribute, .nodump]

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

    /// A home with a store directory and a root directory, both marked: duplicity as Déjà Dup
    /// runs it, borg 1.2 with --exclude-nodump and tar with --exclude-tag keep the rest of the
    /// home and neither the store nor the root. Unmarked, all three keep both.
    @Test(arguments: [true, false]) func backupToolsSkipMarkedDirectories(marked: Bool) throws {
        let box = Sandbox()
        let home = box.root + "/home"
        let store = try Self.directory(home + "/.local/share"), root = try Self.directory(home + "/.local/state")
        writeBytes(store.pathOf("keybay.v2.store"), [1, 2, 3])
        writeBytes(root.pathOf("file-root.key"), [4, 5, 6])
        mkdir(home + "/Documents", 0o700)
        writeBytes(home + "/Documents/letter.txt", Array("dear".utf8))
        if marked {
            try BackupExclusion.exclude(store)
            try BackupExclusion.exclude(root)
        }
        let storeFile = ".local/share/keybay/com.example.test/keybay.v2.store", rootFile = ".local/state/keybay/com.example.test/file-root.key"
        let scratch = box.root + "/backups"
        mkdir(scratch, 0o700)
        for (tool, backup) in [("duplicity", BackupTools.duplicity), ("borg", BackupTools.borg), ("tar", BackupTools.tar)] as [(String, (BackupTools) -> (String) throws -> Set<String>)] {
            let directory = scratch + "/" + tool
            mkdir(directory, 0o700)
            let held = try backup(BackupTools(scratch: directory))(home)
            #expect(held.contains("Documents/letter.txt"), "\(tool): \(held.sorted())")
            #expect(held.contains(storeFile) == !marked, "\(tool): \(held.sorted())")
            #expect(held.contains(rootFile) == !marked, "\(tool): \(held.sorted())")
        }
    }
}
