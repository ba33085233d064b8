// SPDX-License-Identifier: Apache-2.0
@_exported import CKeybayPlugin
import Glibc

/// A thin Swift kit for writing a Keybay method plugin: implement `KeybayMethodPlugin`, then
/// export the descriptor from your library:
///
///     @_cdecl("keybay_plugin_entry_v1")
///     public func keybayPluginEntry() -> UnsafeRawPointer { KeybayPluginKit.export(MyPlugin.self) }
///
/// The kit builds the C descriptor, turns thrown `PluginFailure`s into ABI statuses (with the
/// message passed to the host's `set_error`), and owns buffer allocation and wiping.
///
/// Every requirement is `static`: a plugin is a type, never an instance. The host calls into a
/// plugin one call at a time (the ABI promises it), on whichever thread runs the host's call,
/// so the plugin needs no locking of its own for its own state; it must not keep `host` beyond
/// the call it was given to.
public protocol KeybayMethodPlugin {
    /// The plugin id, `[a-z0-9][a-z0-9._-]{0,63}`; the library must be installed as
    /// `libkeybay-<id>.so`.
    static var id: String { get }
    /// A display name, e.g. "Passphrase (Argon2id)".
    static var name: String { get }
    /// The plugin's version text.
    static var version: String { get }
    /// The ceremonies involve the user (`KEYBAY_FLAG_INTERACTIVE`). Default: `true`.
    static var interactive: Bool { get }
    /// The method needs hardware to be present, a security key say (`KEYBAY_FLAG_NEEDS_DEVICE`).
    /// Default: `false`.
    static var needsDevice: Bool { get }
    /// A store may hold at most one method of this plugin (the host refuses a second enrollment).
    static var onePerStore: Bool { get }
    /// `enroll` tunes a cost to this machine and works on any secret (`benchmark` may run it).
    static var calibrates: Bool { get }
    /// Options accepted by `enroll` (name, help).
    static var options: [(name: String, help: String)] { get }

    /// Usable here? Never prompt. Throw `.notAvailable` with a reason if not.
    ///
    /// - Parameter host: The host's services, for this call only.
    /// - Throws: ``PluginFailure/notAvailable(_:)`` with the reason.
    static func probe(host: PluginHost) throws
    /// Runs the enrollment ceremony; write the 32-byte method secret into `secret`; return the
    /// public parameters to store.
    ///
    /// - Parameters:
    ///   - host: The host's services, for this call only (ask for a new secret with
    ///     `new: true`: the host asks twice and compares).
    ///   - options: The options given, by name (each name given once).
    ///   - secret: `KEYBAY_METHOD_SECRET_BYTES` (32) bytes to fill.
    /// - Returns: The public parameters (at most 4 KiB), stored with the method and given back
    ///   to `unwrap` and `describe`. Never the secret.
    /// - Throws: A ``PluginFailure``; any other error becomes `KEYBAY_ERR_INTERNAL`.
    static func enroll(host: PluginHost, options: [String: String], secret: UnsafeMutableRawBufferPointer) throws -> [UInt8]
    /// Runs the unlock ceremony for `params`; write the method secret into `secret`.
    ///
    /// - Parameters:
    ///   - host: The host's services, for this call only.
    ///   - params: What `enroll` returned; treat them as untrusted input.
    ///   - secret: `KEYBAY_METHOD_SECRET_BYTES` (32) bytes to fill with the same secret `enroll`
    ///     wrote, given the right credential.
    /// - Throws: A ``PluginFailure`` (``PluginFailure/wrongSecret(_:)``,
    ///   ``PluginFailure/malformed(_:)``, or the host's refusal passed on).
    static func unwrap(host: PluginHost, params: [UInt8], secret: UnsafeMutableRawBufferPointer) throws
    /// One line describing `params` (a thrown failure's message reaches the host's `set_error`).
    ///
    /// Never prompts and has no host services to use.
    /// - Parameter params: What `enroll` returned; treat them as untrusted input.
    /// - Returns: One line, e.g. "Argon2id v1.3, 256 MiB, t=3, p=4".
    /// - Throws: ``PluginFailure/malformed(_:)`` for parameters it cannot read.
    static func describe(params: [UInt8]) throws -> String
}

extension KeybayMethodPlugin {
    /// `true`.
    public static var interactive: Bool { true }
    /// `false`.
    public static var needsDevice: Bool { false }
    /// `false`.
    public static var onePerStore: Bool { false }
    /// `false`.
    public static var calibrates: Bool { false }
    /// None.
    public static var options: [(name: String, help: String)] { [] }
    /// Always usable.
    public static func probe(host: PluginHost) throws {}
}

/// A failure with its ABI status and a one-line reason (never a secret).
public struct PluginFailure: Error {
    /// The ABI status the plugin's call returns.
    public let status: keybay_status
    /// The line passed to the host's `set_error`.
    public let message: String
    /// A failure with any ABI status.
    /// - Parameters:
    ///   - status: Not `KEYBAY_OK`.
    ///   - message: One line, never a secret.
    public init(_ status: keybay_status, _ message: String) { self.status = status; self.message = message }

    /// `KEYBAY_ERR_NOT_AVAILABLE`: the method cannot work here (from `probe`).
    public static func notAvailable(_ m: String) -> PluginFailure { .init(KEYBAY_ERR_NOT_AVAILABLE, m) }
    /// `KEYBAY_ERR_MALFORMED_PARAMS`: stored parameters this plugin cannot read.
    public static func malformed(_ m: String) -> PluginFailure { .init(KEYBAY_ERR_MALFORMED_PARAMS, m) }
    /// `KEYBAY_ERR_INVALID_OPTION`: an enrollment option unknown or out of range.
    public static func invalidOption(_ m: String) -> PluginFailure { .init(KEYBAY_ERR_INVALID_OPTION, m) }
    /// `KEYBAY_ERR_WRONG_SECRET`: the credential given is wrong.
    public static func wrongSecret(_ m: String) -> PluginFailure { .init(KEYBAY_ERR_WRONG_SECRET, m) }
}

/// The host's services, as Swift. Each is used only when the host offers it: its `struct_size`
/// covers the field (an older host may lack newer services) and the field is set, which is what
/// the C header's `KEYBAY_HOST_HAS` checks.
public struct PluginHost {
    let raw: UnsafePointer<keybay_host>

    /// The service at `field`, if this host offers it.
    private func service<F>(_ field: KeyPath<keybay_host, F?>) -> F? {
        guard let offset = MemoryLayout<keybay_host>.offset(of: field),
              Int(raw.pointee.struct_size) >= offset + MemoryLayout<F?>.size else { return nil }
        return raw.pointee[keyPath: field]
    }

    /// The application whose store the call serves, when the host says (not for plugin-check).
    public var applicationID: String? { service(\.application_id).map { String(cString: $0) } }

    /// Shows the user a secret to keep (a recovery key) once; `picture` draws it for a terminal.
    /// Throws the host's refusal unchanged (a host that cannot show one: the enrollment fails).
    ///
    /// - Parameters:
    ///   - kind: `KEYBAY_SECRET_RECOVERY_KEY`, say.
    ///   - text: The text the user types back (NUL-terminated, not empty).
    ///   - picture: A drawing of it for a terminal, or nil.
    /// - Throws: A ``PluginFailure`` with `KEYBAY_ERR_INTERACTION_UNAVAILABLE` when the host
    ///   offers no such service, else with the host's status.
    public func showSecret(_ kind: keybay_secret_kind, text: UnsafePointer<CChar>, picture: UnsafePointer<CChar>? = nil) throws {
        guard let show = service(\.show_secret) else { throw PluginFailure(KEYBAY_ERR_INTERACTION_UNAVAILABLE, "the host cannot show a secret") }
        let status = show(raw.pointee.context, kind, text, picture)
        guard status == KEYBAY_OK else { throw PluginFailure(status, "the secret could not be shown") }
    }

    /// Asks for a secret into `buffer`; returns its length. Throws the host's refusal unchanged.
    ///
    /// - Parameters:
    ///   - kind: `KEYBAY_SECRET_PASSPHRASE`, `KEYBAY_SECRET_PIN` or `KEYBAY_SECRET_RECOVERY_KEY`.
    ///   - prompt: One line; empty lets the host name the kind.
    ///   - new: A new secret is being chosen: the host asks twice and compares the entries.
    ///   - retriesLeft: Tries left before a lock-out, or -1 when unknown.
    ///   - buffer: Where the host writes the secret; wipe it when done.
    /// - Returns: The number of bytes written.
    /// - Throws: A ``PluginFailure`` with `KEYBAY_ERR_INTERACTION_UNAVAILABLE` (nobody can be
    ///   asked), `KEYBAY_ERR_CANCELLED` (declined), `KEYBAY_ERR_WRONG_SECRET` (the two entries of a
    ///   new secret differed), or another status of the host's.
    public func askSecret(_ kind: keybay_secret_kind, prompt: String, new: Bool = false, retriesLeft: Int32 = -1,
                          into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
        guard let ask = service(\.ask_secret) else { throw PluginFailure(KEYBAY_ERR_INTERACTION_UNAVAILABLE, "the host offers no secret entry") }
        var length = 0
        let status = ask(raw.pointee.context, kind, new ? KEYBAY_ASK_NEW : 0, prompt, retriesLeft,
                         buffer.baseAddress!.assumingMemoryBound(to: UInt8.self), buffer.count, &length)
        guard status == KEYBAY_OK else { throw PluginFailure(status, "no secret was given") }
        return length
    }

    /// Tells the user something ("touch your security key"); nothing is answered. Does nothing
    /// when the host offers no message service.
    /// - Parameters:
    ///   - text: One line, never a secret.
    ///   - level: `KEYBAY_MESSAGE_INFO`, `_PROGRESS` or `_WARNING`.
    public func message(_ text: String, level: keybay_message_level = KEYBAY_MESSAGE_INFO) {
        _ = service(\.message)?(raw.pointee.context, level, text)
    }

    /// Whether the host asks the plugin to stop (poll it during long work and fail with
    /// `KEYBAY_ERR_CANCELLED`); false when the host offers no such service.
    public var isCancelled: Bool { service(\.is_cancelled)?(raw.pointee.context) == 1 }

    /// A diagnostic line (never a secret); the host drops levels it was not asked to show.
    public func log(_ text: String, level: keybay_log_level = KEYBAY_LOG_DEBUG) {
        service(\.log)?(raw.pointee.context, level, text)
    }

    func setError(_ text: String) { service(\.set_error)?(raw.pointee.context, text) }
}

/// The kit's entry point: ``export(_:)`` builds the C descriptor of a ``KeybayMethodPlugin``.
public enum KeybayPluginKit {
    nonisolated(unsafe) static var plugin: (any KeybayMethodPlugin.Type)?
    nonisolated(unsafe) static var descriptor: UnsafeMutablePointer<keybay_plugin>?

    /// Builds (once) and returns the descriptor for `P`.
    public static func export<P: KeybayMethodPlugin>(_ type: P.Type) -> UnsafeRawPointer {
        if let descriptor { return UnsafeRawPointer(descriptor) }
        plugin = type
        let options = UnsafeMutablePointer<keybay_option_spec>.allocate(capacity: max(1, type.options.count))
        for (i, o) in type.options.enumerated() {
            options[i] = keybay_option_spec(name: strdup(o.name), help: strdup(o.help))
        }
        let d = UnsafeMutablePointer<keybay_plugin>.allocate(capacity: 1)
        d.initialize(to: keybay_plugin())
        d.pointee.abi_version = KEYBAY_PLUGIN_ABI_VERSION
        d.pointee.struct_size = UInt32(MemoryLayout<keybay_plugin>.size)
        d.pointee.id = UnsafePointer(strdup(type.id))
        d.pointee.name = UnsafePointer(strdup(type.name))
        d.pointee.version = UnsafePointer(strdup(type.version))
        d.pointee.kind = KEYBAY_KIND_METHOD.rawValue
        d.pointee.flags = (type.interactive ? KEYBAY_FLAG_INTERACTIVE : 0) | (type.needsDevice ? KEYBAY_FLAG_NEEDS_DEVICE : 0)
            | (type.onePerStore ? KEYBAY_FLAG_ONE_PER_STORE : 0) | (type.calibrates ? KEYBAY_FLAG_CALIBRATES : 0)
        d.pointee.options = UnsafePointer(options)
        d.pointee.option_count = type.options.count
        d.pointee.free_buffer = kitFreeBuffer
        d.pointee.probe = kitProbe
        d.pointee.enroll = kitEnroll
        d.pointee.unwrap = kitUnwrap
        d.pointee.describe_with_host = kitDescribe
        descriptor = d
        return UnsafeRawPointer(d)
    }

    static func run(_ host: UnsafePointer<keybay_host>?, _ body: () throws -> Void) -> keybay_status {
        do {
            try body()
            return KEYBAY_OK
        } catch let failure as PluginFailure {
            if let host { PluginHost(raw: host).setError(failure.message) }
            return failure.status
        } catch {
            if let host { PluginHost(raw: host).setError("internal error") }
            return KEYBAY_ERR_INTERNAL
        }
    }

    static func fill(_ buffer: UnsafeMutablePointer<keybay_buffer>?, _ bytes: [UInt8]) {
        guard let buffer else { return }
        let data = malloc(max(1, bytes.count))!.assumingMemoryBound(to: UInt8.self)
        bytes.withUnsafeBufferPointer { data.update(from: $0.baseAddress!, count: bytes.count) }
        buffer.pointee = keybay_buffer(data: data, length: bytes.count)
    }
}

private func kitFreeBuffer(_ buffer: UnsafeMutablePointer<keybay_buffer>?) {
    guard let buffer, let data = buffer.pointee.data else { return }
    memset(data, 0, buffer.pointee.length) // then free; the kit's buffers never hold secrets
    free(data)
    buffer.pointee = keybay_buffer()
}

private func kitProbe(_ host: UnsafePointer<keybay_host>?) -> keybay_status {
    KeybayPluginKit.run(host) { try KeybayPluginKit.plugin!.probe(host: PluginHost(raw: host!)) }
}

private func kitEnroll(_ host: UnsafePointer<keybay_host>?, _ options: UnsafePointer<keybay_option>?, _ count: Int,
                       _ params: UnsafeMutablePointer<keybay_buffer>?, _ secret: UnsafeMutablePointer<UInt8>?) -> keybay_status {
    KeybayPluginKit.run(host) {
        var parsed: [String: String] = [:]
        for i in 0..<count {
            guard let o = options?[i], let n = o.name, let v = o.value else { throw PluginFailure.invalidOption("malformed option") }
            parsed[String(cString: n)] = String(cString: v)
        }
        let out = UnsafeMutableRawBufferPointer(start: secret, count: Int(KEYBAY_METHOD_SECRET_BYTES))
        let bytes = try KeybayPluginKit.plugin!.enroll(host: PluginHost(raw: host!), options: parsed, secret: out)
        KeybayPluginKit.fill(params, bytes)
    }
}

private func kitUnwrap(_ host: UnsafePointer<keybay_host>?, _ params: UnsafePointer<UInt8>?, _ length: Int,
                       _ secret: UnsafeMutablePointer<UInt8>?) -> keybay_status {
    KeybayPluginKit.run(host) {
        let p = length > 0 ? Array(UnsafeBufferPointer(start: params, count: length)) : []
        let out = UnsafeMutableRawBufferPointer(start: secret, count: Int(KEYBAY_METHOD_SECRET_BYTES))
        try KeybayPluginKit.plugin!.unwrap(host: PluginHost(raw: host!), params: p, secret: out)
    }
}

private func kitDescribe(_ host: UnsafePointer<keybay_host>?, _ params: UnsafePointer<UInt8>?, _ length: Int,
                         _ text: UnsafeMutablePointer<keybay_buffer>?) -> keybay_status {
    KeybayPluginKit.run(host) {
        let p = length > 0 ? Array(UnsafeBufferPointer(start: params, count: length)) : []
        KeybayPluginKit.fill(text, Array(try KeybayPluginKit.plugin!.describe(params: p).utf8))
    }
}
