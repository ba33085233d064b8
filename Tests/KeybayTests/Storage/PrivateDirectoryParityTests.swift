// SPDX-License-Identifier: Apache-2.0
import Foundation
import Glibc
import Testing
@testable import Keybay

/// One set of rules for private directories in both languages: the core's
/// Storage/PrivateDirectory.swift and the plugins' Plugins/Support/common/private_directory.c
/// (reached through file-root, whose root directory is the state home's keybay/<app>). On the
/// same planted directory each refuses, with the same status, reason and path.
@Suite struct PrivateDirectoryParityTests {
    enum Plant: String, CaseIterable, Sendable {
        case symbolicLink, groupWritable, otherOwner, fileInsteadOfDirectory
    }

    /// Plants `plant` in a prepared store's state home; the path the refusal must name.
    static func plant(_ plant: Plant, in box: Sandbox) -> String {
        let keybay = box.stateHome + "/keybay", app = keybay + "/" + box.app, elsewhere = box.root + "/elsewhere"
        switch plant {
        case .symbolicLink:
            #expect(rename(app, elsewhere) == 0 && symlink(elsewhere, app) == 0)
            return app
        case .groupWritable:
            #expect(chmod(keybay, 0o770) == 0)
            return keybay
        case .otherOwner:
            #expect(chown(app, 65534, 65534) == 0)
            return app
        case .fileInsteadOfDirectory:
            #expect(rename(app, elsewhere) == 0)
            #expect(FileManager.default.createFile(atPath: app, contents: Data([1]), attributes: [.posixPermissions: 0o600]))
            return app
        }
    }

    @Test(arguments: Plant.allCases)
    func bothRefuseAlike(_ planted: Plant) async throws {
        if planted == .otherOwner && geteuid() != 0 { return } // changing a file's owner needs root
        let box = try await PermissionTests.prepared()
        let path = Self.plant(planted, in: box)
        let swift = keybayError { _ = try PrivateDirectory.open(base: box.stateHome, components: ["keybay", box.app], create: false) }
        let c = await PermissionTests.openError(box)
        #expect(swift?.code == .insecurePermissions && swift?.path == path, "\(String(describing: swift))")
        #expect(c?.pluginID == "file-root", "\(String(describing: c))")
        #expect(c?.code == swift?.code && c?.reason == swift?.reason && c?.path == swift?.path,
                "Swift: \(String(describing: swift)); C: \(String(describing: c))")
    }
}
