// SPDX-License-Identifier: Apache-2.0
import CKeybayPlugin
import Glibc
import Keybay
import Testing

/// A host reads what a failure is about from `KeybayError`'s fields, not from its message:
/// the path of the file, the plugin, the method, and the errno or plugin status beneath.
@Suite struct ErrorFieldTests {
    @Test func aMissingStoreNamesItsPath() throws {
        let box = Sandbox()
        let e = keybayError { _ = try KeybayStore.open(try box.configuration(), createIfAbsent: false) }
        #expect(e?.code == .storeNotFound && e?.path == box.storePath, "\(String(describing: e))")
        #expect(e?.pluginID == nil && e?.methodID == nil && e?.underlying == nil)
    }

    @Test func aWrongSecretNamesTheMethodAndItsPlugin() throws {
        let box = Sandbox()
        let config = try box.configuration()
        let session = try KeybayStore.open(config, interaction: ScriptedInteraction(["1234", "1234"]))
        let method = try session.auth.add(plugin: "test-counting")
        session.close()
        let e = keybayError { _ = try KeybayStore.open(config, method: method.id, interaction: ScriptedInteraction(["4321"])) }
        #expect(e?.code == .wrongSecret && e?.methodID == method.id && e?.pluginID == "test-counting", "\(String(describing: e))")
        let other = String(repeating: "0", count: 32)
        let missing = keybayError { _ = try KeybayStore.open(config, method: other, interaction: ScriptedInteraction(["1234"])) }
        #expect(missing?.code == .methodNotFound && missing?.methodID == other && missing?.path == box.storePath, "\(String(describing: missing))")
    }

    @Test func aPluginsStatusAndIdComeThrough() throws {
        let box = Sandbox()
        let config = try box.configuration()
        let e = keybayError { _ = try KeybayStore.open(config).auth.add(plugin: "no-such-plugin") }
        #expect(e?.code == .pluginNotFound && e?.pluginID == "no-such-plugin", "\(String(describing: e))")
        // test-counting refuses an option it does not take with its own status.
        let refused = keybayError { _ = try KeybayStore.open(config).auth.add(plugin: "test-counting", options: [("bogus", "1")]) }
        #expect(refused?.pluginID == "test-counting" && refused?.underlying == .pluginStatus(Int32(bitPattern: KEYBAY_ERR_INVALID_OPTION.rawValue)),
                "\(String(describing: refused))")
    }

    @Test func aSystemCallsErrnoAndPathComeThrough() throws {
        let box = Sandbox()
        // The data home is a file: opening it as a directory fails with ENOTDIR.
        mkdir(box.root + "/state", 0o700)
        writeBytes(box.root + "/data", [])
        let config = try KeybayConfiguration(applicationID: box.app, dataHome: box.root + "/data", stateHome: box.root + "/state")
        let e = keybayError { _ = try KeybayStore.open(config) }
        #expect(e?.code == .io && e?.underlying == .errno(ENOTDIR) && e?.path == box.root + "/data", "\(String(describing: e))")
        // A store directory open to others names that directory.
        let loose = Sandbox()
        #expect(try loose.cli("set", "k", "v").status == 0)
        chmod(loose.storeDirectory, 0o755)
        let insecure = keybayError { _ = try KeybayStore.status(try loose.configuration()) }
        #expect(insecure?.code == .insecurePermissions && insecure?.path == loose.storeDirectory, "\(String(describing: insecure))")
    }
}
