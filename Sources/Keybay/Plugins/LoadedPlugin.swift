// SPDX-License-Identifier: Apache-2.0
import CKeybayPlugin
import CKeybayPluginIsolation
import Glibc
import Synchronization

/// A checked plugin descriptor. Calls into the plugin are serialised (the ABI promises plugins
/// one thread at a time) and every buffer it hands out goes back to its own `free_buffer`.
final class LoadedPlugin: @unchecked Sendable {
    /// The host's own copy of the descriptor: the plugin's first `struct_size` bytes, the fields
    /// an older plugin does not have left NULL. (Reading the plugin's struct as this header
    /// declares it would read past an older plugin's smaller descriptor.)
    let descriptor: UnsafePointer<keybay_plugin>
    let path: String
    let id: String
    let name: String
    let version: String
    let isRoot: Bool
    let isInteractive: Bool
    /// The plugin says its method needs hardware to be present (`plugins` shows it).
    let needsDevice: Bool
    /// A store may hold at most one method of this plugin.
    let isOnePerStore: Bool
    /// Enrollment tunes a cost to this machine on any secret (`benchmark` can run it).
    let calibrates: Bool
    let options: [(name: String, help: String)]
    /// The `unix:` sockets a method plugin declares: what connect_socket may connect it to.
    let sockets: [String]
    /// The helper the plugin runs in, when isolated: `descriptor`'s operations are its proxies,
    /// which find it through keybay_isolation_enter (see `call`).
    let isolation: OpaquePointer?
    var isIsolated: Bool { isolation != nil }
    /// A root plugin known only from what it said in its sandbox (a listing of a file outside the
    /// installation): it has no operations here.
    let isDescribedOnly: Bool
    private let callLock = Mutex(())

    /// The smallest descriptor a host accepts: the first version-1 header's, which ends at
    /// `root_reset`; `KEYBAY_PLUGIN_FIELDS_ADDED_IN_V1` function pointers were added after it
    /// (abi_checks.c asserts both). Plain arithmetic, not a key path offset: key paths cost
    /// start-up time the CLI measures.
    static let minimumDescriptorBytes = MemoryLayout<keybay_plugin>.size - Int(KEYBAY_PLUGIN_FIELDS_ADDED_IN_V1) * MemoryLayout<UnsafeRawPointer>.size

    /// A root plugin as it described itself in its sandbox, for a listing: its operations are
    /// not copied (its helper is gone, and a root never runs there), so nothing calls it.
    convenience init(describing raw: UnsafePointer<keybay_plugin>, path: String) throws {
        var described = raw.pointee
        described.probe = nil
        described.enroll = nil
        described.unwrap = nil
        described.verify = nil
        described.describe = nil
        described.describe_with_host = nil
        try self.init(descriptor: &described, path: path, describedOnly: true)
    }

    init(descriptor raw: UnsafePointer<keybay_plugin>, path: String, isolation: OpaquePointer? = nil, describedOnly: Bool = false) throws {
        func refuse(_ reason: String, _ why: String) -> KeybayError {
            KeybayError(.pluginRefused, "plugin \(path): \(why); refusing to load it").with(path: path, reason: reason)
        }
        // abi_version and struct_size come first in every version.
        let abiVersion = UnsafeRawPointer(raw).load(as: UInt32.self)
        let structSize = Int(UnsafeRawPointer(raw).load(fromByteOffset: 4, as: UInt32.self))
        guard abiVersion == KEYBAY_PLUGIN_ABI_VERSION else {
            throw refuse("abi-version", "ABI version \(abiVersion), this host speaks \(KEYBAY_PLUGIN_ABI_VERSION)")
        }
        guard structSize >= Self.minimumDescriptorBytes else {
            throw refuse("descriptor-size", "descriptor is \(structSize) bytes, expected at least \(Self.minimumDescriptorBytes)")
        }
        let copy = UnsafeMutablePointer<keybay_plugin>.allocate(capacity: 1)
        // The copy is the loaded plugin's from the end of init on; a refusal frees it.
        var kept = false
        defer { if !kept { copy.deallocate() } }
        copy.initialize(to: keybay_plugin())
        UnsafeMutableRawPointer(copy).copyMemory(from: raw, byteCount: min(structSize, MemoryLayout<keybay_plugin>.size))
        let descriptor = UnsafePointer(copy)
        let d = descriptor.pointee
        guard let idPointer = d.id, let namePointer = d.name, let versionPointer = d.version else {
            throw refuse("missing-field", "descriptor lacks an id, a name or a version")
        }
        guard d.free_buffer != nil else { throw refuse("missing-field", "descriptor lacks free_buffer") }
        let kind = keybay_plugin_kind(rawValue: d.kind)
        switch kind {
        case KEYBAY_KIND_ROOT where describedOnly:
            break // checked in full when it is loaded as a root, in process
        case KEYBAY_KIND_ROOT:
            // Where a newer form of an operation exists, either form will do (the host prefers the newer).
            guard d.root_exists != nil, d.root_create != nil || d.root_create_with_options != nil, d.root_seal != nil,
                  d.root_open != nil || d.root_open_with_floor != nil,
                  d.root_location != nil || d.root_location_with_host != nil, d.root_reset != nil else {
                throw refuse("missing-operation", "a root plugin lacks a root operation")
            }
            guard (d.root_open_with_floor == nil) == (d.root_raise_floor == nil) else {
                throw refuse("rollback-floor-pair", "a root plugin offers one rollback-floor operation without the other")
            }
        case KEYBAY_KIND_METHOD:
            guard d.probe != nil, d.enroll != nil, d.unwrap != nil, d.describe != nil || d.describe_with_host != nil else {
                throw refuse("missing-operation", "a method plugin lacks probe, enroll, unwrap or describe")
            }
        default:
            throw refuse("unknown-kind", "unknown plugin kind \(d.kind)")
        }
        guard d.option_count <= 64, d.option_count == 0 || d.options != nil else { throw refuse("malformed-options", "malformed option list") }
        let sockets = kind == KEYBAY_KIND_METHOD ? try DeclaredSockets.of(d, path: path) : []
        kept = true
        self.descriptor = descriptor
        self.path = path
        self.isolation = isolation
        self.isDescribedOnly = describedOnly
        self.id = String(cString: idPointer)
        self.name = String(cString: namePointer)
        self.version = String(cString: versionPointer)
        self.isRoot = kind == KEYBAY_KIND_ROOT
        self.isInteractive = d.flags & KEYBAY_FLAG_INTERACTIVE != 0
        self.needsDevice = d.flags & KEYBAY_FLAG_NEEDS_DEVICE != 0
        self.isOnePerStore = d.flags & KEYBAY_FLAG_ONE_PER_STORE != 0
        self.calibrates = d.flags & KEYBAY_FLAG_CALIBRATES != 0
        self.sockets = sockets
        self.options = (0..<d.option_count).compactMap { i in
            let o = d.options[i]
            guard let n = o.name else { return nil }
            return (String(cString: n), o.help.map { String(cString: $0) } ?? "")
        }
    }

    /// A plugin refused after loading (its id or kind) is dropped: its descriptor copy goes with it.
    deinit { descriptor.deallocate() }

    /// The descriptor's id must be the one its file name claims, and the kind the one asked for.
    func expect(id expected: String, kind: keybay_plugin_kind?) throws {
        guard id == expected else {
            throw KeybayError(.pluginRefused, "plugin \(path) calls itself '\(id)', not '\(expected)'; refusing to use it").with(path: path, reason: "id-mismatch")
        }
        guard let kind else { return }
        guard isRoot == (kind == KEYBAY_KIND_ROOT) else {
            throw KeybayError(.pluginRefused, "plugin \(path) is a \(isRoot ? "root" : "method") plugin, not a \(isRoot ? "method" : "root") plugin").with(path: path, reason: "wrong-kind")
        }
    }

    /// Calls the plugin with a host bridge, turning a non-OK status into a KeybayError that
    /// carries the plugin's own explanation.
    func call(_ interaction: any KeybayInteraction, _ what: String, about: MethodCallContext = .none,
              _ body: (UnsafePointer<keybay_plugin>, UnsafePointer<keybay_host>) -> keybay_status) throws {
        try call(interaction, what, about: about, access: access(for: about), body)
    }

    /// What open_file and connect_socket may hand the plugin in a call for `about`.
    func access(for about: MethodCallContext) -> HostAccess {
        HostAccess(plugin: id, files: about.files, sockets: sockets, keybay: about.keybay)
    }

    /// `call` with the host services of `access`, which keeps what they opened (an enrollment's grants).
    func call(_ interaction: any KeybayInteraction, _ what: String, about: MethodCallContext, access: HostAccess,
              _ body: (UnsafePointer<keybay_plugin>, UnsafePointer<keybay_host>) -> keybay_status) throws {
        let bridge = HostBridge(interaction, pluginID: id, about: about, access: access)
        let status = callLock.withLock { _ in
            if let isolation { keybay_isolation_enter(isolation) }
            defer { if isolation != nil { keybay_isolation_leave() } }
            return bridge.withHost { body(descriptor, $0) }
        }
        guard status != KEYBAY_OK else { return }
        if let failure = bridge.failure, status == KEYBAY_ERR_INTERACTION_UNAVAILABLE || status == KEYBAY_ERR_CANCELLED {
            // The host's refusal, with the reason the plugin gave for asking (secret-service's
            // keyring-locked), if it gave one.
            throw failure.with(pluginID: id, underlying: .pluginStatus(Int32(bitPattern: status.rawValue)))
                .with(detail: bridge.pendingDetail ?? bridge.errorDetail)
        }
        throw Self.error(for: status, plugin: id, root: isRoot, what: what, detail: bridge.errorText)
            .with(detail: bridge.pendingDetail ?? bridge.errorDetail)
    }

    static func error(for status: keybay_status, plugin: String, root: Bool = false, what: String, detail: String?) -> KeybayError {
        let (code, fallback): (KeybayError.Code, String) = switch status {
        case KEYBAY_ERR_CANCELLED: (.cancelled, "cancelled")
        case KEYBAY_ERR_INTERACTION_UNAVAILABLE: (.interactionRequired, "needs a secret or a confirmation, but the host cannot ask")
        // A root that cannot be reached (no device, no permission, no service) is not a method.
        case KEYBAY_ERR_NOT_AVAILABLE: (root ? .rootUnavailable : .methodUnavailable, "is not available here")
        case KEYBAY_ERR_PIN_REQUIRED: (.pinRequired, "needs a PIN")
        case KEYBAY_ERR_LOCKED: (.locked, "is locked")
        case KEYBAY_ERR_WRONG_SECRET: (.wrongSecret, "wrong secret")
        case KEYBAY_ERR_TIMED_OUT: (.timedOut, "timed out")
        case KEYBAY_ERR_MALFORMED_PARAMS: (.malformed, "stored parameters are malformed")
        case KEYBAY_ERR_UNSUPPORTED: (.unsupported, "unsupported request")
        case KEYBAY_ERR_INVALID_OPTION: (.invalidArgument, "invalid option")
        case KEYBAY_ERR_ROOT_MISSING, KEYBAY_ERR_ROOT_MISMATCH: (.platformKeyInvalidated, "platform key invalidated")
        case KEYBAY_ERR_ROOT_EXISTS: (.stateConflict, "a root exists already")
        case KEYBAY_ERR_INTEGRITY: (.integrity, "authentication failed")
        case KEYBAY_ERR_INSECURE: (.insecurePermissions, "insecure permissions")
        case KEYBAY_ERR_IO: (.io, "I/O failure")
        default: (.pluginFailed, "failed with status \(status.rawValue)")
        }
        return KeybayError(code, "\(plugin) \(what): \(detail ?? fallback)").with(pluginID: plugin, underlying: .pluginStatus(Int32(bitPattern: status.rawValue)))
    }

    /// Runs `body` under the plugin's call lock (the ABI promises one thread at a time).
    func locked<R>(_ body: () throws -> R) rethrows -> R {
        try callLock.withLock { _ in try body() }
    }

    /// Hands a buffer back to the plugin unread (it wipes what it frees).
    func discard(_ buffer: inout keybay_buffer) {
        callLock.withLock { _ in descriptor.pointee.free_buffer(&buffer) }
    }

    /// Copies a plugin buffer out (into guarded memory when `secret`) and frees it in the plugin.
    func take(_ buffer: inout keybay_buffer, limit: Int, what: String) throws -> [UInt8] {
        defer { discard(&buffer) }
        guard buffer.length <= limit else {
            throw KeybayError(.pluginFailed, "\(id) returned \(buffer.length) bytes of \(what), limit \(limit)")
        }
        guard buffer.length > 0 else { return [] }
        guard let data = buffer.data else { throw KeybayError(.pluginFailed, "\(id) returned a null \(what) buffer") }
        return Array(UnsafeBufferPointer(start: data, count: buffer.length))
    }

    func takeSecure(_ buffer: inout keybay_buffer, exactly count: Int, what: String) throws -> SecureBytes {
        defer { discard(&buffer) }
        guard buffer.length == count, let data = buffer.data else {
            throw KeybayError(.pluginFailed, "\(id) returned \(buffer.length) bytes of \(what), expected \(count)")
        }
        return SecureBytes(copying: UnsafeRawBufferPointer(start: data, count: count))
    }
}
