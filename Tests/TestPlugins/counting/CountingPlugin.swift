// SPDX-License-Identifier: Apache-2.0
import CSodium
import Glibc
import KeybayPluginKit

/// `test-counting`: a method plugin for tests, written with the Swift kit. It counts every call
/// (exported as `keybay_test_counting_calls`), so tests can prove which operations reach a
/// method plugin. Its secret: M = HMAC-SHA256(key: params.salt, message: the PIN the host gives).
/// Params: `"TCNT" | salt(16)`. Option `fail=unavailable` makes probe report the method unusable.
/// It remembers the application id the host gave (`keybay_test_counting_applications`).
nonisolated(unsafe) var callCounts: [Int32] = [0, 0, 0, 0] // probe, enroll, unwrap, describe

@_cdecl("keybay_test_counting_calls")
public func countingCalls(_ which: Int32) -> Int32 { callCounts[Int(which)] }

/// Every application id the host gave an enroll or unwrap, as lines "enroll APP" / "unwrap APP"
/// ("-" when it gave none): tests running at the same time each look for their own.
nonisolated(unsafe) var applicationsSeen = strdup("")!

@_cdecl("keybay_test_counting_applications")
public func countingApplications() -> UnsafePointer<CChar> { UnsafePointer(applicationsSeen) }

private func record(_ operation: String, _ host: PluginHost) {
    let seen = String(cString: applicationsSeen) + "\(operation) \(host.applicationID ?? "-")\n"
    free(applicationsSeen)
    applicationsSeen = strdup(seen)!
}

struct CountingPlugin: KeybayMethodPlugin {
    static let id = "test-counting"
    static let name = "Counting test method"
    static let version = "1"
    static let options = [(name: "label-hint", help: "ignored; proves options reach the plugin")]

    static func probe(host: PluginHost) throws { callCounts[0] += 1 }

    static func enroll(host: PluginHost, options: [String: String], secret: UnsafeMutableRawBufferPointer) throws -> [UInt8] {
        callCounts[1] += 1
        record("enroll", host)
        for key in options.keys where key != "label-hint" { throw PluginFailure.invalidOption("unknown option \(key)") }
        var salt = [UInt8](repeating: 0, count: 16)
        randombytes_buf(&salt, 16)
        try derive(host: host, salt: salt, new: true, secret: secret)
        return Array("TCNT".utf8) + salt
    }

    static func unwrap(host: PluginHost, params: [UInt8], secret: UnsafeMutableRawBufferPointer) throws {
        callCounts[2] += 1
        record("unwrap", host)
        guard params.count == 20, params.starts(with: Array("TCNT".utf8)) else { throw PluginFailure.malformed("not test-counting parameters") }
        try derive(host: host, salt: Array(params[4...]), new: false, secret: secret)
    }

    static func describe(params: [UInt8]) throws -> String {
        callCounts[3] += 1
        return "counting test method"
    }

    private static func derive(host: PluginHost, salt: [UInt8], new: Bool, secret: UnsafeMutableRawBufferPointer) throws {
        let pin = sodium_malloc(256)!
        defer { sodium_free(pin) }
        let n = try host.askSecret(KEYBAY_SECRET_PIN, prompt: "test PIN", new: new, into: UnsafeMutableRawBufferPointer(start: pin, count: 256))
        var state = crypto_auth_hmacsha256_state()
        _ = crypto_auth_hmacsha256_init(&state, salt, salt.count)
        _ = crypto_auth_hmacsha256_update(&state, pin.assumingMemoryBound(to: UInt8.self), UInt64(n))
        _ = crypto_auth_hmacsha256_final(&state, secret.baseAddress!.assumingMemoryBound(to: UInt8.self))
    }
}

/// libsodium is started here, as every plugin that uses it must: isolated, the plugin runs in
/// keybay-plugin-host, which never calls `sodium_init` for it.
@_cdecl("keybay_plugin_entry_v1")
public func keybayPluginEntry() -> UnsafeRawPointer? {
    guard sodium_init() >= 0 else { return nil }
    return KeybayPluginKit.export(CountingPlugin.self)
}
