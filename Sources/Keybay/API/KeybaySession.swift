// SPDX-License-Identifier: Apache-2.0
import CKeybayPlugin
import Synchronization

/// An open store. Record operations are synchronous and never prompt or call a method plugin;
/// each sees one whole generation of the file, and notices (with one stat) when another
/// process has replaced it. Writes are read-modify-write under the interprocess lock and are
/// durable when they return.
///
/// Get one from `KeybayStore.open` (or `KeybayStore.initialize`), see ``KeybayStore``. Every failure is a ``KeybayError``; the reads and writes below may also throw
/// the failures of reading the store file again when another process replaced it
/// (`.integrity`, `.malformed`, `.io`, `.keyChanged` when that process changed the methods, and
/// with it the store key: open the store again).
///
/// ## Concurrency
///
/// `KeybaySession` is `Sendable`: one session may be shared by any number of tasks and threads
/// and used from them at once. Its state (the open generation of the store) is behind a lock
/// inside the session; writes are also serialised between processes by the store's lock file.
/// Every record operation is synchronous and short (it reads or replaces one file; a write waits
/// for another process's write to finish), never asks for a secret and never calls a method
/// plugin, so it may be called from async code directly. (One case reaches the root: when
/// another process gave a platform-only store a new key, by adding and removing a method, the
/// next call opens the new generation with the root, which for a `secret-service` root on a
/// locked keyring asks the session's interaction to `confirm`.) After ``close()`` every call
/// throws `.closed`, in whichever task it runs.
public final class KeybaySession: Sendable {
    /// The configuration the store was opened with.
    public let configuration: KeybayConfiguration
    private let engine: StoreEngine
    private let file: StoreFile
    private let current: Mutex<Generation?>
    /// Who plugins may ask (method ceremonies run only in `open` and `auth`).
    let interaction: any KeybayInteraction

    init(_ configuration: KeybayConfiguration, engine: StoreEngine, file: StoreFile, generation: Generation, interaction: any KeybayInteraction) {
        self.configuration = configuration
        self.engine = engine.withoutRead
        self.file = file
        self.current = Mutex(generation)
        self.interaction = interaction
    }

    /// The store file's path, `<dataHome>/keybay/<applicationID>/` and the store's file name.
    public var storePath: String { engine.storePath }
    /// The unlock methods: list, add, remove, verify. They use the interaction the session was
    /// opened with.
    public var auth: KeybayAuth { KeybayAuth(session: self) }
    /// Whether the open generation is protected by methods (false, too, when the session is
    /// closed or the store can no longer be read: the next operation reports why).
    public var isProtected: Bool { (try? freshSnapshot().suite == .methods) ?? false }

    // MARK: Reading

    /// The value of `key`, or nil if there is no such record.
    ///
    /// - Parameter key: A record key (``KeybayRecordKey``).
    /// - Returns: The value's bytes, or nil.
    /// - Throws: `.invalidKey` for a key outside the grammar, `.closed` after ``close()``,
    ///   `.integrity` when the record fails authentication (the file was changed).
    public func get(_ key: String) throws -> [UInt8]? {
        let keyBytes = try RecordKey.validated(key)
        let snapshot = try freshSnapshot()
        guard let i = snapshot.index(of: keyBytes) else { return nil }
        return try snapshot.value(at: i, context: storePath)
    }

    /// The value of `key` as UTF-8 text, or nil if there is no such record.
    ///
    /// - Parameter key: A record key (``KeybayRecordKey``).
    /// - Throws: What ``get(_:)`` throws, and `.invalidArgument` when the value is not valid
    ///   UTF-8 (read it with ``get(_:)``).
    public func getString(_ key: String) throws -> String? {
        guard let bytes = try get(key) else { return nil }
        guard let text = String(validating: bytes, as: UTF8.self) else {
            throw KeybayError(.invalidArgument, "the value of '\(key)' is not UTF-8 text; read it as bytes")
        }
        return text
    }

    /// Whether a record `key` exists; nothing is decrypted.
    ///
    /// - Parameter key: A record key (``KeybayRecordKey``).
    /// - Throws: `.invalidKey` for a key outside the grammar, `.closed` after ``close()``.
    public func contains(_ key: String) throws -> Bool {
        let keyBytes = try RecordKey.validated(key)
        return try freshSnapshot().index(of: keyBytes) != nil
    }

    /// All keys in ascending byte order.
    ///
    /// - Throws: `.closed` after ``close()``.
    public func keys() throws -> [String] {
        try freshSnapshot().keyNames
    }

    /// The values of those `keys` that exist, all from one generation of the store (a write by
    /// another task or process lands wholly before or wholly after).
    ///
    /// - Parameter keys: Record keys; a key given twice appears once.
    /// - Returns: The values found, by key; keys without a record are absent.
    /// - Throws: `.invalidKey` for any key outside the grammar (before anything is read), and
    ///   what ``get(_:)`` throws.
    public func getMany(_ keys: [String]) throws -> [String: [UInt8]] {
        let keyBytes = try keys.map(RecordKey.validated)
        let snapshot = try freshSnapshot()
        let found = zip(keys, keyBytes).compactMap { key, bytes in snapshot.index(of: bytes).map { (key, $0) } }
        let values = try snapshot.values(at: found.map(\.1), context: storePath)
        return Dictionary(zip(found.map(\.0), values), uniquingKeysWith: { first, _ in first })
    }

    // MARK: Writing

    /// Stores `value` under `key`, replacing any value it had. The whole store file is replaced
    /// atomically and durably (written, synced, renamed, read back) before this returns.
    ///
    /// - Parameters:
    ///   - key: A record key (``KeybayRecordKey``).
    ///   - value: At most ``KeybayRecordKey/maxValueBytes`` bytes.
    /// - Throws: `.invalidKey`, `.valueTooLarge`, `.storeFull` (4096 records or a 16 MiB file),
    ///   `.closed`; `.io` when the write failed. An `.io` error with `tookEffect` set means the
    ///   new file is in place and the session holds it, but it could not be confirmed durable.
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

    /// Stores `value` as UTF-8 under `key`; see ``set(_:bytes:)``.
    ///
    /// - Parameters:
    ///   - key: A record key (``KeybayRecordKey``).
    ///   - value: Text of at most ``KeybayRecordKey/maxValueBytes`` UTF-8 bytes.
    /// - Throws: What ``set(_:bytes:)`` throws.
    public func set(_ key: String, string value: String) throws {
        try set(key, bytes: Array(value.utf8))
    }

    /// Removes `key`; returns false (and writes nothing) if there was no such record.
    ///
    /// - Parameter key: A record key (``KeybayRecordKey``).
    /// - Throws: `.invalidKey`, `.closed`, and the write failures of ``set(_:bytes:)``.
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

    /// Removes every record; the store, its root and its methods stay. Writes nothing when
    /// there is no record.
    ///
    /// - Throws: `.closed`, and the write failures of ``set(_:bytes:)``.
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
    ///
    /// The new root is created with the session's interaction (a `secret-service` root may ask
    /// ``KeybayInteraction/confirm(_:)``).
    /// - Parameters:
    ///   - rootPlugin: The root plugin to move to, or ``KeybayConfiguration/automaticRoot``.
    ///   - options: The new root's creation options; a root that takes none refuses any.
    /// - Returns: The root the store is on now, and where the old one was left if it stayed.
    /// - Throws: `.invalidArgument` for an unknown option, `.pluginNotFound` and the root's
    ///   own failures, `.closed`; `.io` with `tookEffect` as above.
    @discardableResult
    public func moveRoot(to rootPlugin: String, options: [(String, String)] = []) throws -> KeybayRootMove {
        defer { close() }
        let generation = try current.withLock { try open($0) }
        let moved = try engine.moveRoot(file, previous: generation, to: rootPlugin, options: options, interaction: interaction)
        return KeybayRootMove(rootPlugin: moved.root.id, rootLocation: moved.root.location, oldRootLeftAt: moved.oldRootLeftAt)
    }

    /// Ends the session; later calls throw `.closed`. Keys held in guarded memory are freed.
    /// Idempotent; safe to call while other tasks use the session (their next call throws
    /// `.closed`).
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
                generation = try engine.reload(file, reusing: g.snapshot)
            }
            return generation!.snapshot
        }
    }

    func loadMethodPlugin(_ id: String) throws -> LoadedPlugin {
        try PluginLoader.loadMethod(id, search: configuration.pluginSearch)
    }

    /// Replaces the method list (see StoreEngine.rotate); fails if the methods on disk are no
    /// longer those of `expected` (another session or process changed them meanwhile). Returns
    /// why a rotation that took effect could not be confirmed durable, for the caller to throw
    /// once it has handed over what the new method shows.
    func rotate(expecting expected: StoreSnapshot, _ change: ([MethodEnvelope.Public]) -> [MethodEnvelope.Public]) throws -> KeybayError? {
        try replaceGeneration { try engine.rotate(file, previous: $0, expecting: expected, change: change) }
    }

    private func write(_ change: (StoreSnapshot) throws -> [PendingFrame]?) throws {
        if let unconfirmed = try replaceGeneration({ try engine.commit(file, previous: $0, change: change) }) { throw unconfirmed }
    }

    /// The session's generation, unless the session is closed.
    private func open(_ generation: Generation?) throws -> Generation {
        guard let generation else { throw KeybayError(.closed, "the session for \(engine.storePath) is closed") }
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
