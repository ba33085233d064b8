import Foundation
import Glibc
import Testing
@testable import Keybay

/// Looser or foreign state is refused with the path and the reason, and left as it was.
@Suite struct PermissionTests {
    static func openError(_ box: Sandbox) async -> KeybayError? {
        await keybayError { _ = try await KeybayStore.open(box.configuration()) }
    }

    static func prepared() async throws -> Sandbox {
        let box = Sandbox()
        try await KeybayStore.open(box.configuration()).set("k", string: "v")
        return box
    }

    @Test(arguments: [0o750, 0o705, 0o777])
    func looseStoreDirectoryIsRefused(_ m: Int) async throws {
        let box = try await Self.prepared()
        chmod(box.storeDirectory, mode_t(m))
        let e = await Self.openError(box)
        #expect(e?.code == .insecurePermissions)
        #expect(e?.message.contains(box.storeDirectory) == true)
        #expect(mode(box.storeDirectory) == mode_t(m), "never repaired")
    }

    @Test(arguments: [0o640, 0o604, 0o666])
    func looseStoreFileIsRefused(_ m: Int) async throws {
        let box = try await Self.prepared()
        chmod(box.storePath, mode_t(m))
        let e = await Self.openError(box)
        #expect(e?.code == .insecurePermissions)
        #expect(e?.message.contains(box.storePath) == true)
        #expect(mode(box.storePath) == mode_t(m))
    }

    @Test func looseRootFileAndDirectoryAreRefused() async throws {
        let box = try await Self.prepared()
        chmod(box.rootPath, 0o644)
        #expect(await Self.openError(box)?.code == .insecurePermissions)
        chmod(box.rootPath, 0o600)
        chmod(box.stateHome + "/keybay", 0o755)
        #expect(await Self.openError(box)?.code == .insecurePermissions)
        #expect(mode(box.stateHome + "/keybay") == 0o755)
    }

    @Test func symlinkedStoreFileIsRefused() async throws {
        let box = try await Self.prepared()
        let elsewhere = box.root + "/elsewhere.store"
        rename(box.storePath, elsewhere)
        symlink(elsewhere, box.storePath)
        let e = await Self.openError(box)
        #expect(e?.code == .insecurePermissions)
        #expect(e?.message.contains("symbolic link") == true)
        #expect(exists(elsewhere))
    }

    @Test func symlinkedStoreDirectoryIsRefused() async throws {
        let box = try await Self.prepared()
        let elsewhere = box.root + "/moved-dir"
        rename(box.storeDirectory, elsewhere)
        symlink(elsewhere, box.storeDirectory)
        let e = await Self.openError(box)
        #expect(e?.code == .insecurePermissions)
        #expect(e?.message.contains(box.storeDirectory) == true)
    }

    @Test func symlinkedRootFileIsRefused() async throws {
        let box = try await Self.prepared()
        let elsewhere = box.root + "/root.copy"
        rename(box.rootPath, elsewhere)
        symlink(elsewhere, box.rootPath)
        #expect(await Self.openError(box)?.code == .insecurePermissions)
    }

    @Test(.enabled(if: geteuid() == 0, "changing a file's owner needs root"))
    func foreignOwnerIsRefused() async throws {
        let box = try await Self.prepared()
        chown(box.storePath, 65534, 65534)
        let e = await Self.openError(box)
        #expect(e?.code == .insecurePermissions)
        #expect(e?.message.contains("owned by uid 65534") == true)
        chown(box.storePath, 0, 0)
        chown(box.storeDirectory, 65534, 65534)
        #expect(await Self.openError(box)?.code == .insecurePermissions)
        chown(box.storeDirectory, 0, 0)
        chown(box.rootPath, 65534, 65534)
        #expect(await Self.openError(box)?.code == .insecurePermissions)
        chown(box.rootPath, 0, 0)
        #expect(await Self.openError(box) == nil)
    }
}
