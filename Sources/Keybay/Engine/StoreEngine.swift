// SPDX-License-Identifier: Apache-2.0
import CKeybayPlugin

/// One operation on one application's store and root, fail-closed: it never initialises over
/// existing state and never resets on an error; `reset` is explicit. It is made once per
/// operation from one read of the store file (`found`), which names the root; the directory is
/// reached only through `StoreFile`, the key packages only through `Keyring`. Each operation is
/// in a file of its own beside this one (open, create, commit and rotate, move root, reset,
/// inspect); they return internal values, which the API turns into public ones.
struct StoreEngine: Sendable {
    let settings: StoreSettings
    let keyring: Keyring
    /// Who the root may ask, and who is warned of what did not fail the operation.
    let interaction: any KeybayInteraction
    /// The store's directory as it was found (nil when there was none): reused, so an operation
    /// walks and checks the directories once.
    let existingFile: StoreFile?
    /// The live file as the engine read it when it was made (nil when there was none). An open
    /// runs its ceremony on these bytes; under the lock they are reused while the file keeps its
    /// identity.
    let found: StoreRead?
    /// Whether a live file that another process put in place is read and used (the session's
    /// contract: another writer's records are seen). The agent's engine refuses it instead
    /// (`.keyChanged`): it serves only the very file it was handed and the ones it wrote itself.
    let followsOtherWriters: Bool

    /// Reads the store file once and loads its root plugin (only that one: method plugins load on
    /// demand): the root the store's bootstrap names, or for a new store the configured one.
    /// `interaction` is who the root may ask (a locked keyring's unlock prompt). `forReset`: a
    /// store whose bootstrap cannot be read (damaged, or from a later version) is reset with the
    /// configured root, as before roots could be chosen; nothing is ever opened that way.
    init(_ settings: StoreSettings, interaction: any KeybayInteraction = NonInteractive(), forReset: Bool = false) throws {
        self.settings = settings
        self.interaction = interaction
        existingFile = try StoreFile.open(settings.location, create: false)
        var found: StoreRead?
        let stored: String?
        do {
            found = try existingFile?.read().map { StoreRead(bytes: $0.bytes, identity: $0.identity) }
            stored = try found.flatMap { try RootSelection.storeRoot(of: $0, settings) }
        } catch let e as KeybayError where forReset && (e.code == .malformed || e.code == .unsupported) {
            found = nil
            stored = nil
        }
        self.found = found
        followsOtherWriters = true
        keyring = try RootSelection.keyring(root: stored ?? RootSelection.resolve(settings.rootPlugin, settings), settings,
                                            interaction: interaction)
    }

    /// The same engine without its read: what a session keeps for its later operations, which
    /// read the file again when it changed.
    var withoutRead: StoreEngine { StoreEngine(self, found: nil) }

    private init(_ other: StoreEngine, found: StoreRead?) {
        settings = other.settings
        keyring = other.keyring
        interaction = other.interaction
        existingFile = other.existingFile
        followsOtherWriters = other.followsOtherWriters
        self.found = found
    }

    var root: any RootProvider { keyring.root }
    var storePath: String { settings.storePath }

    /// The store's directory: the one found when the engine was made, else opened now (and
    /// created when `create`); nil if it is missing.
    func storeFile(create: Bool) throws -> StoreFile? {
        if let existingFile { return existingFile }
        return try StoreFile.open(settings.location, create: create)
    }

    /// Why there is no store to open: a root without one is a state conflict (unless the caller
    /// named a method: then the store is simply not there).
    func missingStore(_ unlock: Unlock = .platform) throws -> KeybayError {
        if !unlock.needsExistingStore, try root.exists() {
            return KeybayError(.stateConflict, "state conflict: the platform root \(root.location) exists but there is no store at \(storePath) (interrupted initialisation or partial restore); run reset to start over")
                .with(path: storePath, pluginID: root.id)
        }
        return KeybayError(.storeNotFound, "no store at \(storePath)").with(path: storePath)
    }
}

/// The live file's bytes and the identity of the file they were read from.
struct StoreRead: Sendable {
    let bytes: [UInt8]
    let identity: FileIdentity
}
