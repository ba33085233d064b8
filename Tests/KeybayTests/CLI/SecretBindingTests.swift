// SPDX-License-Identifier: Apache-2.0
import Foundation
import Glibc
import Synchronization
import Testing
@testable import Keybay

/// A secret goes to the method it was given for (docs/security.md, "A hostile method plugin"):
/// the CLI's unlock descriptors answer the method that unlocks, the `--new-*-fd` only the new
/// secret of the method being enrolled. A hostile method plugin, compiled at test time, asks for
/// a passphrase while it is enrolled and succeeds only if it gets one; asking for anything not
/// given for it, it gets its own question, which `--no-input` refuses (exit 4), and nothing is
/// written.
@Suite struct SecretBindingTests {
    static let hostile = "org.example.hostile"

    /// The hostile plugin, asking with `flags`, in a directory of its own; returns the directory.
    static func hostilePlugin(_ box: Sandbox, flags: String) throws -> String {
        let dir = box.root + "/plugins"
        try PluginLoaderTests.build(PluginLoaderTests.source(id: hostile, enroll: """
            uint8_t got[1024]; size_t length = 0;
            keybay_status status = h->ask_secret(h->context, KEYBAY_SECRET_PASSPHRASE, \(flags), "Passphrase", -1, got, sizeof got, &length);
            if (status != KEYBAY_OK) return status;
            if (length == 0) return KEYBAY_ERR_CANCELLED;
            p->data = malloc(length); memcpy(p->data, got, length); p->length = length; memset(got, 0, sizeof got); memset(s, 7, 32); return KEYBAY_OK;
            """), fileID: hostile, in: dir)
        return dir
    }

    /// `enroll` of the hostile plugin with `arguments` and `secrets` (`--no-input`, `--json`).
    static func enrollHostile(_ box: Sandbox, _ dir: String, _ arguments: [String], secrets: KeyValuePairs<String, String>) throws -> RunResult {
        try MethodLifecycleTests.cli(box, ["--json", "enroll", hostile, "--plugin-dir", dir, "--no-input"] + arguments, secrets: secrets)
    }

    /// The enrollment is refused as a question nobody may answer, and the store is unchanged.
    static func expectRefused(_ box: Sandbox, _ dir: String, _ arguments: [String], secrets: KeyValuePairs<String, String>,
                              sourceLocation: SourceLocation = #_sourceLocation) throws {
        let before = readBytes(box.storePath)
        let r = try enrollHostile(box, dir, arguments, secrets: secrets)
        #expect(r.status == 4 && r.error?.code == "interaction-required", "\(r.stderr)", sourceLocation: sourceLocation)
        #expect(readBytes(box.storePath) == before, sourceLocation: sourceLocation)
    }

    /// `--passphrase-fd` unlocks with the passphrase method, named or the store's only one; the
    /// hostile method being enrolled never gets it, whether it asks for a passphrase or a new one.
    @Test(arguments: [(true, "0"), (false, "0"), (true, "KEYBAY_ASK_NEW")])
    func anUnlockDescriptorNeverAnswersTheMethodBeingEnrolled(_ named: Bool, _ flags: String) throws {
        let box = Sandbox()
        let id = try MethodLifecycleTests.passphraseStore(box, passphrase: "the unlock passphrase")
        let dir = try Self.hostilePlugin(box, flags: flags)
        try Self.expectRefused(box, dir, named ? ["--method", id] : [], secrets: ["--passphrase-fd": "the unlock passphrase"])
    }

    /// `--new-passphrase-fd` answers the method being enrolled only when it asks for a new
    /// passphrase: asked for another, it stays unread; asked for a new one, it answers.
    @Test func aNewDescriptorAnswersOnlyANewSecret() throws {
        let box = Sandbox()
        let id = try MethodLifecycleTests.passphraseStore(box, passphrase: "the unlock passphrase")
        let secrets: KeyValuePairs = ["--passphrase-fd": "the unlock passphrase", "--new-passphrase-fd": "a new one"]
        try Self.expectRefused(box, try Self.hostilePlugin(box, flags: "0"), ["--method", id], secrets: secrets)
        let asksNew = try Self.enrollHostile(box, try Self.hostilePlugin(box, flags: "KEYBAY_ASK_NEW"), ["--method", id], secrets: secrets)
        #expect(asksNew.status == 0, "\(asksNew.stderr)")
        #expect(try methodIDs(box).count == 2)
    }

    /// Every unlock descriptor is the unlocking method's, not only the kind it asks for: with
    /// test-counting (a PIN) unlocking, `--passphrase-fd` answers nobody.
    @Test func everyUnlockDescriptorIsTheUnlockingMethods() throws {
        let box = Sandbox()
        #expect(try box.cli("set", "k", "v").status == 0)
        let enrolled = try MethodLifecycleTests.cli(box, ["enroll", "test-counting"], secrets: ["--pin-fd": "1234"])
        #expect(enrolled.status == 0, "\(enrolled.stderr)")
        let dir = try Self.hostilePlugin(box, flags: "0")
        try Self.expectRefused(box, dir, [], secrets: ["--pin-fd": "1234", "--passphrase-fd": "a passphrase"])
    }

    /// On a store that no method protects nothing unlocks: the unlock descriptors answer the
    /// method being enrolled (a device's existing PIN, or its new secret), as documented.
    @Test(arguments: ["0", "KEYBAY_ASK_NEW"])
    func withNothingToUnlockTheUnlockDescriptorAnswersTheMethodEnrolled(_ flags: String) throws {
        let box = Sandbox()
        #expect(try box.cli("set", "k", "v").status == 0)
        let r = try Self.enrollHostile(box, try Self.hostilePlugin(box, flags: flags), [], secrets: ["--passphrase-fd": "a passphrase"])
        #expect(r.status == 0, "\(r.stderr)")
        #expect(try methodIDs(box).count == 1)
    }

    /// Every request a plugin makes through the library names the plugin, and, unlocking, the
    /// enrolled method: what a host needs to give each secret only to the method it was given for.
    @Test func requestsNameThePluginAndTheMethodTheyUnlock() throws {
        final class Recording: KeybayInteraction, Sendable {
            let seen = Mutex<[(plugin: String?, method: String?, isNew: Bool)]>([])
            func askSecret(_ request: KeybaySecretRequest, into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
                seen.withLock { $0.append((request.pluginID, request.methodID, request.isNew)) }
                buffer[0] = 0x31
                return 1
            }
        }
        let box = Sandbox()
        let config = try box.configuration()
        let enrolling = Recording()
        let store = try KeybayStore.open(config, interaction: enrolling)
        let method = try store.auth.add(plugin: "test-counting")
        store.close()
        let unlocking = Recording()
        try KeybayStore.open(config, method: method.id, createIfAbsent: false, interaction: unlocking).close()
        let enrolled = enrolling.seen.withLock { $0 }, unlocked = unlocking.seen.withLock { $0 }
        #expect(enrolled.count == 2 && enrolled.allSatisfy { $0.plugin == "test-counting" && $0.method == nil && $0.isNew }, "\(enrolled)")
        #expect(unlocked.count == 1 && unlocked.allSatisfy { $0.plugin == "test-counting" && $0.method == method.id && !$0.isNew }, "\(unlocked)")
    }
}
