// SPDX-License-Identifier: Apache-2.0
import Keybay
import Testing

/// `auto` is the configuration's ordered list of roots, each tried by its probe: the core names
/// no root of its own.
@Suite struct AutomaticRootTests {
    @Test func autoTakesTheFirstRootOfItsListThatIsUsable() throws {
        let box = Sandbox()
        var config = try box.configuration()
        config.rootPlugin = KeybayConfiguration.automaticRoot
        config.automaticRoots = ["no-such-root", "file-root"]
        try KeybayStore.open(config).close()
        #expect(try KeybayStore.status(config).rootPlugin == "file-root")
    }

    @Test func anAutoListWithNothingUsableCreatesNothing() throws {
        let box = Sandbox()
        var config = try box.configuration()
        config.rootPlugin = KeybayConfiguration.automaticRoot
        config.automaticRoots = ["no-such-root"]
        let e = keybayError { _ = try KeybayStore.open(config) }
        #expect(e?.code == .rootUnavailable, "\(String(describing: e))")
        #expect(!exists(box.storeDirectory) && !exists(box.rootPath))
    }
}
