// SPDX-License-Identifier: Apache-2.0
import CKeybayPlugin
import Foundation
import Glibc
import Testing
@testable import Keybay

/// Paths beyond PATH_MAX: the configuration refuses such a base directory, and file-root, asked
/// directly (as another host might), reports an error instead of returning bytes past its buffer.
@Suite struct OverlongPathTests {
    @Test func anOverlongBaseDirectoryIsRefusedAndFileRootNeverReadsPastItsBuffer() throws {
        let box = Sandbox()
        let long = box.root + "/" + String(repeating: "d", count: 4300)
        let e = keybayError { _ = try KeybayConfiguration(applicationID: "com.example.test", dataHome: box.dataHome, stateHome: long) }
        #expect(e?.code == .invalidArgument, "\(String(describing: e))")

        let engine = try StoreEngine(box.configuration().settings)
        let root = try #require(engine.root as? PluginRoot)
        #expect(root.location == box.rootPath, "an ordinary path comes back exactly")
        // Asked for a path it cannot hold, file-root says why (an over-read would come back as
        // more bytes than the core takes, a different message).
        let overlong = PluginRoot(plugin: root.plugin, applicationID: root.applicationID, stateHome: long, domain: root.domain)
        let location = overlong.location
        #expect(location.hasPrefix("(unknown: ") && location.contains("longer than PATH_MAX"), "\(location)")
    }
}
