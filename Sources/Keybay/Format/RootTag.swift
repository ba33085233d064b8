// SPDX-License-Identifier: Apache-2.0
/// Which root a store was created with, read from its bootstrap's provider state, so that an
/// existing store always opens with its own root, whatever the configuration asks for new ones:
///
/// - exactly 32 bytes: `file-root`, the provider state as the root made it (every store made
///   before roots could be chosen, byte-compatible with the reference);
/// - any other root: `idLength:u8 | id | stateLength:u8 | state`, plus one `0x00` byte when that
///   would be exactly 32 bytes long (so no tagged state is ever read as a file-root one). `id` is
///   a plugin id other than `file-root`; `state` is what the root's `root_create` returned.
///
/// The bootstrap is authenticated by the package and the manifest AAD, so a changed tag is
/// detected as soon as the store is opened.
enum RootTag {
    static let fileRoot = "file-root"
    static let bareStateBytes = 32

    /// The bootstrap's provider state for `state` made by root `id`.
    static func encode(root id: String, state: [UInt8]) throws -> [UInt8] {
        if id == fileRoot {
            guard state.count == bareStateBytes else {
                throw KeybayError(.pluginFailed, "file-root returned a \(state.count)-byte provider state, expected \(bareStateBytes)")
            }
            return state
        }
        let name = Array(id.utf8)
        var tagged = [UInt8(name.count)] + name + [UInt8(truncatingIfNeeded: state.count)] + state
        if tagged.count == bareStateBytes { tagged.append(0) }
        guard state.count <= 255, tagged.count <= Suite1.maxProviderStateBytes else {
            throw KeybayError(.pluginFailed, "\(id) returned a \(state.count)-byte provider state; with its root id it must fit in \(Suite1.maxProviderStateBytes) bytes (at most \(Suite1.maxProviderStateBytes - 2 - name.count))")
        }
        return tagged
    }

    /// The root id and that root's own provider state; `.malformed` for anything else.
    static func decode(_ providerState: [UInt8], context: String) throws -> (root: String, state: [UInt8]) {
        if providerState.count == bareStateBytes { return (fileRoot, providerState) }
        func malformed() -> KeybayError {
            KeybayError(.malformed, "\(context): the provider state (\(providerState.count) bytes) names no root")
        }
        guard let idLength = providerState.first.map(Int.init), idLength > 0, providerState.count >= 2 + idLength else { throw malformed() }
        let name = providerState[1...idLength]
        guard let id = String(validating: name, as: UTF8.self), MethodNames.isValidPluginID(id), id != fileRoot else { throw malformed() }
        let stateLength = Int(providerState[1 + idLength])
        let end = 2 + idLength + stateLength
        let padded = end == bareStateBytes
        guard providerState.count == end + (padded ? 1 : 0), !padded || providerState[end] == 0 else { throw malformed() }
        return (id, Array(providerState[(2 + idLength)..<end]))
    }

    /// The root id alone (for choosing the plugin before anything is loaded).
    static func root(of providerState: [UInt8], context: String) throws -> String {
        try decode(providerState, context: context).root
    }
}
