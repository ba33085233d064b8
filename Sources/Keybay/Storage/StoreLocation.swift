import Glibc
import CKeybayPlugin

/// One application's store and root on disk, and the fail-closed lifecycle over them (BRIEF §5):
/// never initialise over existing state, never reset on an error, `reset` is explicit.
struct StoreLocation: Sendable {
    static let liveName = "keybay.v2.store"
    static let stagingName = "keybay.v2.stage"
    static let lockName = "keybay.v2.lock"

    let configuration: KeybayConfiguration
    let root: any RootProvider
    let domain: [UInt8]

    /// Loads the configuration's root plugin (only that one: method plugins load on demand).
    init(_ configuration: KeybayConfiguration) throws {
        self.configuration = configuration
        let plugin = try PluginLoader.load(id: configuration.rootPlugin, kind: KEYBAY_KIND_ROOT, search: configuration.pluginSearch)
        let domain = StorageDomain.derive(identity: configuration.applicationID, profile: plugin.id,
                                          location: "keybay/\(configuration.applicationID)/")
        self.domain = domain
        self.root = PluginRoot(plugin: plugin, applicationID: configuration.applicationID,
                               stateHome: configuration.stateHome, domain: domain)
    }

    var storePath: String { configuration.storePath }

    func directory(create: Bool) throws -> PrivateDirectory? {
        try PrivateDirectory.open(base: configuration.dataHome, components: ["keybay", configuration.applicationID], create: create)
    }

    // MARK: - Lifecycle

    /// Reads the bootstrap and, for a protected store, opens the package with the root to list
    /// its methods. Never calls a method plugin, never creates or repairs anything.
    func status() throws -> KeybayStatus {
        let rootExists = try root.exists()
        var state: KeybayStatus.State = rootExists ? .rootOnly : .absent
        var methods: [KeybayMethod] = []
        // Only the bootstrap and the sealed package are needed: read no more than they can take.
        let headerBytes = Bootstrap.maxBytes + StoreSuite.methods.maxSealedPackageBytes
        if let dir = try directory(create: false),
           let live = try dir.read(Self.liveName, maxBytes: StoreLayout.maxTotalBytes, prefix: headerBytes) {
            var reader = ByteReader(live.bytes, context: storePath)
            let bootstrap = try Bootstrap.decode(&reader)
            let sealedPackage = try reader.take(bootstrap.sealedPackageLength, "sealed package")
            if !rootExists {
                state = .storeOnly
            } else if bootstrap.suite == .platform {
                state = .platformOnly
            } else {
                state = .protected
                let aad = bootstrap.suite.packageAAD(domain: domain, bootstrapCore: bootstrap.core)
                let plaintext = try root.open(sealedPackage, aad: aad, providerState: bootstrap.providerState, domain: domain)
                methods = try MethodsPackage.decode(plaintext, context: storePath).envelopes.map { KeybayMethod($0.method) }
            }
        }
        return KeybayStatus(state: state, storePath: storePath, rootPlugin: root.id, rootLocation: root.location, methods: methods,
                            rootProtection: Self.protectionNote(root: root.id, methods: methods.count))
    }

    static func protectionNote(root: String, methods: Int) -> String {
        let rootNote = root == "file-root"
            ? "file-root keeps the platform key in a private file: it protects against copied files, backups and other users, not against other programs running as this user"
            : "platform root: \(root)"
        return methods == 0 ? rootNote + "; enroll an unlock method for more"
                            : rootNote + "; opening also needs one of the \(methods) enrolled method(s)"
    }

    /// Opens the existing store, or creates one when there is nothing at all and `create` is set
    /// (never with a `.method` key: that store must exist). With a key that may run a method,
    /// the ceremony (a prompt, a touch) runs before the lock is taken, so it never blocks other
    /// writers; the locked re-read then reuses its keys.
    func open(create: Bool, key: PackageKey = .platform) throws -> (PrivateDirectory, Generation) {
        var mayRunMethod = false, needsMethod = false
        switch key {
        case .method: (mayRunMethod, needsMethod) = (true, true)
        case .platformOrMethod: mayRunMethod = true
        case .platform, .known: break
        }
        guard let dir = try directory(create: create && !needsMethod) else {
            throw needsMethod ? KeybayError(.storeNotFound, "no store at \(storePath)") : try missingStoreError()
        }
        var unlocked: Generation?
        if mayRunMethod {
            if let read = try dir.read(Self.liveName, maxBytes: StoreLayout.maxTotalBytes) {
                unlocked = Generation(snapshot: try StoreSnapshot.authenticate(file: read.bytes, context: storePath, domain: domain,
                                                                               root: root, key: key),
                                      identity: read.identity)
            } else if needsMethod {
                throw KeybayError(.storeNotFound, "no store at \(storePath)")
            }
        }
        let generation = try FileLock.withLock(in: dir, name: Self.lockName, mode: .exclusive) { () throws -> Generation in
            // The generation the ceremony unlocked is taken as it is if the file did not change.
            let live = try unlocked.map { try current(dir, previous: $0) } ?? load(dir, reusing: nil)
            if let generation = live {
                // A leftover staging file is only removed once the live file has authenticated.
                if try dir.contains(Self.stagingName) {
                    try dir.removeIfPresent(Self.stagingName)
                    try dir.sync()
                }
                return generation
            }
            guard create, !needsMethod else { throw needsMethod ? KeybayError(.storeNotFound, "no store at \(storePath)") : try missingStoreError() }
            return try createStore(in: dir)
        }
        return (dir, generation)
    }

    /// `init`: creates a store only when there is nothing at all.
    func initialize() throws -> (PrivateDirectory, Generation) {
        let dir = try directory(create: true)!
        let generation = try FileLock.withLock(in: dir, name: Self.lockName, mode: .exclusive) { () throws -> Generation in
            if try dir.contains(Self.liveName) {
                throw KeybayError(.alreadyInitialized, "a store already exists at \(storePath); refusing to initialise over it")
            }
            return try createStore(in: dir)
        }
        return (dir, generation)
    }

    /// Removes the store, its staging file and the root; keeps the lock file. Idempotent, needs no credential.
    func reset() throws {
        if let dir = try directory(create: false) {
            try FileLock.withLock(in: dir, name: Self.lockName, mode: .exclusive) {
                try dir.removeIfPresent(Self.liveName)
                try dir.removeIfPresent(Self.stagingName)
                try dir.sync()
                try root.reset()
            }
        } else {
            try root.reset()
        }
    }

    private func missingStoreError() throws -> KeybayError {
        if try root.exists() {
            return KeybayError(.stateConflict, "state conflict: the platform root \(root.location) exists but there is no store at \(storePath) (interrupted initialisation or partial restore); run reset to start over")
        }
        return KeybayError(.storeNotFound, "no store at \(storePath)")
    }

    /// Caller holds the exclusive lock and has seen no live file.
    private func createStore(in dir: PrivateDirectory) throws -> Generation {
        if try root.exists() { throw try missingStoreError() }
        let providerState = try root.create(domain: domain)
        var storeLinked = false
        do {
            let package = PlatformPackage(storeId: Sodium.randomBytes(Suite1.storeIdBytes), epoch: 1,
                                          storeKey: SecureBytes(randomCount: Suite1.storeKeyBytes))
            let bootstrap = Bootstrap(suite: .platform, providerState: providerState,
                                      sealedPackageLength: PlatformPackage.plaintextBytes + XChaCha20Poly1305.overhead)
            let sealed = try root.seal(package.encode(), aad: StoreSuite.platform.packageAAD(domain: domain, bootstrapCore: bootstrap.core),
                                       providerState: providerState, domain: domain)
            guard sealed.count == bootstrap.sealedPackageLength else {
                throw KeybayError(.pluginFailed, "\(root.id) sealed a \(PlatformPackage.plaintextBytes)-byte package into \(sealed.count) bytes")
            }
            let encoded = try StoreEncoder.encodeStore(bootstrap: bootstrap, sealedPackage: sealed, frames: [],
                                                       keys: StoreKeys(package: package), domain: domain)
            try dir.createExclusive(Self.liveName, stagingName: Self.stagingName, with: encoded.file)
            storeLinked = true
            return try verifyWritten(encoded, in: dir, key: .known(package.storeKey))
        } catch {
            // Undo only our own root, and only while no store refers to it.
            if !storeLinked { try? root.reset() }
            throw error
        }
    }

    // MARK: - Generations

    /// Reads and authenticates the live file; nil if there is none. Without a `key` only a
    /// platform-only store, or one whose package `previous` already unlocked, opens.
    func load(_ dir: PrivateDirectory, key: PackageKey = .platform, reusing previous: StoreSnapshot?) throws -> Generation? {
        guard let read = try dir.read(Self.liveName, maxBytes: StoreLayout.maxTotalBytes) else { return nil }
        do {
            let snapshot = try StoreSnapshot.authenticate(file: read.bytes, context: storePath, domain: domain,
                                                          root: root, key: key, reusing: previous)
            return Generation(snapshot: snapshot, identity: read.identity)
        } catch let e as KeybayError where e.code == .authenticationRequired && previous != nil {
            throw KeybayError(.keyChanged, "another process changed the unlock methods of \(storePath) (a new store key); open it again")
        }
    }

    /// Re-reads the live file under a shared lock (another process replaced it).
    func reload(_ dir: PrivateDirectory, reusing previous: StoreSnapshot) throws -> Generation {
        try FileLock.withLock(in: dir, name: Self.lockName, mode: .shared) {
            guard let generation = try load(dir, reusing: previous) else { throw try missingStoreError() }
            return generation
        }
    }

    /// Read-modify-write under the exclusive lock: re-read the live file, let `change` produce
    /// the new frames, write staging, fsync, rename, fsync the directory, verify.
    func commit(_ dir: PrivateDirectory, previous: Generation,
                change: (StoreSnapshot) throws -> [PendingFrame]?) throws -> Generation {
        try FileLock.withLock(in: dir, name: Self.lockName, mode: .exclusive) {
            guard let current = try current(dir, previous: previous) else { throw try missingStoreError() }
            guard let frames = try change(current.snapshot) else { return current }
            let encoded = try StoreEncoder.encodeStore(bootstrap: current.snapshot.layout.bootstrap,
                                                       sealedPackage: current.snapshot.sealedPackage,
                                                       frames: frames, keys: current.snapshot.keys, domain: domain)
            try dir.replace(Self.liveName, stagingName: Self.stagingName, with: encoded.file)
            return try verifyWritten(encoded, in: dir, key: .platform, reusing: current.snapshot)
        }
    }

    /// Under the lock: the live generation. If the file is still the one `previous` came from
    /// (same inode, size and times: every write renames a new file in), it is reused as it is;
    /// otherwise the file is read and authenticated again.
    private func current(_ dir: PrivateDirectory, previous: Generation) throws -> Generation? {
        if let identity = dir.identity(of: Self.liveName), identity == previous.identity { return previous }
        return try load(dir, reusing: previous.snapshot)
    }

    /// Adding or removing a method: a fresh Kstore and the next epoch, every surviving method
    /// re-sealed from its public key alone, every record re-encrypted, all in one atomic replace.
    /// With no methods left the store returns to the platform-only suite. The new list is made
    /// under the lock from the live methods, and only while they are still those of `expected`
    /// (what the caller decided on, possibly before a long ceremony): a list computed earlier
    /// could bring back a method another process removed meanwhile.
    func rotate(_ dir: PrivateDirectory, previous: Generation, expecting expected: StoreSnapshot,
                change: ([MethodEnvelope.Public]) -> [MethodEnvelope.Public]) throws -> Generation {
        try FileLock.withLock(in: dir, name: Self.lockName, mode: .exclusive) {
            guard let current = try current(dir, previous: previous)?.snapshot else { throw try missingStoreError() }
            guard current.sealedPackage.elementsEqual(expected.sealedPackage) else {
                throw KeybayError(.stateConflict, "the unlock methods of \(storePath) changed meanwhile (another session or process); try again")
            }
            let methods = change(current.methods)
            precondition(methods.count <= MethodsPackage.maxMethods)
            guard current.keys.epoch < Suite1.maxEpoch else {
                throw KeybayError(.storeFull, "\(storePath) has reached the last epoch; reset it to continue")
            }
            let storeId = current.keys.storeId
            let epoch = current.keys.epoch + 1
            let storeKey = SecureBytes(randomCount: Suite1.storeKeyBytes)
            let suite: StoreSuite = methods.isEmpty ? .platform : .methods
            let plaintext = try suite == .platform
                ? PlatformPackage(storeId: storeId, epoch: epoch, storeKey: storeKey).encode()
                : MethodsPackage(storeId: storeId, epoch: epoch, envelopes: methods.map {
                    try MethodEnvelope.seal(storeKey: storeKey, to: $0, storeId: storeId, epoch: epoch)
                }).encode()
            let providerState = current.layout.bootstrap.providerState
            let bootstrap = Bootstrap(suite: suite, providerState: providerState,
                                      sealedPackageLength: plaintext.count + XChaCha20Poly1305.overhead)
            let sealed = try root.seal(plaintext, aad: suite.packageAAD(domain: domain, bootstrapCore: bootstrap.core),
                                       providerState: providerState, domain: domain)
            guard sealed.count == bootstrap.sealedPackageLength else {
                throw KeybayError(.pluginFailed, "\(root.id) sealed a \(plaintext.count)-byte package into \(sealed.count) bytes")
            }
            let keys = StoreKeys(suite: suite, storeId: storeId, epoch: epoch, storeKey: storeKey)
            var frames: [PendingFrame] = []
            frames.reserveCapacity(current.entries.count)
            for i in current.entries.indices {
                var value = try current.value(at: i, context: storePath)
                defer { Sodium.wipe(&value) }
                frames.append(value.withUnsafeBytes { StoreEncoder.sealFrame(key: current.entries[i].key, value: $0, keys: keys) })
            }
            let encoded = try StoreEncoder.encodeStore(bootstrap: bootstrap, sealedPackage: sealed, frames: frames, keys: keys, domain: domain)
            try dir.replace(Self.liveName, stagingName: Self.stagingName, with: encoded.file)
            return try verifyWritten(encoded, in: dir, key: .known(storeKey))
        }
    }

    /// Reads back what was just made durable: it must equal, byte for byte, what was encoded
    /// (from authenticated parts, with every digest computed or copied), and its package and
    /// manifest must authenticate, the manifest to exactly the plaintext encoded. Frame digests
    /// are not hashed a second time.
    private func verifyWritten(_ encoded: EncodedStore, in dir: PrivateDirectory, key: PackageKey,
                               reusing previous: StoreSnapshot? = nil) throws -> Generation {
        guard let identity = try dir.readBack(Self.liveName, equals: encoded.file) else {
            throw KeybayError(.io, "\(storePath) does not read back as written")
        }
        // The encoded bytes are now known to be what the disk holds.
        let snapshot = try StoreSnapshot.authenticate(file: encoded.file, context: storePath, domain: domain,
                                                      root: root, key: key, reusing: previous, written: encoded)
        return Generation(snapshot: snapshot, identity: identity)
    }
}

/// A snapshot and the identity of the file it came from.
struct Generation: Sendable {
    let snapshot: StoreSnapshot
    let identity: FileIdentity
}
