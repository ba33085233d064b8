// SPDX-License-Identifier: Apache-2.0
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
        #expect(e?.code == .insecurePermissions && e?.reason == "mode" && e?.path == target, "\(String(describing: e))", sourceLocation: sourceLocation)
        // The core's own files (under the data home) have no plugin; a root plugin's name it.
        #expect(e?.pluginID == (target.hasPrefix(box.dataHome) ? nil : "file-root"), "\(String(describing: e))", sourceLocation: sourceLocation)
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

    @Test(arguments: [0o640, 0o604, 0o666])
    func looseRootFileIsRefused(_ m: Int) async throws {
        try await looseModeIsRefused({ $0.rootPath }, m)
    }

    /// Both directories under the state home: `keybay` and `keybay/<app>`.
    @Test(arguments: [0o750, 0o755])
    func looseRootDirectoriesAreRefused(_ m: Int) async throws {
        try await looseModeIsRefused({ $0.stateHome + "/keybay" }, m)
        try await looseModeIsRefused({ $0.stateHome + "/keybay/" + $0.app }, m)
    }

    @Test func looseDataDirectoryIsRefused() async throws {
        try await looseModeIsRefused({ $0.dataHome + "/keybay" }, 0o755)
    }

    /// `link` (a path in the store's or root's place) is moved away and replaced by a symbolic
    /// link to it: the open is refused naming the path, and the link and what it points at are
    /// left as they were.
    private func symlinkIsRefused(_ link: (Sandbox) -> String, sourceLocation: SourceLocation = #_sourceLocation) async throws {
        let box = try await Self.prepared()
        let path = link(box)
        let elsewhere = box.root + "/elsewhere"
        #expect(rename(path, elsewhere) == 0 && symlink(elsewhere, path) == 0, sourceLocation: sourceLocation)
        let before = readBytes(elsewhere) // nil for a directory
        let e = await Self.openError(box)
        #expect(e?.code == .insecurePermissions && e?.reason == "symbolic-link" && e?.path == path, "\(String(describing: e))", sourceLocation: sourceLocation)
        var st = stat()
        #expect(lstat(path, &st) == 0 && st.st_mode & S_IFMT == S_IFLNK, "the link was removed", sourceLocation: sourceLocation)
        #expect(exists(elsewhere) && readBytes(elsewhere) == before, "what it points at was changed", sourceLocation: sourceLocation)
    }

    @Test func symlinkedStoreFileIsRefused() async throws {
        try await symlinkIsRefused { $0.storePath }
    }

    @Test func symlinkedStoreDirectoryIsRefused() async throws {
        try await symlinkIsRefused { $0.storeDirectory }
    }

    @Test func symlinkedRootFileIsRefused() async throws {
        try await symlinkIsRefused { $0.rootPath }
    }

    @Test func symlinkedRootDirectoryIsRefused() async throws {
        try await symlinkIsRefused { $0.stateHome + "/keybay/" + $0.app }
    }

    /// The `keybay` directories under the data and state homes, which hold every app's.
    @Test func symlinkedKeybayDirectoriesAreRefused() async throws {
        try await symlinkIsRefused { $0.dataHome + "/keybay" }
        try await symlinkIsRefused { $0.stateHome + "/keybay" }
    }

    /// Each of the store file, the store directory and the data home's `keybay`, the root file,
    /// the root directory and the state home's `keybay` given to another user: refused naming the
    /// path and the owner, and left with that owner and its mode.
    @Test(.enabled(if: geteuid() == 0, "changing a file's owner needs root"))
    func foreignOwnerIsRefused() async throws {
        let box = try await Self.prepared()
        for path in [box.storePath, box.storeDirectory, box.dataHome + "/keybay", box.rootPath, box.stateHome + "/keybay/" + box.app,
                     box.stateHome + "/keybay"] {
            let m = mode(path)
            #expect(chown(path, 65534, 65534) == 0)
            let e = await Self.openError(box)
            #expect(e?.code == .insecurePermissions, "\(path): \(String(describing: e))")
            #expect(e?.reason == "not-owner" && e?.path == path, "\(path): \(String(describing: e))")
            var st = stat()
            #expect(lstat(path, &st) == 0 && st.st_uid == 65534 && mode(path) == m, "\(path) was changed")
            chown(path, 0, 0)
        }
        #expect(await Self.openError(box) == nil)
    }
}
