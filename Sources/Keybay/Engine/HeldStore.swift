// SPDX-License-Identifier: Apache-2.0
/// The engine of a store the agent holds: another process unlocked it (with the root and a
/// method: the package opened, the rollback floor checked, the file authenticated) and handed
/// over the file's identity and its generation's keys. This engine never reaches the root (no
/// plugin is loaded) and never changes methods; it reads and writes records with those keys
/// through the same commit as every session (staged, fsynced, renamed, read back, under the
/// store's lock), and refuses any live file but the one it holds (`followsOtherWriters` false).
extension StoreEngine {
    init(holding settings: StoreSettings, rootID: String, domain: [UInt8]) {
        self.settings = settings
        interaction = NonInteractive()
        existingFile = nil
        found = nil
        followsOtherWriters = false
        keyring = Keyring(root: HeldRoot(id: rootID, storePath: settings.storePath), domain: domain, context: settings.storePath)
    }

    /// The live file as handed over: it must still be the file `identity` names, and its
    /// manifest must authenticate under `keys` (the domain, the bootstrap and the sealed package
    /// are bound into it). The methods stay sealed under the root: the generation lists none.
    func adopt(keys: StoreKeys, identity: FileIdentity) throws -> (StoreFile, Generation) {
        guard let file = try storeFile(create: false) else { throw try missingStore() }
        let generation = try file.withLock(.shared) { () throws -> Generation in
            guard let read = try file.read(), read.identity == identity else {
                throw KeybayError(.keyChanged, "\(storePath) changed after it was unlocked (another process wrote it); unlock it again").with(path: storePath)
            }
            let layout = try StoreLayout.decode(read.bytes, context: storePath)
            guard layout.bootstrap.suite == .methods, keys.suite == .methods else {
                throw KeybayError(.protectionMismatch, "\(storePath) is protected by the platform root only: there is nothing to unlock").with(path: storePath)
            }
            let snapshot = try StoreSnapshot.authenticate(file: read.bytes, layout: layout, keys: keys, methods: [], domain: keyring.domain,
                                                          context: storePath)
            return Generation(snapshot: snapshot, identity: read.identity)
        }
        return (file, generation)
    }
}

/// The root of a held store, which the agent never reaches: it has the generation's keys, and a
/// record write keeps the sealed package as it is. `exists` is false, so a store that vanished is
/// `.storeNotFound`; everything else refuses.
private struct HeldRoot: RootProvider {
    let id: String
    let storePath: String
    var location: String { "(not reached by the keybay agent)" }
    var protection: String? { nil }
    var keepsFloor: Bool { false }

    private func refuse() -> KeybayError {
        KeybayError(.rootUnavailable, "the keybay agent holds the keys of \(storePath) and never reaches its root \(id)")
    }

    func exists() throws -> Bool { false }
    func create(options: [(String, String)]) throws -> [UInt8] { throw refuse() }
    func seal(_ plaintext: SecureBytes, aad: [UInt8], providerState: [UInt8]) throws -> [UInt8] { throw refuse() }
    func open(_ sealed: ArraySlice<UInt8>, aad: [UInt8], providerState: [UInt8]) throws -> (package: SecureBytes, floor: UInt64) { throw refuse() }
    func raiseFloor(to epoch: UInt64, providerState: [UInt8]) throws { throw refuse() }
    func reset() throws { throw refuse() }
}

extension StoreSettings {
    /// The settings of a held store at `location`: no root is selected, created or reached, no
    /// plugin is loaded, nothing is created.
    init(holding location: StoreLocation, stateHome: String, rootID: String) {
        self.init(location: location, stateHome: stateHome, rootPlugin: rootID, automaticRoots: [], requireRootPlugin: false, rootOptions: [],
                  pluginSearch: KeybayPluginSearch(directories: [], environmentPath: nil), sandboxRoot: "", excludeFromBackups: false)
    }
}
