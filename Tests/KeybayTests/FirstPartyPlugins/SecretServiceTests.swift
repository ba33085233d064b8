// SPDX-License-Identifier: Apache-2.0
import Foundation
import Glibc
import Testing
@testable import Keybay

/// The secret-service root through the CLI, against a real gnome-keyring-daemon on a private
/// session bus (PrivateSecretService; a test that cannot start one fails).
@Suite struct SecretServiceTests {
    /// A sandbox, the private keyring, and the CLI's environment on that bus.
    struct Fixture {
        let box: Sandbox
        let service: PrivateSecretService
        var env: [String: String] { service.environment(box.environment) }

        init(app: String = "com.example.test") throws {
            box = Sandbox(app: app)
            service = try PrivateSecretService(under: box.root)
        }

        @discardableResult
        func cli(_ arguments: String..., app: String? = nil, extra: [String: String] = [:], stdin: [UInt8]? = nil) throws -> RunResult {
            var environment = env.merging(extra) { _, new in new }
            if let app { environment["KEYBAY_APP_ID"] = app }
            return try run(cliPath, arguments, environment: environment, stdin: stdin)
        }

        func status(app: String? = nil) throws -> [String: Any] {
            let result = try cli("status", "--json", app: app)
            return (try? JSONSerialization.jsonObject(with: Data(result.stdout)) as? [String: Any]) ?? [:]
        }
    }

    @Test func createOpenReadKeepsTheKeyInTheKeyring() throws {
        let f = try Fixture()
        let before = try f.service.allItems().count
        let created = try f.cli("init", "--root", "secret-service")
        #expect(created.status == 0, "\(created.stderr)")
        #expect(try f.cli("set", "api/token", "s3cret").status == 0)
        let got = try f.cli("get", "api/token")
        #expect(got.status == 0 && got.out == "s3cret", "\(got.stderr)")
        let status = try f.status()
        #expect(status["rootPlugin"] as? String == "secret-service")
        #expect(status["state"] as? String == "platform-only")
        #expect((status["rootLocation"] as? String)?.contains(PrivateSecretService.login + "/") == true, "\(status)")
        #expect((status["protection"] as? String)?.contains("while the keyring is locked") == true)
        #expect(!exists(f.box.rootPath), "no file-root key for a store on the keyring")
        #expect(try f.service.allItems().count == before + 1, "the collection holds one new item")
        let items = try f.service.rootItems(app: f.box.app)
        #expect(items.count == 1)
        // The attributes are format.md §4.2's: the item is bound to this state home.
        let item = try #require(items.first)
        #expect(try f.service.attribute("keybay-state-home", of: item) == f.box.stateHome)
        #expect(try f.service.attribute("keybay-storage-domain", of: item)?.count == 64)
        #expect(try f.service.attribute("xdg:schema", of: item) == "org.keybay.PlatformKey")
        // The bootstrap names the root (its provider state is tagged), so no option is needed to open it.
        let bytes = try #require(readBytes(f.box.storePath))
        let state = Array(bytes[10..<(10 + Int(bytes[9]))])
        #expect(try RootTag.decode(state, context: "test").root == "secret-service")
        // The independent reader opens it from docs/format.md alone, given the item's secret.
        let secret = try f.service.secretTool(["lookup", "keybay-application", f.box.app, "keybay-state-home", f.box.stateHome])
        #expect(secret.stdout.count == 32, "\(secret.stderr)")
        let secretFile = f.box.root + "/root-secret"
        writeBytes(secretFile, secret.stdout)
        let read = try run("/usr/bin/python3", [IndependentReaderTests.reader, "--app", f.box.app, "--root-secret", secretFile,
                                                "--store", f.box.storePath, "--key", "api/token"], environment: f.box.environment)
        #expect(read.status == 0 && read.out == "s3cret", "\(read.stderr)")
    }

    @Test func twoApplicationsHaveTwoItemsAndCannotOpenEachOthersStore() throws {
        let f = try Fixture(app: "com.example.one")
        let other = "com.example.two"
        #expect(try f.cli("set", "k", "one", extra: ["KEYBAY_ROOT": "secret-service"]).status == 0)
        #expect(try f.cli("set", "k", "two", app: other, extra: ["KEYBAY_ROOT": "secret-service"]).status == 0)
        let one = try f.service.rootItems(app: f.box.app), two = try f.service.rootItems(app: other)
        #expect(one.count == 1 && two.count == 1 && one != two)
        // The second application's store file put in the first one's place: its own item does not open it.
        let otherStore = f.box.dataHome + "/keybay/\(other)/keybay.v2.store"
        writeBytes(f.box.storePath, try #require(readBytes(otherStore)))
        let refused = try f.cli("get", "k")
        #expect(refused.status == 1 && refused.stderr.contains("platform-key-invalidated"), "\(refused.stderr)")
        #expect(refused.out.isEmpty)
        #expect(try f.cli("get", "k", app: other).out == "two")
    }

    /// Two homes of one application on one bus (a Flatpak and a host install, or a run with
    /// XDG_DATA_HOME and XDG_STATE_HOME set): two roots, as file-root's two key files would be.
    /// Nothing done in one home (init, root move, reset) reads or removes the other's item.
    @Test func twoStateHomesOfOneApplicationHaveTwoItemsThatNeverTouch() throws {
        let f = try Fixture()
        let other = Sandbox(app: f.box.app)
        // KEYBAY_ROOT: status there looks for a secret-service root before the store exists.
        let otherEnv = f.service.environment(other.environment).merging(["KEYBAY_ROOT": "secret-service"]) { $1 }
        func inOther(_ arguments: String...) throws -> RunResult { try run(cliPath, arguments, environment: otherEnv) }
        func otherState() throws -> String? {
            let json = try JSONSerialization.jsonObject(with: Data(inOther("status", "--json").stdout)) as? [String: Any]
            return json?["state"] as? String
        }
        func items(_ box: Sandbox) throws -> [String] { try f.service.rootItems(app: f.box.app, stateHome: box.stateHome) }

        #expect(try f.cli("init", "--root", "secret-service").status == 0)
        #expect(try f.cli("set", "k", "one").status == 0)
        let firstItem = try items(f.box)
        #expect(firstItem.count == 1)
        #expect(try otherState() == "absent", "the other home has no store and no root")
        let made = try inOther("init", "--root", "secret-service")
        #expect(made.status == 0, "\(made.stderr)")
        #expect(try inOther("set", "k", "two").status == 0)
        #expect(try f.service.rootItems(app: f.box.app).count == 2, "two items, one per state home")
        #expect(try items(other).count == 1 && items(other) != firstItem)
        #expect(try f.cli("get", "k").out == "one")
        #expect(try inOther("get", "k").out == "two")
        #expect(try otherState() == "platform-only")

        // root move in the other home, away and back: the first home's item stays.
        let away = try inOther("root", "move", "file-root")
        #expect(away.status == 0, "\(away.stderr)")
        #expect(try items(other).isEmpty && exists(other.rootPath))
        #expect(try items(f.box) == firstItem)
        // The root directory the move made is kept out of backups, as the store directory is.
        let afterMove = try JSONSerialization.jsonObject(with: Data(inOther("status", "--json").stdout)) as? [String: Any]
        let markers = afterMove?["backupExclusion"] as? [String: Any]
        #expect((markers?["rootDirectory"] as? [String])?.isEmpty == false && (markers?["storeDirectory"] as? [String])?.isEmpty == false,
                "\(String(describing: markers))")
        let back = try inOther("root", "move", "secret-service")
        #expect(back.status == 0 && !back.stderr.contains("warning"), "\(back.stderr)")
        #expect(try items(other).count == 1 && !exists(other.rootPath))
        #expect(try items(f.box) == firstItem)
        #expect(try f.cli("get", "k").out == "one")
        #expect(try inOther("get", "k").out == "two")

        // reset in the other home removes its own item only.
        let reset = try inOther("reset", "--yes")
        #expect(reset.status == 0, "\(reset.stderr)")
        #expect(try items(other).isEmpty && !exists(other.storePath))
        #expect(try items(f.box) == firstItem)
        #expect(try f.status()["state"] as? String == "platform-only")
        #expect(try f.cli("get", "k").out == "one")
        // The first store run with the other state home: no item there, store-only (as with
        // file-root, whose key file would be missing), and nothing is created or removed.
        let moved = ["XDG_STATE_HOME": other.stateHome]
        #expect(try f.cli("status", "--json", extra: moved).out.contains("\"store-only\""))
        let elsewhere = try f.cli("get", "k", extra: moved)
        #expect(elsewhere.status == 1 && elsewhere.stderr.contains("platform-key-invalidated"), "\(elsewhere.stderr)")
        #expect(try items(other).isEmpty && items(f.box) == firstItem)
        // And the other home starts over on its own item.
        #expect(try inOther("init", "--root", "secret-service").status == 0)
        #expect(try items(other).count == 1 && items(f.box) == firstItem)
    }

    @Test func aLockedKeyringIsInteractionAndChangesNothing() throws {
        let f = try Fixture()
        #expect(try f.cli("init", "--root", "secret-service").status == 0)
        #expect(try f.cli("set", "k", "v").status == 0)
        let before = try #require(readBytes(f.box.storePath))
        try f.service.lock()
        let noInput = try f.cli("get", "k", "--no-input", "--json")
        #expect(noInput.status == 4 && noInput.error?.code == "interaction-required" && noInput.error?.reason == "keyring-locked", "\(noInput.out)")
        // Without --no-input and without a terminal the prompt cannot be confirmed either.
        let plain = try f.cli("get", "k")
        #expect(plain.status != 0 && plain.out.isEmpty, "\(plain.stderr)")
        #expect(try f.cli("set", "k", "w", "--no-input").status == 4)
        // status says the keyring is locked: exit 4, interaction-required, and no state at all.
        let status = try f.cli("status", "--json", "--no-input")
        #expect(status.status == 4 && status.error?.code == "interaction-required" && status.error?.reason == "keyring-locked", "\(status.out)")
        // reset cannot delete a locked item: it removes nothing.
        let reset = try f.cli("reset", "--yes", "--no-input")
        #expect(reset.status == 4, "\(reset.stderr)")
        #expect(readBytes(f.box.storePath) == before, "the store file is byte-identical")
        #expect(try f.service.isLocked())
        try f.service.unlock()
        #expect(try f.cli("get", "k").out == "v")
    }

    /// What a locked run must never do, whatever the keyring shows: take the item for missing.
    /// get and set exit 4 (interaction-required), status exits 4 with no state, and reset exits 4
    /// leaving the store byte-identical and the item where it was.
    func expectLockedNotMissing(_ f: Fixture, store before: [UInt8], item: String?, _ where: String) throws {
        let got = try f.cli("get", "k", "--no-input")
        #expect(got.status == 4 && got.stderr.contains("[interaction-required]") && got.stdout.isEmpty, "\(`where`): \(got.stderr)")
        let plain = try f.cli("get", "k")
        #expect(plain.status == 4 && plain.stdout.isEmpty, "\(`where`), without a terminal: \(plain.stderr)")
        #expect(try f.cli("set", "k", "w", "--no-input").status == 4, "\(`where`)")
        for arguments in [["status", "--json"], ["status"]] {
            let status = try run(cliPath, arguments, environment: f.env)
            // With --json only the error object is printed, never a state.
            let stateless = arguments.contains("--json") ? jsonErrorCode(status) == "interaction-required" : status.stdout.isEmpty
            #expect(status.status == 4 && status.stderr.contains("[interaction-required]") && stateless,
                    "\(`where`): status must say the keyring is locked, not a state: \(status.out) \(status.stderr)")
        }
        let reset = try f.cli("reset", "--yes", "--no-input")
        #expect(reset.status == 4 && reset.stderr.contains("[interaction-required]"), "\(`where`): \(reset.stderr)")
        #expect(readBytes(f.box.storePath) == before, "\(`where`): the store file is byte-identical")
        #expect(try f.service.rootItems(app: f.box.app) == (item.map { [$0] } ?? []), "\(`where`): the keyring's items are as they were")
    }

    /// The keyring daemon restarts (a crash here; a logout, or a session whose keyring is not
    /// unlocked at login, does the same): the login collection loads locked from its file, and its
    /// item shows only hashed attributes (and xdg:schema org.freedesktop.Secret.Generic), so a
    /// search naming the schema no longer matches it. It is still never a missing item.
    @Test func aKeyringThatRestartsLockedIsNeverAMissingItem() throws {
        let f = try Fixture()
        #expect(try f.cli("init", "--root", "secret-service").status == 0)
        #expect(try f.cli("set", "k", "v").status == 0)
        let before = try #require(readBytes(f.box.storePath))
        let item = try #require(try f.service.rootItems(app: f.box.app).first)
        try f.service.restartLocked()
        #expect(try f.service.attribute("xdg:schema", of: item) == "org.freedesktop.Secret.Generic", "the item loaded locked, as after a logout")
        try expectLockedNotMissing(f, store: before, item: item, "login keyring loaded locked")
        // Unlocked, it is the store's root again, and reset removes both.
        try f.service.unlock()
        #expect(try f.cli("get", "k").out == "v")
        #expect(try f.status()["state"] as? String == "platform-only")
        #expect(try f.cli("reset", "--yes", "--no-input").status == 0)
        #expect(!exists(f.box.storePath))
        #expect(try f.service.rootItems(app: f.box.app).isEmpty)
    }

    /// The same locked item while the default keyring is another one that is unlocked (the
    /// user made another keyring the default after the store was created): the locked item is
    /// found by its attributes, not through the default collection.
    @Test func aLockedItemOutsideTheDefaultKeyringIsNeverMissing() throws {
        let f = try Fixture()
        #expect(try f.cli("set", "k", "v", "--root", "secret-service").status == 0)
        let before = try #require(readBytes(f.box.storePath))
        let item = try #require(try f.service.rootItems(app: f.box.app).first)
        try f.service.restartLocked()
        try f.service.setDefault("/org/freedesktop/secrets/collection/session")
        try expectLockedNotMissing(f, store: before, item: item, "locked login keyring, default 'session'")
        try f.service.setDefault(PrivateSecretService.login)
        try f.service.unlock()
        #expect(try f.cli("get", "k").out == "v")
    }

    /// No item found while the default keyring is locked says nothing about the item (a Secret
    /// Service may hide a locked collection's items from every search): interaction, not
    /// store-only, until it is unlocked; then the deleted item is store-only as ever.
    @Test func aLockedDefaultKeyringWithoutAVisibleItemIsNotAMissingItem() throws {
        let f = try Fixture()
        #expect(try f.cli("set", "k", "v", "--root", "secret-service").status == 0)
        let before = try #require(readBytes(f.box.storePath))
        try f.service.delete(try #require(try f.service.rootItems(app: f.box.app).first))
        try f.service.lock()
        try expectLockedNotMissing(f, store: before, item: nil, "item deleted, default keyring locked")
        try f.service.unlock()
        #expect(try f.status()["state"] as? String == "store-only")
        let got = try f.cli("get", "k", "--no-input")
        #expect(got.status == 1 && got.stderr.contains("[platform-key-invalidated]"), "\(got.stderr)")
    }

    /// With DISPLAY set and no session bus, GLib would run `dbus-launch --autolaunch` from PATH
    /// (and start a bus): the secret-service root never runs anything. A fake dbus-launch first on
    /// PATH records any run of it.
    @Test func withADisplayAndNoSessionBusNothingIsLaunched() throws {
        let f = try Fixture()
        let bin = f.box.root + "/fake-bin", ran = f.box.root + "/dbus-launch-ran"
        mkdir(bin, 0o700)
        let fake = bin + "/dbus-launch"
        try "#!/bin/sh\necho \"$@\" >> '\(ran)'\nexit 1\n".write(toFile: fake, atomically: true, encoding: .utf8)
        chmod(fake, 0o700)
        let noBusRuntime = f.box.root + "/empty-runtime"
        mkdir(noBusRuntime, 0o700)
        var env = f.box.environment
        env["PATH"] = bin + ":/usr/bin:/bin"
        env["DISPLAY"] = ":99"
        env["XDG_RUNTIME_DIR"] = noBusRuntime
        #expect(env["DBUS_SESSION_BUS_ADDRESS"] == nil)
        // The fake is what GLib would run: it is found and runs when asked directly.
        #expect(try run("/bin/sh", ["-c", "dbus-launch --probe"], environment: env).status == 1 && exists(ran))
        unlink(ran)
        func expectNothingRan(_ step: String) {
            #expect(!exists(ran), "\(step) ran dbus-launch: \(String(decoding: readBytes(ran) ?? [], as: UTF8.self))")
            unlink(ran)
        }

        let fresh = "com.example.nobus"
        var nobus = env
        nobus["KEYBAY_APP_ID"] = fresh
        let made = try run(cliPath, ["init", "--root", "secret-service"], environment: nobus)
        #expect(made.status == 1 && made.stderr.contains("[root-unavailable]"), "\(made.stderr)")
        #expect(!exists(f.box.dataHome + "/keybay/\(fresh)") && !exists(f.box.stateHome + "/keybay/\(fresh)"))
        expectNothingRan("init --root secret-service")
        // auto asks the same probe: file-root, and still nothing launched.
        #expect(try run(cliPath, ["init", "--root", "auto"], environment: nobus).status == 0)
        #expect(exists(f.box.stateHome + "/keybay/\(fresh)/file-root.key"))
        expectNothingRan("init --root auto")
        // An address whose transport launches a bus is refused the same way.
        for address in ["autolaunch:", "unix:path=\(f.box.root)/no-such-bus;autolaunch:"] {
            var launching = env
            launching["DBUS_SESSION_BUS_ADDRESS"] = address
            launching["KEYBAY_APP_ID"] = "com.example.autolaunch"
            let refused = try run(cliPath, ["init", "--root", "secret-service"], environment: launching)
            #expect(refused.status == 1 && refused.stderr.contains("[root-unavailable]"), "\(address): \(refused.stderr)")
            expectNothingRan("init with DBUS_SESSION_BUS_ADDRESS=\(address)")
        }

        // Without DBUS_SESSION_BUS_ADDRESS, $XDG_RUNTIME_DIR/bus (a socket of this user) is the bus.
        let runtime = f.box.root + "/runtime-with-bus"
        mkdir(runtime, 0o700)
        #expect(symlink(f.box.root + "/bus", runtime + "/bus") == 0)
        env["XDG_RUNTIME_DIR"] = runtime
        let stored = try run(cliPath, ["set", "k", "v", "--root", "secret-service"], environment: env)
        #expect(stored.status == 0, "\(stored.stderr)")
        #expect(try run(cliPath, ["get", "k"], environment: env).out == "v")
        #expect(try f.service.rootItems(app: f.box.app).count == 1)
        expectNothingRan("set and get on $XDG_RUNTIME_DIR/bus")
    }

    @Test func aDeletedItemIsStoreOnlyAndNeverCreatedAgain() throws {
        let f = try Fixture()
        #expect(try f.cli("set", "k", "v", "--root", "secret-service").status == 0)
        let before = try #require(readBytes(f.box.storePath))
        let item = try #require(try f.service.rootItems(app: f.box.app).first)
        let domain = try #require(try f.service.attribute("keybay-storage-domain", of: item))
        try f.service.delete(item)
        #expect(try f.status()["state"] as? String == "store-only")
        let got = try f.cli("get", "k", "--json")
        #expect(got.status == 1 && got.error?.code == "platform-key-invalidated" && got.error?.reason == "item-missing", "\(got.out)")
        let set = try f.cli("set", "k", "w", "--json")
        #expect(set.status == 1 && set.error?.code == "platform-key-invalidated" && set.error?.reason == "item-missing", "\(set.out)")
        #expect(try f.service.rootItems(app: f.box.app).isEmpty, "no item is created over one that disappeared")
        #expect(!exists(f.box.rootPath), "and no other root is used instead")
        #expect(readBytes(f.box.storePath) == before)
        // A new item with the same schema and attributes (and another key) does not open it either.
        let planted = try f.service.secretTool(["store", "--label", "planted", "xdg:schema", "org.keybay.PlatformKey",
                                                "keybay-application", f.box.app, "keybay-storage-domain", domain,
                                                "keybay-state-home", f.box.stateHome],
                                               stdin: [UInt8](repeating: 0x41, count: 32))
        #expect(planted.status == 0, "\(planted.stderr)")
        #expect(try f.service.rootItems(app: f.box.app).count == 1)
        let mismatch = try f.cli("get", "k", "--json")
        #expect(mismatch.status == 1 && mismatch.error?.code == "platform-key-invalidated" && mismatch.error?.reason == "item-mismatch", "\(mismatch.out)")
        #expect(try f.cli("init", "--root", "secret-service").status == 1, "nothing is initialised over the store")
        #expect(readBytes(f.box.storePath) == before)
    }

    @Test func withoutASecretServiceNothingIsCreatedAndNothingFallsBack() throws {
        let f = try Fixture()
        #expect(try f.cli("set", "k", "v", "--root", "secret-service").status == 0)
        let noBus = ["DBUS_SESSION_BUS_ADDRESS": "unix:path=\(f.box.root)/no-such-bus", "XDG_RUNTIME_DIR": f.box.root + "/no-runtime"]
        // An existing store on the keyring: root-unavailable, never opened through file-root.
        let got = try f.cli("get", "k", "--json", extra: noBus)
        #expect(got.status == 1 && got.error?.code == "root-unavailable" && got.error?.reason == "no-service", "\(got.out)")
        #expect(!exists(f.box.rootPath))
        // reset checks both sides before removing anything: without the keyring it removes nothing.
        let reset = try f.cli("reset", "--yes", "--json", extra: noBus)
        #expect(reset.status == 1 && reset.error?.code == "root-unavailable" && reset.error?.reason == "no-service", "\(reset.out)")
        #expect(exists(f.box.storePath))
        #expect(try f.service.rootItems(app: f.box.app).count == 1)
        let forced = try f.cli("get", "k", "--root", "file-root", "--json")
        #expect(forced.status == 2 && forced.error?.code == "invalid-argument" && forced.error?.reason == "other-root"
                && forced.error?.pluginID == "secret-service" && forced.error?.path == f.box.storePath, "\(forced.out)")
        // A new store: init fails naming the Secret Service and creates nothing.
        let fresh = "com.example.fresh"
        let made = try f.cli("init", "--root", "secret-service", "--json", app: fresh, extra: noBus)
        #expect(made.status == 1 && made.error?.code == "root-unavailable" && made.error?.reason == "no-service", "\(made.out)")
        #expect(!exists(f.box.dataHome + "/keybay/\(fresh)"), "not even the store's directory or its lock")
        #expect(!exists(f.box.stateHome + "/keybay/\(fresh)"))
        // auto decides once, at creation: file-root when no Secret Service answers ...
        #expect(try f.cli("init", "--root", "auto", app: fresh, extra: noBus).status == 0)
        #expect(try f.status(app: fresh)["rootPlugin"] as? String == "file-root")
        // ... and secret-service when one does.
        let other = "com.example.auto"
        #expect(try f.cli("init", "--root", "auto", app: other).status == 0)
        #expect(try f.status(app: other)["rootPlugin"] as? String == "secret-service")
    }

    @Test func rootMoveKeepsRecordsAndMethodsAndRemovesTheOldRoot() throws {
        let f = try Fixture()
        let env = f.env
        #expect(try f.cli("set", "a", "1").status == 0)
        #expect(try f.cli("set", "b/c", "2").status == 0)
        let enrolled = try f.box.cli(["enroll", "passphrase"] + fastPassphraseFlags, secret: "correct horse", option: "--passphrase-fd", environment: env)
        #expect(enrolled.status == 0, "\(enrolled.stderr)")
        let methods = try methodIDs(f.box, environment: env)
        #expect(exists(f.box.rootPath))
        // A protected store needs its method to move, as for any change of its key.
        #expect(try f.cli("root", "move", "secret-service", "--no-input").status == 4)
        let moved = try f.box.cli(["root", "move", "secret-service"], secret: "correct horse", option: "--passphrase-fd", environment: env)
        #expect(moved.status == 0, "\(moved.stderr)")
        #expect(!exists(f.box.rootPath), "the old root file is gone")
        #expect(try f.service.rootItems(app: f.box.app).count == 1)
        #expect(try f.status()["rootPlugin"] as? String == "secret-service")
        #expect(try methodIDs(f.box, environment: env) == methods)
        for (key, value) in [("a", "1"), ("b/c", "2")] {
            let got = try f.box.cli(["get", key], secret: "correct horse", option: "--passphrase-fd", environment: env)
            #expect(got.out == value, "\(got.stderr)")
        }
        // Moving to the root it is on is refused; back to file-root removes the keyring item.
        let again = try f.box.cli(["root", "move", "secret-service", "--json"], secret: "correct horse", option: "--passphrase-fd", environment: env)
        #expect(again.status == 2 && again.error?.code == "invalid-argument" && again.error?.reason == "same-root" && again.error?.pluginID == "secret-service",
                "\(again.out)")
        let back = try f.box.cli(["root", "move", "file-root"], secret: "correct horse", option: "--passphrase-fd", environment: env)
        #expect(back.status == 0, "\(back.stderr)")
        #expect(exists(f.box.rootPath))
        #expect(try f.service.rootItems(app: f.box.app).isEmpty)
        #expect(try f.box.cli(["get", "b/c"], secret: "correct horse", option: "--passphrase-fd", environment: env).out == "2")
    }

    /// SIGKILL of a root move at random moments, back and forth: after every kill the store opens
    /// (with the old root or the new one) and holds every record. The move runs in the test
    /// writer, which reports on a pipe when the store is open and the move begins: only kills
    /// after that count as killed mid-way.
    @Test func killedMovesLeaveAStoreThatOpensWithOneRoot() throws {
        let f = try Fixture()
        let env = f.env
        let writer = buildDirectory + "/keybay-test-writer"
        let value = [UInt8](repeating: 7, count: 100_000)
        #expect(try f.cli("set", "big", "--stdin", stdin: value).status == 0)
        #expect(try f.cli("set", "small", "x").status == 0)
        let runs = ProcessInfo.processInfo.environment["KEYBAY_CRASH_RUNS"].flatMap(Int.init).map { max(10, $0 / 10) } ?? 16
        let clock = ContinuousClock()
        var target = "secret-service"
        let uninterrupted = clock.measure {
            #expect(waitChild(spawnChild(writer, [f.box.app, "move-root", target], environment: env, stdinPath: "/dev/null")).succeeded)
        }
        target = "file-root"
        // Kill anywhere from start to about twice an uninterrupted move; the window shrinks after
        // a move that finished first and grows after a kill (more after one during start-up), so
        // the kills keep landing mid-way whatever the machine's load did to the first measurement.
        var window = UInt32(uninterrupted.components.attoseconds / 1_000_000_000_000 + uninterrupted.components.seconds * 1_000_000) * 2
        var killedMidWay = 0, killedInStartUp = 0, completed = 0
        for _ in 0..<runs {
            var report: [Int32] = [0, 0]
            #expect(closeOnExecPipe(&report))
            let pid = spawnChild(writer, [f.box.app, "move-root", target], environment: env, stdinPath: "/dev/null", stdout: report[1])
            close(report[1])
            usleep(UInt32.random(in: 0...max(window, 1)))
            kill(pid, SIGKILL)
            let outcome = waitChild(pid)
            var began: UInt8 = 0
            let moveBegan = read(report[0], &began, 1) == 1 && began == UInt8(ascii: "w")
            close(report[0])
            if outcome.succeeded {
                completed += 1
                window = max(1000, window / 3 * 2)
            } else {
                #expect(outcome.signalled, "a move to \(target) failed without being killed")
                if moveBegan { killedMidWay += 1; window += window / 8 } else { killedInStartUp += 1; window += window / 4 }
            }
            let root = try #require(f.status()["rootPlugin"] as? String)
            let small = try f.cli("get", "small")
            #expect(small.out == "x", "after a kill the store must open (root \(root)): \(small.stderr)")
            #expect(try f.cli("get", "big").stdout == value)
            // The next move goes to the root it is not on now.
            target = root == "file-root" ? "secret-service" : "file-root"
        }
        // Whatever was left over, one more move completes and leaves exactly one root.
        #expect(try f.cli("root", "move", target).status == 0)
        #expect(exists(f.box.rootPath) == (target == "file-root"))
        #expect(try f.service.rootItems(app: f.box.app).count == (target == "file-root" ? 0 : 1))
        #expect(try f.cli("get", "small").out == "x")
        print("root-move kills: \(runs) runs, \(killedMidWay) killed mid-way, \(killedInStartUp) killed during start-up, "
              + "\(completed) completed; window \(window) µs at the end")
        #expect(killedMidWay > 0, "no move was killed after it began; the window was \(window) µs")
    }

    /// The secret-service root as the rollback tests drive it: KEYBAY_ROOT picks it for new
    /// stores, and its floor is the last 8 bytes of the item's 40-byte secret (0 while it is 32).
    static func rollbackRoot(_ f: Fixture) -> RootUnderTest {
        let env = f.service.environment(["KEYBAY_ROOT": "secret-service"])
        let service = f.service
        return RootUnderTest(name: "secret-service", environment: { $0.environment.merging(env) { $1 } }, floor: { box in
            let secret = try service.secretTool(["lookup", "keybay-application", box.app]).stdout
            #expect(secret.count == 32 || secret.count == 40)
            return secret.count == 40 ? secret[32...].reduce(0) { $0 << 8 | UInt64($1) } : 0
        })
    }

    @Test func olderCopiesAreRefusedByTheItemsFloor() throws {
        let f = try Fixture()
        try RollbackTests.olderCopiesAreRefused(Self.rollbackRoot(f), in: f.box)
        #expect(try f.status()["rootPlugin"] as? String == "secret-service")
    }

    @Test func recordWritesLeaveTheItemsFloorAlone() throws {
        let f = try Fixture()
        try RollbackTests.recordWritesLeaveTheFloorAlone(Self.rollbackRoot(f), in: f.box)
    }

    @Test func aKillBetweenStoreAndItemFloorLeavesAStoreThatOpens() throws {
        let f = try Fixture()
        try RollbackTests.aKillBetweenStoreAndFloorLeavesAStoreThatOpens(Self.rollbackRoot(f), library: "libkeybay-secret-service.so", in: f.box)
    }

    /// Crash kills of enroll and remove on the keyring (the store write, then the item's floor),
    /// as ProcessTests and Tpm2Tests run them. Short by default; KEYBAY_CRASH_RUNS sets the count.
    @Test func killedRotationsNeverTearTheStore() async throws {
        let f = try Fixture()
        let runs = ProcessInfo.processInfo.environment["KEYBAY_CRASH_RUNS"].flatMap(Int.init) ?? 24
        try await ProcessTests.killWriters(f.box, runs: runs, environment: Self.rollbackRoot(f).environment(f.box), rotationsOnly: true)
        #expect(try f.status()["rootPlugin"] as? String == "secret-service")
    }

    /// A move raises the new root's floor to the move's epoch, as any rotation does.
    @Test func aMoveRaisesTheNewRootsFloor() throws {
        let f = try Fixture()
        #expect(try f.cli("set", "k", "v").status == 0)
        #expect(try f.cli("root", "move", "secret-service").status == 0)
        let root = Self.rollbackRoot(f)
        #expect(try root.floor(f.box) == 2)
    }

    @Test func pluginCheckPassesForTheSecretServiceRoot() throws {
        let f = try Fixture()
        let checked = try f.cli("plugin-check", pluginDirectory + "/libkeybay-secret-service.so")
        #expect(checked.status == 0, "\(checked.out)")
        #expect(checked.out.contains("0 failed"))
        #expect(try f.service.rootItems(app: "plugin-check").isEmpty, "the check removes what it made")
    }

    @Test func plainFileRootStoresNeverLoadLibsecret() throws {
        let box = Sandbox()
        #expect(try box.cli("set", "k", "v").status == 0)
        var env = box.environment
        env["LD_DEBUG"] = "files"
        let got = try run(cliPath, ["get", "k"], environment: env)
        #expect(got.out == "v")
        #expect(got.stderr.contains("libkeybay-file-root.so"), "LD_DEBUG shows what is loaded")
        #expect(!got.stderr.contains("libsecret") && !got.stderr.contains("libkeybay-secret-service"), "\(got.stderr.prefix(400))")
    }
}
