import CKeybayPlugin
import Synchronization

/// An open store. Record operations are synchronous and never prompt or call a method plugin;
/// each sees one whole generation of the file, and notices (with one stat) when another
/// process has replaced it. Writes are read-modify-write under the interprocess lock and are
/// durable when they return.
public final class KeybaySession: Sendable {
    private let lifecycle: StoreLifecycle
    private let file: StoreFile
    private let current: Mutex<Generation?>
    /// Who plugins may ask (method ceremonies run only in `open` and `auth`).
    let interaction: any KeybayInteraction

    init(lifecycle: StoreLifecycle, file: StoreFile, generation: Generation, interaction: any KeybayInteraction) {
        self.lifecycle = lifecycle
        self.file = file
        self.current = Mutex(generation)
        self.interaction = interaction
    }

    public var configuration: KeybayConfiguration { lifecycle.configuration }
    public var storePath: String { lifecycle.storePath }
    /// The unlock methods: list, add, remove, verify.
    public var auth: KeybayAuth { KeybayAuth(session: self) }
    /// Whether the open generation is protected by methods (false, too, when the session is
    /// closed or the store can no longer be read: the next operation reports why).
    public var isProtected: Bool { (try? freshSnapshot().suite == .methods) ?? false }

    // MARK: Reading

    /// The value of `key`, or nil if there is no such record.
    public func get(_ key: String) throws -> [UInt8]? {
        let keyBytes = try RecordKey.validated(key)
        let snapshot = try freshSnapshot()
        guard let i = snapshot.index(of: keyBytes) else { return nil }
        return try snapshot.value(at: i, context: storePath)
    }

    /// The value of `key` as UTF-8 text, or nil if there is no such record.
    public func getString(_ key: String) throws -> String? {
        guard let bytes = try get(key) else { return nil }
        guard let text = String(validating: bytes, as: UTF8.self) else {
            throw KeybayError(.invalidArgument, "the value of '\(key)' is not UTF-8 text; read it as bytes")
        }
        return text
    }

    public func contains(_ key: String) throws -> Bool {
        let keyBytes = try RecordKey.validated(key)
        return try freshSnapshot().index(of: keyBytes) != nil
    }

    /// All keys in ascending byte order.
    public func keys() throws -> [String] {
        try freshSnapshot().keyNames
    }

    /// The values of those `keys` that exist, all from one generation of the store.
    public func getMany(_ keys: [String]) throws -> [String: [UInt8]] {
        let keyBytes = try keys.map(RecordKey.validated)
        let snapshot = try freshSnapshot()
        let found = zip(keys, keyBytes).compactMap { key, bytes in snapshot.index(of: bytes).map { (key, $0) } }
        let values = try snapshot.values(at: found.map(\.1), context: storePath)
        return Dictionary(zip(found.map(\.0), values), uniquingKeysWith: { first, _ in first })
    }

    // MARK: Writing

    public func set(_ key: String, bytes value: [UInt8]) throws {
        let keyBytes = try RecordKey.validated(key)
        guard value.count <= Suite1.maxValueBytes else {
            throw KeybayError(.valueTooLarge, "the value for '\(key)' is \(value.count) bytes, limit \(Suite1.maxValueBytes)")
        }
        try write { snapshot in
            let frame = value.withUnsafeBytes { StoreEncoder.sealFrame(key: keyBytes, value: $0, keys: snapshot.keys) }
            var frames = Self.frames(of: snapshot, excluding: keyBytes)
            let at = frames.firstIndex { !$0.key.lexicographicallyPrecedes(keyBytes) } ?? frames.endIndex
            frames.insert(frame, at: at)
            return frames
        }
    }

    public func set(_ key: String, string value: String) throws {
        try set(key, bytes: Array(value.utf8))
    }

    /// Removes `key`; returns false (and writes nothing) if there was no such record.
    @discardableResult
    public func delete(_ key: String) throws -> Bool {
        let keyBytes = try RecordKey.validated(key)
        var found = false
        try write { snapshot in
            guard snapshot.index(of: keyBytes) != nil else { return nil }
            found = true
            return Self.frames(of: snapshot, excluding: keyBytes)
        }
        return found
    }

    /// Removes every record; the store, its root and its methods stay.
    public func clearAll() throws {
        try write { snapshot in snapshot.entries.isEmpty ? nil : [] }
    }

    /// Moves the store to the root `rootPlugin` (a plugin id, or `auto`): one atomic re-seal
    /// under the new root (methods and records kept; a fresh store key and the next epoch, as
    /// for any change of methods), then the old root is removed, only once the new store is
    /// durable and has read back and authenticated. A kill at any moment leaves a store that
    /// opens with the old root or the new one. `options` go to the new root as it is created, in
    /// the order given (`tpm2`: `pcrs`); a name given twice is `.invalidArgument`. The session is closed afterwards (its keys are
    /// the old generation's): open the store again. Returns the new root, and the old root's
    /// location when it could not be removed (the store has moved all the same). A move that took
    /// effect but could not be confirmed durable throws `.io` with `tookEffect` (the old root is
    /// kept then; `status` lists it under `leftoverRoots`).
    @discardableResult
    public func moveRoot(to rootPlugin: String, options: [(String, String)] = []) throws -> KeybayRootMove {
        defer { close() }
        let generation = try current.withLock { try open($0) }
        return try lifecycle.moveRoot(file, previous: generation, to: rootPlugin, options: options, interaction: interaction)
    }

    /// Ends the session; later calls throw `.closed`. Keys held in guarded memory are freed.
    public func close() {
        current.withLock { $0 = nil }
    }

    // MARK: -

    private static func frames(of snapshot: StoreSnapshot, excluding key: [UInt8]) -> [PendingFrame] {
        var frames: [PendingFrame] = []
        frames.reserveCapacity(snapshot.entries.count + 1)
        for (i, e) in snapshot.entries.enumerated() where e.key != key {
            frames.append(PendingFrame(key: e.key, bytes: snapshot.frame(at: i), digest: e.digest))
        }
        return frames
    }

    /// The live generation (re-read if another process replaced the file).
    func freshSnapshot() throws -> StoreSnapshot {
        try current.withLock { generation in
            let g = try open(generation)
            if file.identity() != g.identity {
                generation = try lifecycle.reload(file, reusing: g.snapshot)
            }
            return generation!.snapshot
        }
    }

    func loadMethodPlugin(_ id: String) throws -> LoadedPlugin {
        try PluginLoader.loadMethod(id, for: lifecycle.configuration)
    }

    /// Replaces the method list (see StoreLifecycle.rotate); fails if the methods on disk are no
    /// longer those of `expected` (another session or process changed them meanwhile). Returns
    /// why a rotation that took effect could not be confirmed durable, for the caller to throw
    /// once it has handed over what the new method shows.
    func rotate(expecting expected: StoreSnapshot, _ change: ([MethodEnvelope.Public]) -> [MethodEnvelope.Public]) throws -> KeybayError? {
        try replaceGeneration { try lifecycle.rotate(file, previous: $0, expecting: expected, change: change) }
    }

    private func write(_ change: (StoreSnapshot) throws -> [PendingFrame]?) throws {
        if let unconfirmed = try replaceGeneration({ try lifecycle.commit(file, previous: $0, change: change) }) { throw unconfirmed }
    }

    /// The session's generation, unless the session is closed.
    private func open(_ generation: Generation?) throws -> Generation {
        guard let generation else { throw KeybayError(.closed, "the session for \(lifecycle.storePath) is closed") }
        return generation
    }

    /// Runs a write on the open generation and keeps the one it produces, also when it could
    /// not be confirmed durable (it is the store all the same); returns why not.
    private func replaceGeneration(_ body: (Generation) throws -> Landed) throws -> KeybayError? {
        try current.withLock { generation in
            let landed = try body(try open(generation))
            generation = landed.generation
            return landed.unconfirmed
        }
    }
}
