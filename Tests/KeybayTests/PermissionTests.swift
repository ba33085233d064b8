import CKeybayPlugin
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

    /// Loosens the mode of `path` in a prepared store: the open is refused naming that path, and
    /// the mode is left as it was.
    private func looseModeIsRefused(_ path: (Sandbox) -> String, _ m: Int, sourceLocation: SourceLocation = #_sourceLocation) async throws {
        let box = try await Self.prepared()
        let target = path(box)
        chmod(target, mode_t(m))
        let e = await Self.openError(box)
        #expect(e?.code == .insecurePermissions, sourceLocation: sourceLocation)
        #expect(e?.message.contains(target) == true, "\(e?.message ?? "no error")", sourceLocation: sourceLocation)
        #expect(mode(target) == mode_t(m), "never repaired", sourceLocation: sourceLocation)
    }

    @Test(arguments: [0o750, 0o705, 0o777])
    func looseStoreDirectoryIsRefused(_ m: Int) async throws {
        try await looseModeIsRefused({ $0.storeDirectory }, m)
    }

    @Test(arguments: [0o640, 0o604, 0o666])
    func looseStoreFileIsRefused(_ m: Int) async throws {
        try await looseModeIsRefused({ $0.storePath }, m)
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

/// Paths beyond PATH_MAX: the configuration refuses such a base directory, and file-root, asked
/// directly (as another host might), reports an error instead of returning bytes past its buffer.
@Suite struct OverlongPathTests {
    @Test func anOverlongBaseDirectoryIsRefusedAndFileRootNeverReadsPastItsBuffer() throws {
        let box = Sandbox()
        let long = box.root + "/" + String(repeating: "d", count: 4300)
        let e = keybayError { _ = try KeybayConfiguration(applicationID: "com.example.test", dataHome: box.dataHome, stateHome: long) }
        #expect(e?.code == .invalidArgument && e?.message.contains("PATH_MAX") == true, "\(String(describing: e))")

        let lifecycle = try StoreLifecycle(box.configuration())
        let root = try #require(lifecycle.root as? PluginRoot)
        #expect(root.location == box.rootPath, "an ordinary path comes back exactly")
        // Asked for a path it cannot hold, file-root says why (an over-read would come back as
        // more bytes than the core takes, a different message).
        let overlong = PluginRoot(plugin: root.plugin, applicationID: root.applicationID, stateHome: long, domain: root.domain)
        let location = overlong.location
        #expect(location.hasPrefix("(unknown: ") && location.contains("longer than PATH_MAX"), "\(location)")
    }
}
