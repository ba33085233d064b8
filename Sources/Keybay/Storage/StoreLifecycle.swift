import CKeybayPlugin

/// One application's store and root, and the fail-closed lifecycle over them: never initialise
/// over existing state, never reset on an error; `reset` is explicit. The directory is reached
/// only through `StoreFile`, the key packages only through `Keyring`.
struct StoreLifecycle: Sendable {
    let configuration: KeybayConfiguration
    let keyring: Keyring
    /// Who the root may ask, and who is warned of what did not fail the operation.
    let interaction: any KeybayInteraction
    /// The store's directory as it was found when the root was looked up (nil when there was
    /// none): reused, so an operation walks and checks the directories once.
    private let existingFile: StoreFile?

    /// Loads the store's root plugin (only that one: method plugins load on demand): the root
    /// the store on disk names, or for a new store the configured one. `interaction` is who the
    /// root may ask (a locked keyring's unlock prompt). `forReset`: a store whose bootstrap
    /// cannot be read (damaged, or from a later version) is reset with the configured root, as
    /// before roots could be chosen; nothing is ever opened that way.
    init(_ configuration: KeybayConfiguration, interaction: any KeybayInteraction = NonInteractive(), forReset: Bool = false) throws {
        self.configuration = configuration
        self.interaction = interaction
        existingFile = try StoreFile.open(configuration, create: false)
        let stored: String?
        do {
            stored = try existingFile.flatMap { try Self.storeRoot(of: $0, configuration) }
        } catch let e as KeybayError where forReset && (e.code == .malformed || e.code == .unsupported) {
            stored = nil
        }
        let id = try stored ?? Self.newStoreRoot(configuration)
        keyring = try Self.keyring(root: id, configuration, interaction: interaction)
    }

    /// The keyring of root `id` for this store: its plugin, and the storage domain, whose profile
    /// is the root id.
    static func keyring(root id: String, _ configuration: KeybayConfiguration, interaction: any KeybayInteraction) throws -> Keyring {
        let plugin = try PluginLoader.load(id: id, kind: KEYBAY_KIND_ROOT, search: configuration.pluginSearch)
        let domain = StorageDomain.derive(identity: configuration.applicationID, assurance: StorageDomain.assurance(forRoot: plugin.id),
                                          profile: plugin.id, location: "keybay/\(configuration.applicationID)/")
        var root = PluginRoot(plugin: plugin, applicationID: configuration.applicationID, stateHome: configuration.stateHome, domain: domain)
        root.interaction = interaction
        return Keyring(root: root, domain: domain, context: configuration.storePath)
    }

    /// The root the store in `file` was created with, as its bootstrap names it (`RootTag`); nil
    /// when there is no store. A configuration that insists on another root is refused.
    static func storeRoot(of file: StoreFile, _ configuration: KeybayConfiguration) throws -> String? {
        guard let id = try providerState(of: file, configuration) else { return nil }
        let root = try RootTag.root(of: id, context: configuration.storePath)
        let asked = configuration.rootPlugin
        if configuration.requireRootPlugin && asked != KeybayConfiguration.automaticRoot && asked != root {
            throw KeybayError(.invalidArgument, "the store at \(configuration.storePath) is on the root \(root), not \(asked): a store always opens with the root it was created with (root move \(asked) moves it)")
        }
        return root
    }

    /// The live file's provider state, read from its bootstrap alone; nil if there is no file.
    private static func providerState(of file: StoreFile, _ configuration: KeybayConfiguration) throws -> [UInt8]? {
        guard let header = try file.readPrefix(Bootstrap.maxBytes) else { return nil }
        var reader = ByteReader(header, context: configuration.storePath)
        return try Bootstrap.decode(&reader).providerState
    }

    /// The root for a new store: the configured plugin, or for `auto` secret-service when a
    /// Secret Service answers (its probe), else file-root.
    static func newStoreRoot(_ configuration: KeybayConfiguration) throws -> String {
        try resolve(configuration.rootPlugin, configuration)
    }

    /// `id`, or for `auto` the first of the configuration's `automaticRoots` that loads and
    /// whose probe says it is usable; `.rootUnavailable` when none is.
    static func resolve(_ id: String, _ configuration: KeybayConfiguration) throws -> String {
        guard id == KeybayConfiguration.automaticRoot else { return id }
        var reasons: [String] = []
        for candidate in configuration.automaticRoots {
            do {
                let plugin = try PluginLoader.load(id: candidate, kind: KEYBAY_KIND_ROOT, search: configuration.pluginSearch)
                guard let reason = plugin.probe() else { return candidate }
                reasons.append("\(candidate): \(reason)")
            } catch let e as KeybayError {
                reasons.append("\(candidate): \(e.message)")
            }
        }
        throw KeybayError(.rootUnavailable, "no root of auto (\(configuration.automaticRoots.joined(separator: ", "))) is usable here: \(reasons.joined(separator: "; "))")
    }

    /// The store's directory: the one found when this lifecycle began, else opened now (and
    /// created when `create`); nil if it is missing.
    private func storeFile(create: Bool) throws -> StoreFile? {
        if let existingFile { return existingFile }
        return try StoreFile.open(configuration, create: create)
    }

    /// The store file for a write that may create the store. Its directories and lock file are
    /// made only after `checkCreatable`: a root that does not take the options, or that answers
    /// `exists` with an error (no Secret Service), leaves nothing on disk. What only creating
    /// finds out (a refused option value, a TPM that `exists` does not reach) leaves the empty
    /// directory and lock file.
    private func storeFileCreating() throws -> StoreFile {
        if let file = try storeFile(create: false) { return file }
        try root.checkCreatable(options: configuration.rootOptions)
        return try storeFile(create: true)!
    }

    var root: any RootProvider { keyring.root }
    var storePath: String { configuration.storePath }

    // MARK: - Lifecycle

    /// Reads the bootstrap and, for a protected store, opens the package with the root to list
    /// its methods. Never calls a method plugin, never creates or repairs anything.
    func status() throws -> KeybayStatus {
        try inspect().status
    }

    /// `status()` with each enrolled method's one-line description from its plugin: this loads
    /// each method's plugin (no probe, no ceremony). A plugin that cannot be loaded or describe
    /// gives its error for that method alone.
    func describeMethods() throws -> (status: KeybayStatus, methods: [KeybayMethodDescription]) {
        let (status, envelopes) = try inspect()
        return (status, envelopes.map { envelope in
            do {
                let text = try PluginLoader.loadMethod(envelope.pluginId, for: configuration).describe(params: envelope.params)
                return KeybayMethodDescription(method: KeybayMethod(envelope), description: text, failure: nil)
            } catch {
                return KeybayMethodDescription(method: KeybayMethod(envelope), description: nil,
                                               failure: error as? KeybayError ?? KeybayError(.pluginFailed, "\(error)"))
            }
        })
    }

    /// The status and the enrolled methods as stored (their parameters included).
    private func inspect() throws -> (status: KeybayStatus, methods: [MethodEnvelope.Public]) {
        let rootExists = try root.exists()
        var state: KeybayStatus.State = rootExists ? .rootOnly : .absent
        var methods: [MethodEnvelope.Public] = []
        // Only the bootstrap and the sealed package are needed: read no more than they can take.
        if let file = try storeFile(create: false),
           let header = try file.readPrefix(Bootstrap.maxBytes + StoreSuite.methods.maxSealedPackageBytes) {
            var reader = ByteReader(header, context: storePath)
            let bootstrap = try Bootstrap.decode(&reader)
            let sealedPackage = try reader.take(bootstrap.sealedPackageLength, "sealed package")
            if !rootExists {
                state = .storeOnly
            } else if bootstrap.suite == .platform {
                state = .platformOnly
            } else {
                state = .protected
                methods = try keyring.methods(bootstrap, sealedPackage: sealedPackage)
            }
        }
        let leftovers = try leftoverRoots(storeFile(create: false)).map { KeybayStatus.LeftoverRoot(plugin: $0.id, location: $0.location) }
        return (KeybayStatus(state: state, storePath: storePath, rootPlugin: root.id, rootLocation: root.location,
                             methods: methods.map(KeybayMethod.init), rootProtection: protectionNote(methods: methods.count),
                             leftoverRoots: leftovers), methods)
    }

    /// The root's own note on what it protects against, and what the methods add.
    func protectionNote(methods: Int) -> String {
        let rootNote = root.protection ?? "platform root \(root.id) (it gives no note on what it protects against)"
        return methods == 0 ? rootNote + "; enroll an unlock method for more"
                            : rootNote + "; opening also needs one of the \(methods) enrolled method(s)"
    }

    /// Opens the existing store as `unlock` says, or creates one when there is nothing at all and
    /// `create` is set (never for a named method: that store must exist). A method's ceremony
    /// (a prompt, a touch) runs before the lock is taken, so it never blocks other writers; the
    /// locked re-read then reuses its keys. An open that may not create is a reader: it takes the
    /// shared lock (it works on a read-only file system) and leaves a leftover staging file to the
    /// next writer.
    func open(create: Bool, unlock: Unlock) throws -> (StoreFile, Generation) {
        let create = create && !unlock.needsExistingStore
        guard let file = try create ? storeFileCreating() : storeFile(create: false) else { throw try missingStore(unlock) }
        var unlocked: Generation?
        if unlock.mayRunCeremony, let read = try file.read() {
            do {
                unlocked = try authenticate(read, unlock: unlock)
            } catch let e as KeybayError where file.identity() != read.identity || e.code == .platformKeyInvalidated {
                // The file was replaced or removed while it was read (a racing write or reset),
                // or its root is gone (a racing reset removes the root first), so the failure
                // may be that change's, not the store's: decide under the lock, as an open
                // without a ceremony does (a protected store then asks to be opened again;
                // nothing at all is created when `create` allows it).
            }
        }
        let generation = try file.withLock(create ? .exclusive : .shared) { () throws -> Generation in
            // The generation the ceremony unlocked is taken as it is if the file did not change.
            let found: Generation?
            do {
                found = try unlocked.map({ try current(file, previous: $0) }) ?? load(file, reusing: nil)
            } catch let e as KeybayError where e.code == .authenticationRequired && unlock.mayRunCeremony {
                // The method's ceremony ran on a file that another process replaced meanwhile
                // (a root move, a change of methods): open it again, with the same method.
                throw KeybayError(.keyChanged, "another process changed \(storePath) while it was being unlocked (a new store key); open it again")
            }
            if let live = found {
                // A leftover staging file is only removed once the live file has authenticated.
                if create { try file.removeLeftoverStaging() }
                return live
            }
            guard create else { throw try missingStore(unlock) }
            return try createStore(in: file).confirmed()
        }
        return (file, generation)
    }

    /// `init`: creates a store only when there is nothing at all, platform-only or protected from
    /// its first write by `first` (whose ceremony the caller ran before anything was created).
    /// A store whose link happened but could not be confirmed durable comes back with why.
    func initialize(first: FirstMethod? = nil) throws -> (StoreFile, Landed) {
        let file = try storeFileCreating()
        let landed = try file.withLock(.exclusive) { () throws -> Landed in
            if try file.hasLiveFile() {
                throw KeybayError(.alreadyInitialized, "a store already exists at \(storePath); refusing to initialise over it").with(path: storePath)
            }
            return try createStore(in: file, first: first)
        }
        return (file, landed)
    }

    /// Removes the store, its staging file and the root; keeps the lock file. Idempotent, needs
    /// no credential. Both sides are checked before anything is removed (the data directory when
    /// it is opened, the root's location by asking whether the root exists), so a refusal on one
    /// side never leaves the other half-deleted.
    ///
    /// The root goes first: removing it is what may fail for reasons no check foresees (a
    /// locked keyring whose item cannot be deleted), and then nothing is removed; a failure
    /// after it leaves a store without its root, which `reset` clears when run again.
    ///
    /// Roots an interrupted `root move` left go too. The root is removed under the store's lock
    /// even when there is no store directory yet: a store being created meanwhile makes its root
    /// under that lock, and removing its half-made root from outside made the creation fail.
    func reset() throws {
        var file = try storeFile(create: false)
        let rootExists = try root.exists()
        if file == nil {
            guard rootExists else { return }
            file = try StoreFile.open(configuration, create: true)
        }
        guard let file else { return }
        try file.repairLockMode()
        try file.withLock(.exclusive) {
            try file.clearStagingDirectory()
            let leftovers = try leftoverRoots(file)
            try root.reset()
            for other in leftovers { try other.reset() }
            try file.removeStore()
            try file.removeMoveRecord()
        }
    }

    /// Why there is no store to open: a root without one is a state conflict (unless the caller
    /// named a method: then the store is simply not there).
    private func missingStore(_ unlock: Unlock = .platform) throws -> KeybayError {
        if !unlock.needsExistingStore, try root.exists() {
            return KeybayError(.stateConflict, "state conflict: the platform root \(root.location) exists but there is no store at \(storePath) (interrupted initialisation or partial restore); run reset to start over")
                .with(path: storePath, pluginID: root.id)
        }
        return KeybayError(.storeNotFound, "no store at \(storePath)").with(path: storePath)
    }

    /// Caller holds the exclusive lock and has seen no live file. A failure before the store's
    /// link leaves nothing (the root made here is removed again); from the link on, the store
    /// exists, and a failure is returned as unconfirmed.
    private func createStore(in file: StoreFile, first: FirstMethod? = nil) throws -> Landed {
        if try root.exists() { throw try missingStore() }
        let providerState: [UInt8]
        do {
            providerState = try root.create(options: configuration.rootOptions)
        } catch {
            // A root that failed halfway (its file linked, its directory's fsync failed) is
            // ours: there was none under the lock. Nothing refers to it.
            if (try? root.exists()) == true { try? root.reset() }
            throw error
        }
        let sealed: Keyring.Sealed, encoded: EncodedStore, afterLink: KeybayError?
        do {
            sealed = try keyring.first(providerState: providerState, first: first)
            encoded = try StoreEncoder.encodeStore(bootstrap: sealed.bootstrap, sealedPackage: sealed.package, frames: [],
                                                   keys: sealed.keys, domain: keyring.domain)
            afterLink = try file.create(with: encoded.file)
        } catch {
            // Undo only our own root, and only while no store refers to it.
            try? root.reset()
            throw error
        }
        return try land(encoded, in: file, afterRename: afterLink, what: "creating the store \(storePath)",
                        known: Keyring.Opened(keys: sealed.keys, methods: sealed.methods)) {
            try keyring.confirm(sealed, in: encoded.file, layout: $0)
        }
    }

    // MARK: - Generations

    /// Authenticates a file as read: its package opened as `unlock` says (or with the keys of
    /// `previous` when the package is the same), then its manifest.
    private func authenticate(_ read: (bytes: [UInt8], identity: FileIdentity), unlock: Unlock = .platform,
                              reusing previous: StoreSnapshot? = nil) throws -> Generation {
        do {
            let layout = try StoreLayout.decode(read.bytes, context: storePath)
            let opened: Keyring.Opened
            if let previous, previous.hasSamePackage(as: layout, in: read.bytes) {
                opened = Keyring.Opened(keys: previous.keys, methods: previous.methods)
            } else {
                opened = try keyring.open(layout, in: read.bytes, unlock: unlock)
            }
            let snapshot = try StoreSnapshot.authenticate(file: read.bytes, layout: layout, keys: opened.keys, methods: opened.methods,
                                                          domain: keyring.domain, context: storePath)
            return Generation(snapshot: snapshot, identity: read.identity)
        } catch let e as KeybayError where [.malformed, .integrity, .unsupported, .rolledBack].contains(e.code) {
            // The bytes of this file are what failed.
            throw e.with(path: storePath)
        }
    }

    /// Reads and authenticates the live file; nil if there is none. Only a platform-only store,
    /// or one whose package `previous` already unlocked, opens.
    private func load(_ file: StoreFile, reusing previous: StoreSnapshot?) throws -> Generation? {
        guard let read = try file.read() else { return nil }
        do {
            return try authenticate(read, reusing: previous)
        } catch let e as KeybayError where e.code == .authenticationRequired && previous != nil {
            throw KeybayError(.keyChanged, "another process changed the unlock methods of \(storePath) (a new store key); open it again")
        }
    }

    /// Re-reads the live file under a shared lock (another process replaced it).
    func reload(_ file: StoreFile, reusing previous: StoreSnapshot) throws -> Generation {
        try file.withLock(.shared) {
            guard let generation = try load(file, reusing: previous) else { throw try missingStore() }
            return generation
        }
    }

    /// Read-modify-write under the exclusive lock: re-read the live file, let `change` produce
    /// the new frames, write staging, fsync, rename, fsync the directory, verify.
    func commit(_ file: StoreFile, previous: Generation, change: (StoreSnapshot) throws -> [PendingFrame]?) throws -> Landed {
        try file.withLock(.exclusive) {
            guard let current = try current(file, previous: previous) else { throw try missingStore() }
            guard let frames = try change(current.snapshot) else { return Landed(generation: current, unconfirmed: nil) }
            let snapshot = current.snapshot
            let encoded = try StoreEncoder.encodeStore(bootstrap: snapshot.layout.bootstrap, sealedPackage: snapshot.sealedPackage,
                                                       frames: frames, keys: snapshot.keys, domain: keyring.domain)
            let afterRename = try file.replace(with: encoded.file)
            let keys = Keyring.Opened(keys: snapshot.keys, methods: snapshot.methods)
            return try land(encoded, in: file, afterRename: afterRename, what: "the write to \(storePath)", known: keys) { _ in keys }
        }
    }

    /// Under the lock: the live generation. If the file is still the one `previous` came from
    /// (same inode, size and times: every write renames a new file in), it is reused as it is;
    /// otherwise the file is read and authenticated again.
    private func current(_ file: StoreFile, previous: Generation) throws -> Generation? {
        if let identity = file.identity(), identity == previous.identity { return previous }
        return try load(file, reusing: previous.snapshot)
    }

    /// Adding, replacing or removing methods: the keyring's next generation (a fresh Kstore, the
    /// next epoch, every surviving method re-sealed from its public key alone), every record
    /// re-encrypted, all in one atomic replace. The new list is made under the lock from the live
    /// methods, and only while they are still those of `expected` (what the caller decided on,
    /// possibly before a long ceremony): a list computed earlier could bring back a method
    /// another process removed meanwhile.
    func rotate(_ file: StoreFile, previous: Generation, expecting expected: StoreSnapshot,
                change: ([MethodEnvelope.Public]) -> [MethodEnvelope.Public]) throws -> Landed {
        try file.withLock(.exclusive) {
            guard let current = try current(file, previous: previous)?.snapshot else { throw try missingStore() }
            guard current.sealedPackage.elementsEqual(expected.sealedPackage) else {
                throw KeybayError(.stateConflict, "the unlock methods of \(storePath) changed meanwhile (another session or process); try again")
            }
            let sealed = try keyring.next(after: current.keys, providerState: current.layout.bootstrap.providerState,
                                          methods: change(current.methods))
            return try writeRotation(sealed, try keyring.reencrypt(current, into: sealed), in: file)
        }
    }

    /// Every rotation (a new key package: methods added, replaced or removed, another root) ends
    /// here, under the exclusive lock: the store is made durable and verified first, then the
    /// root's rollback floor rises to the new epoch. A crash between the two leaves a store newer
    /// than the floor, which opens; the floor never gets ahead of the store on disk.
    /// `keyring` is the store's own, or for a move the new root's. A rotation that took effect
    /// but could not be confirmed durable leaves the floor where it is: the old generation may
    /// still come back after a crash, and must then open.
    func writeRotation(_ sealed: Keyring.Sealed, _ encoded: EncodedStore, in file: StoreFile, keyring: Keyring? = nil,
                       what: String? = nil) throws -> Landed {
        let keyring = keyring ?? self.keyring
        let afterRename = try file.replace(with: encoded.file)
        let landed = try land(encoded, in: file, afterRename: afterRename, what: what ?? "the change of the unlock methods of \(storePath)",
                              domain: keyring.domain, known: Keyring.Opened(keys: sealed.keys, methods: sealed.methods)) {
            try keyring.confirm(sealed, in: encoded.file, layout: $0)
        }
        guard landed.unconfirmed == nil else { return landed }
        do {
            try keyring.raiseFloor(to: sealed)
        } catch let e as KeybayError {
            // The new generation is durable and verified: the change happened. Failing now would
            // report it as not done (and lose a secret shown once, or skip removing a moved
            // store's old root). The floor lags until the next rotation raises it past this epoch.
            interaction.message("warning: " + e.message, level: .warning)
        }
        return landed
    }

    /// Moves the store to root `target` (`auto` allowed): the keyring's next generation sealed
    /// by the new root (a fresh Kstore, the next epoch, every method re-sealed from its public
    /// key, every record re-encrypted) in one atomic replace; the old root is removed only once
    /// the new store is durable and has read back and authenticated (and the new root's rollback
    /// floor has risen to the new epoch, as for any rotation). A kill at any moment leaves
    /// a store that opens with the old root or the new one. Before anything is made, the move is
    /// recorded beside the store (`StoreFile.recordMove`): a move cut short anywhere leaves a
    /// root the store does not use, which `status` then shows and `reset` removes with the store.
    /// Roots such a record names, and a root of the target kind the store does not refer to, are
    /// removed before the new one is made. Returns the old root's location when it could not be
    /// removed (the store has moved), with the new root. A move that took effect but could not be confirmed durable
    /// keeps the old root (a crash may still bring back the store it opens) and says so.
    func moveRoot(_ file: StoreFile, previous: Generation, to target: String, options: [(String, String)] = [],
                  interaction: any KeybayInteraction) throws -> KeybayRootMove {
        try refuseRepeatedOptionNames(options) // before anything is made or recorded
        let targetID = try Self.resolve(target, configuration)
        guard targetID != root.id else {
            throw KeybayError(.invalidArgument, "the store at \(storePath) is already on the root \(root.id)")
        }
        let destination = try Self.keyring(root: targetID, configuration, interaction: interaction)
        let newRoot = destination.root
        return try file.withLock(.exclusive) { () throws -> KeybayRootMove in
            guard let current = try current(file, previous: previous)?.snapshot else { throw try missingStore() }
            try removeLeftoverRoots(file)
            if try newRoot.exists() { try newRoot.reset() }
            try file.recordMove(from: root.id, to: targetID)
            let state = try newRoot.create(options: options)
            let landed: Landed
            do {
                let sealed = try destination.next(after: current.keys, providerState: state, methods: current.methods)
                landed = try writeRotation(sealed, try destination.reencrypt(current, into: sealed), in: file, keyring: destination,
                                           what: "moving \(storePath) to the root \(targetID)")
            } catch {
                // Undo only the new root, and only while the live file does not refer to it.
                if let live = try? Self.providerState(of: file, configuration), live != state {
                    try? newRoot.reset()
                    try? file.removeMoveRecord()
                }
                throw error
            }
            if let unconfirmed = landed.unconfirmed {
                throw KeybayError(.io, unconfirmed.message + "; the old root \(root.id) at \(root.location) is kept until then (reset, or the next root move, removes it)",
                                  tookEffect: true).with(path: unconfirmed.path, pluginID: root.id, underlying: unconfirmed.underlying)
            }
            do {
                try root.reset()
            } catch {
                return KeybayRootMove(rootPlugin: newRoot.id, rootLocation: newRoot.location, oldRootLeftAt: root.location)
            }
            // With both roots settled, a record that stays names no root that exists.
            try? file.removeMoveRecord()
            return KeybayRootMove(rootPlugin: newRoot.id, rootLocation: newRoot.location, oldRootLeftAt: nil)
        }
    }

    /// The roots other than the store's own that an interrupted `root move` left (its record
    /// names them) and that exist.
    func leftoverRoots(_ file: StoreFile?) throws -> [any RootProvider] {
        guard let file, let move = try file.readMoveRecord() else { return [] }
        return try [move.from, move.to].filter { $0 != root.id }.compactMap { id in
            let other = try Self.keyring(root: id, configuration, interaction: interaction).root
            return try other.exists() ? other : nil
        }
    }

    /// Removes what `leftoverRoots` finds, then the record. Caller holds the exclusive lock.
    private func removeLeftoverRoots(_ file: StoreFile) throws {
        for other in try leftoverRoots(file) { try other.reset() }
        try file.removeMoveRecord()
    }

    /// After the rename (or link) put `encoded` in place: it is the store now, whatever fails
    /// from here. `afterRename` is why the directory's fsync failed, if it did; otherwise the file
    /// is read back and verified (`confirm` opens a new package with the root). A failure is
    /// returned, never thrown: the generation as encoded (`known`: its keys, from memory), with an
    /// identity no file has, so the next operation reads the store again.
    private func land(_ encoded: EncodedStore, in file: StoreFile, afterRename: KeybayError?, what: String, domain: [UInt8]? = nil,
                      known: Keyring.Opened, confirm: (StoreLayout) throws -> Keyring.Opened) throws -> Landed {
        var failure = afterRename
        if failure == nil {
            do {
                return Landed(generation: try verifyWritten(encoded, in: file, domain: domain, keys: confirm), unconfirmed: nil)
            } catch let e as KeybayError {
                failure = e
            }
        }
        let layout = try StoreLayout.decode(encoded.file, context: storePath)
        let snapshot = try StoreSnapshot.authenticateWritten(encoded, layout: layout, keys: known.keys, methods: known.methods,
                                                             domain: domain ?? keyring.domain, context: storePath)
        return Landed(generation: Generation(snapshot: snapshot, identity: .unknown), unconfirmed: .unconfirmed(what, cause: failure!))
    }

    /// Reads back what was just made durable: it must equal, byte for byte, what was encoded
    /// (from authenticated parts, with every digest computed or copied), a new package must open
    /// with the root to the generation it was sealed from, and the manifest must decrypt to
    /// exactly the plaintext encoded. Frame digests are not hashed a second time.
    private func verifyWritten(_ encoded: EncodedStore, in file: StoreFile, domain: [UInt8]? = nil,
                               keys: (StoreLayout) throws -> Keyring.Opened) throws -> Generation {
        guard let identity = try file.readBack(equals: encoded.file) else {
            throw KeybayError(.io, "\(storePath) does not read back as written")
        }
        // The encoded bytes are now known to be what the disk holds.
        let layout = try StoreLayout.decode(encoded.file, context: storePath)
        let opened = try keys(layout)
        let snapshot = try StoreSnapshot.authenticateWritten(encoded, layout: layout, keys: opened.keys, methods: opened.methods,
                                                             domain: domain ?? keyring.domain, context: storePath)
        return Generation(snapshot: snapshot, identity: identity)
    }
}

/// A snapshot and the identity of the file it came from.
struct Generation: Sendable {
    let snapshot: StoreSnapshot
    let identity: FileIdentity
}

/// What a write that put a new store file in place left: the generation it holds and, when
/// the write took effect but could not be confirmed durable, why (`KeybayError.tookEffect`).
struct Landed: Sendable {
    let generation: Generation
    let unconfirmed: KeybayError?

    /// The generation, or the failure to confirm it, thrown.
    func confirmed() throws -> Generation {
        if let unconfirmed { throw unconfirmed }
        return generation
    }
}
