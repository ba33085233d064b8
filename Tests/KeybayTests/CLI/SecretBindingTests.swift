// SPDX-License-Identifier: Apache-2.0
import Foundation
import Glibc
import Synchronization
import Testing
@testable import Keybay

/// A secret goes to the method it was given for (docs/security.md, "A hostile method plugin"):
/// every question a plugin asks names the plugin, and the enrolled method it unlocks, so that a
/// host can tell whose it is.
@Suite struct SecretBindingTests {
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
