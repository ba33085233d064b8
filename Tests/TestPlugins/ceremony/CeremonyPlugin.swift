// SPDX-License-Identifier: Apache-2.0
import CSodium
import Glibc
import KeybayPluginKit

/// `test-ceremony`: the method plugin of `AsyncCeremonyTests` and of no other test. Those tests
/// hold its call lock while a ceremony waits for a task on Swift's cooperative pool (an answer,
/// a cancellation); a synchronous test elsewhere that wanted the same plugin would wait for that
/// lock on a cooperative thread, and two of them on a 2-core machine would leave the task no
/// thread to run on. A plugin of their own keeps every other test out of that lock.
///
/// M = keyed BLAKE2b-256(key: params.salt, message: the PIN the host gives); params:
/// `"TCER" | salt(16)`. Unlocking with the PIN `wait-for-cancel` waits (up to 300 s, polling the
/// host's is_cancelled as a touch or a KDF would) and ends CANCELLED when the host cancels,
/// TIMED_OUT otherwise.
struct CeremonyPlugin: KeybayMethodPlugin {
    static let id = "test-ceremony"
    static let name = "Ceremony test method"
    static let version = "1"

    static func enroll(host: PluginHost, options: [String: String], secret: UnsafeMutableRawBufferPointer) throws -> [UInt8] {
        if let key = options.keys.first { throw PluginFailure.invalidOption("unknown option \(key)") }
        var salt = [UInt8](repeating: 0, count: 16)
        randombytes_buf(&salt, 16)
        try derive(host: host, salt: salt, new: true, secret: secret)
        return Array("TCER".utf8) + salt
    }

    static func unwrap(host: PluginHost, params: [UInt8], secret: UnsafeMutableRawBufferPointer) throws {
        guard params.count == 20, params.starts(with: Array("TCER".utf8)) else { throw PluginFailure.malformed("not test-ceremony parameters") }
        try derive(host: host, salt: Array(params[4...]), new: false, secret: secret)
    }

    static func describe(params: [UInt8]) throws -> String { "ceremony test method" }

    private static func derive(host: PluginHost, salt: [UInt8], new: Bool, secret: UnsafeMutableRawBufferPointer) throws {
        let pin = sodium_malloc(256)!
        defer { sodium_free(pin) }
        let n = try host.askSecret(KEYBAY_SECRET_PIN, prompt: "test PIN", new: new, into: UnsafeMutableRawBufferPointer(start: pin, count: 256))
        if !new, Array(UnsafeRawBufferPointer(start: pin, count: n)) == Array("wait-for-cancel".utf8) {
            for _ in 0..<300_000 {
                if host.isCancelled { throw PluginFailure(KEYBAY_ERR_CANCELLED, "cancelled while waiting") }
                usleep(1000)
            }
            throw PluginFailure(KEYBAY_ERR_TIMED_OUT, "nobody cancelled the wait")
        }
        _ = crypto_generichash(secret.baseAddress!.assumingMemoryBound(to: UInt8.self), 32,
                               pin.assumingMemoryBound(to: UInt8.self), UInt64(n), salt, salt.count)
    }
}

/// libsodium is started here, as every plugin that uses it must: isolated, the plugin runs in
/// keybay-plugin-host, which never calls `sodium_init` for it.
@_cdecl("keybay_plugin_entry_v1")
public func keybayPluginEntry() -> UnsafeRawPointer? {
    guard sodium_init() >= 0 else { return nil }
    return KeybayPluginKit.export(CeremonyPlugin.self)
}
