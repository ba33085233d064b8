// SPDX-License-Identifier: Apache-2.0
import CKeybayPlugin

/// A platform root served by a root plugin (`file-root` by default). The provider states it
/// takes and returns are the bootstrap's, which name the root (`RootTag`); the plugin sees only
/// its own part.
struct PluginRoot: RootProvider {
    let plugin: LoadedPlugin
    let applicationID: String
    let stateHome: String
    let domain: [UInt8]
    /// Who the root may ask (a locked keyring's unlock prompt needs a yes); root operations of a
    /// run that may not ask get `NonInteractive`.
    var interaction: any KeybayInteraction = NonInteractive()

    var id: String { plugin.id }

    /// Where the root lives; "(unknown: <the plugin's reason>)" when it cannot say.
    var location: String {
        do {
            return try line("could not say where its root is") { d, h, c, text in
                if let location = d.pointee.root_location_with_host { return location(h, c, text) }
                return d.pointee.root_location(c, text)
            } ?? "(unknown)"
        } catch let e as KeybayError {
            return "(unknown: \(e.message))"
        } catch {
            return "(unknown)"
        }
    }

    /// The root's own one-line protection note, if it offers one (and can give it now).
    var protection: String? {
        try? line("could not describe its protection") { d, h, c, text in
            guard let protection = d.pointee.root_protection else { return KEYBAY_ERR_UNSUPPORTED }
            return protection(h, c, text)
        }
    }

    /// One line of text from the plugin; nil when it does not offer it (UNSUPPORTED). After a
    /// failure the out-buffer is neither read nor freed: the plugin has freed what it made.
    private func line(_ what: String, _ body: (UnsafePointer<keybay_plugin>, UnsafePointer<keybay_host>, UnsafePointer<keybay_root_context>,
                                                 UnsafeMutablePointer<keybay_buffer>) -> keybay_status) throws -> String? {
        var text = keybay_buffer()
        do {
            try call(what) { d, h, c in body(d, h, c, &text) }
        } catch let e as KeybayError where e.code == .unsupported {
            return nil
        }
        return String(decoding: try plugin.take(&text, limit: 4096, what: what), as: UTF8.self)
    }

    func exists() throws -> Bool {
        var exists: Int32 = 0
        try call("could not check its root") { d, h, c in d.pointee.root_exists(h, c, &exists) }
        return exists != 0
    }

    func checkCreatable(options: [(String, String)]) throws {
        try checkOptionNames(options)
        _ = try exists()
    }

    /// A name given twice, and options the root does not name among its own (the plugin checks
    /// the values when it creates).
    private func checkOptionNames(_ options: [(String, String)]) throws {
        try refuseRepeatedOptionNames(options)
        guard !options.isEmpty else { return }
        guard plugin.descriptor.pointee.root_create_with_options != nil else {
            throw KeybayError(.invalidArgument, "the root \(id) takes no options (given: \(options.map(\.0).joined(separator: ", ")))")
                .with(pluginID: id, reason: "no-root-options")
        }
        let taken = plugin.options.map(\.name)
        if let unknown = options.first(where: { !taken.contains($0.0) })?.0 {
            throw KeybayError(.invalidArgument, "the root \(id) has no option '\(unknown)' (it takes \(taken.joined(separator: ", ")))")
                .with(pluginID: id, reason: "unknown-option")
        }
    }

    /// Creates the root with `options`, in the order given: with `root_create_with_options` when
    /// there are options or the root has no `root_create` (then with no options: NULL, 0).
    func create(options: [(String, String)]) throws -> [UInt8] {
        var state = keybay_buffer()
        try checkOptionNames(options)
        if options.isEmpty, plugin.descriptor.pointee.root_create != nil {
            try call("could not create its root") { d, h, c in d.pointee.root_create(h, c, &state) }
        } else {
            try plugin.withOptions(options) { list, count in
                try call("could not create its root") { d, h, c in
                    d.pointee.root_create_with_options(h, c, count == 0 ? nil : list, count, &state)
                }
            }
        }
        let own = try plugin.take(&state, limit: Suite1.maxProviderStateBytes, what: "provider state")
        guard !own.isEmpty else { throw KeybayError(.pluginFailed, "\(id) returned an empty provider state") }
        return try RootTag.encode(root: id, state: own)
    }

    /// The plugin's own part of a bootstrap's provider state. A state that names another root
    /// means another process moved the store meanwhile (the root was chosen from the same
    /// file); one that names no root, or garbage, is this root's mismatch, found before
    /// anything is decrypted.
    private func ownState(_ providerState: [UInt8]) throws -> [UInt8] {
        guard let (root, state) = try? RootTag.decode(providerState, context: "the store") else {
            throw KeybayError(.platformKeyInvalidated, "\(id): the store's provider state names no root; platform key invalidated")
        }
        guard root == id else {
            throw KeybayError(.keyChanged, "the store was moved from the root \(id) to \(root) meanwhile; open it again")
        }
        return state
    }

    func seal(_ plaintext: SecureBytes, aad: [UInt8], providerState: [UInt8]) throws -> [UInt8] {
        let providerState = try ownState(providerState)
        var sealed = keybay_buffer()
        try call("could not seal the key package") { d, h, c in
            plaintext.withUnsafeBytes { p in
                d.pointee.root_seal(h, c, providerState, providerState.count, p.baseAddress?.assumingMemoryBound(to: UInt8.self), p.count,
                                    aad, aad.count, &sealed)
            }
        }
        return try plugin.take(&sealed, limit: StoreSuite.methods.maxSealedPackageBytes, what: "sealed package")
    }

    var keepsFloor: Bool { plugin.descriptor.pointee.root_open_with_floor != nil }

    func open(_ sealed: ArraySlice<UInt8>, aad: [UInt8], providerState: [UInt8]) throws -> (package: SecureBytes, floor: UInt64) {
        let providerState = try ownState(providerState)
        var plain = keybay_buffer()
        var floor: UInt64 = 0
        try call("could not open the key package") { d, h, c in
            sealed.withUnsafeBufferPointer { s in
                if let open = d.pointee.root_open_with_floor {
                    return open(h, c, providerState, providerState.count, s.baseAddress, s.count, aad, aad.count, &plain, &floor)
                }
                return d.pointee.root_open(h, c, providerState, providerState.count, s.baseAddress, s.count, aad, aad.count, &plain)
            }
        }
        let length = plain.length
        guard length > 0, length <= sealed.count else {
            plugin.discard(&plain) // never copied: it may hold key material
            throw KeybayError(.pluginFailed, "\(id) returned a \(length)-byte key package for a \(sealed.count)-byte sealed one")
        }
        return (try plugin.takeSecure(&plain, exactly: length, what: "key package"), floor)
    }

    func raiseFloor(to epoch: UInt64, providerState: [UInt8]) throws {
        guard keepsFloor else { return }
        let providerState = try ownState(providerState)
        try call("could not raise its rollback floor to epoch \(epoch)") { d, h, c in
            d.pointee.root_raise_floor(h, c, providerState, providerState.count, epoch)
        }
    }

    func check(providerState: [UInt8]) throws -> (report: String, differingPCRs: UInt32)? {
        guard let check = plugin.descriptor.pointee.root_check else { return nil }
        let providerState = try ownState(providerState)
        var report = keybay_buffer()
        var differing: UInt32 = 0
        try call("could not check its root") { _, h, c in check(h, c, providerState, providerState.count, &report, &differing) }
        let line = String(decoding: try plugin.take(&report, limit: 4096, what: "root check report"), as: UTF8.self)
        return (line, differing)
    }

    func reseal(providerState: [UInt8], recoverySecret: SecureBytes) throws {
        guard let reseal = plugin.descriptor.pointee.root_reseal else {
            throw KeybayError(.unsupported, "the root \(id) has no root recovery").with(pluginID: id, reason: "no-root-recovery")
        }
        let providerState = try ownState(providerState)
        try call("could not re-seal its root") { _, h, c in
            recoverySecret.withUnsafeBytes { secret in
                reseal(h, c, providerState, providerState.count, secret.baseAddress?.assumingMemoryBound(to: UInt8.self), secret.count)
            }
        }
    }

    func reset() throws {
        try call("could not remove its root") { d, h, c in d.pointee.root_reset(h, c) }
    }

    func withContext<R>(_ body: (UnsafePointer<keybay_root_context>) throws -> R) rethrows -> R {
        try applicationID.withCString { app in
            try stateHome.withCString { home in
                try domain.withUnsafeBufferPointer { dom in
                    var c = keybay_root_context(struct_size: UInt32(MemoryLayout<keybay_root_context>.size),
                                                application_id: app, state_home: home, storage_domain: dom.baseAddress)
                    return try withUnsafePointer(to: &c) { try body($0) }
                }
            }
        }
    }

    private func call(_ what: String, _ body: (UnsafePointer<keybay_plugin>, UnsafePointer<keybay_host>, UnsafePointer<keybay_root_context>) -> keybay_status) throws {
        try withContext { context in
            try plugin.call(interaction, what) { d, h in body(d, h, context) }
        }
    }
}
