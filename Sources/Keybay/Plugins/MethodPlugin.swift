// SPDX-License-Identifier: Apache-2.0
import CKeybayPlugin

/// The method operations of a loaded plugin, with the ABI's buffers and statuses turned into
/// Swift values and KeybayErrors. M (the 32-byte method secret) only ever lives in guarded memory.
extension LoadedPlugin {
    static let methodSecretBytes = Int(KEYBAY_METHOD_SECRET_BYTES)

    /// Is the method (or root) usable here? Never prompts. Returns nil when it is, else the
    /// plugin's reason. A root without `probe` is usable once loaded.
    func probe() -> String? {
        guard descriptor.pointee.probe != nil else { return nil }
        do {
            try call(NonInteractive(), "is not usable here") { d, h in d.pointee.probe(h) }
            return nil
        } catch let e as KeybayError {
            return e.message
        } catch {
            return "\(error)"
        }
    }

    /// Runs the enrollment ceremony for the store and label `about` names; returns the public
    /// parameters, M, and the files the host opened for the plugin (open_file), to record.
    func enroll(options: [(String, String)], interaction: any KeybayInteraction,
                about: MethodCallContext = .none) throws -> (params: [UInt8], secret: SecureBytes, grants: [FileGrant]) {
        var params = keybay_buffer()
        var enrolling = about
        enrolling.files = .enrolling(options)
        let access = access(for: enrolling)
        let secret = try SecureBytes(count: Self.methodSecretBytes) { out in
            try withOptions(options) { opts, count in
                try call(interaction, "enrollment failed", about: enrolling, access: access) { d, h in
                    d.pointee.enroll(h, opts, count, &params, out.baseAddress!.assumingMemoryBound(to: UInt8.self))
                }
            }
        }
        let enrolled = (try take(&params, limit: MethodEnvelope.maxParamsBytes, what: "parameters"), secret, access.granted)
        try Self.refuseIfCancelled(interaction)
        return enrolled
    }

    /// A ceremony that finished although its caller was cancelled meanwhile (a key derivation
    /// polls nothing) is not used: nothing has been written yet, so the cancel still holds.
    static func refuseIfCancelled(_ interaction: any KeybayInteraction) throws {
        if interaction.isCancelled { throw KeybayError(.cancelled, "cancelled: the task waiting for this was cancelled while the method ran") }
    }

    /// Runs the unlock ceremony for `params` (the host opens the files `about.files` grants);
    /// `forVerification` uses the plugin's verify entry.
    func unwrap(params: [UInt8], interaction: any KeybayInteraction, about: MethodCallContext = .none,
                forVerification: Bool = false) throws -> SecureBytes {
        let secret = try SecureBytes(count: Self.methodSecretBytes) { out in
            try call(interaction, "could not unlock", about: about) { d, h in
                let op = (forVerification ? d.pointee.verify : nil) ?? d.pointee.unwrap!
                return op(h, params, params.count, out.baseAddress!.assumingMemoryBound(to: UInt8.self))
            }
        }
        try Self.refuseIfCancelled(interaction)
        return secret
    }

    /// One line describing the parameters, for listings.
    func describe(params: [UInt8]) throws -> String {
        var text = keybay_buffer()
        try call(NonInteractive(), "could not describe its parameters") { d, h in Self.describe(d, h, params, &text) }
        return String(decoding: try take(&text, limit: 1024, what: "description"), as: UTF8.self)
    }

    /// The descriptor's describe: the one given the host when the plugin has it, else the first one.
    static func describe(_ d: UnsafePointer<keybay_plugin>, _ h: UnsafePointer<keybay_host>, _ params: [UInt8],
                         _ text: UnsafeMutablePointer<keybay_buffer>) -> keybay_status {
        if let describe = d.pointee.describe_with_host { return describe(h, params, params.count, text) }
        return d.pointee.describe(params, params.count, text)
    }

    /// The options as a C array of keybay_option that lives for the call.
    func withOptions<R>(_ options: [(String, String)], _ body: (UnsafePointer<keybay_option>?, Int) throws -> R) throws -> R {
        // C strings that live for the call.
        let names = options.map { strdupOrFail($0.0) }, values = options.map { strdupOrFail($0.1) }
        defer { (names + values).forEach { free($0) } }
        let list = zip(names, values).map { keybay_option(name: $0.0, value: $0.1) }
        return try list.withUnsafeBufferPointer { try body($0.baseAddress, $0.count) }
    }

    private func strdupOrFail(_ s: String) -> UnsafeMutablePointer<CChar> {
        guard let p = strdup(s) else { fatalError("out of memory") }
        return p
    }
}

import Glibc
