// SPDX-License-Identifier: Apache-2.0
import CKeybayPlugin

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
///
/// ## Through the agent
///
/// A session of a protected store that `keybay-methods unlock` handed to the keybay agent
/// (``KeybayConfiguration/agentSocket``) reads and writes through the agent: nothing is asked,
/// and the agent does each write with the same durable commit. When the agent stops serving the
/// store (its time ran out, `lock`, the file on disk changed, the agent ended), a record
/// operation throws `.authenticationRequired`: open the store again. Where records go is decided
/// once, at open. The `auth` operations never go through the agent: the first that needs the
/// store's key (adding, replacing, removing or verifying a method, a root move) opens the store
/// itself as `open` would have without the agent, with the method and interaction the session
/// was opened with, and later `auth` operations use that. Records still go through the agent; a
/// change of methods changes the file, so the agent forgets the store and the next record
/// operation throws `.authenticationRequired`.
public final class KeybaySession: Sendable {
    /// The configuration the store was opened with.
    public let configuration: KeybayConfiguration
    /// Where record operations go, chosen once at open: the store itself or the agent.
    let records: any RecordSource
    /// The store as the session reads it itself, for method operations: `records` when that is
    /// the store itself; opened on the first method operation of a session that reads through
    /// the agent (see `localRecords()`).
    let ownRecords: PosixLocked<LocalRecords?>
    /// Who plugins may ask (method ceremonies run only in `open` and `auth`).
    let interaction: any KeybayInteraction
    /// How the session opens the store itself when it reads through the agent and `auth` needs the key.
    let reopen: LocalReopen

    init(_ configuration: KeybayConfiguration, engine: StoreEngine, file: StoreFile, generation: Generation, interaction: any KeybayInteraction) {
        self.configuration = configuration
        let local = LocalRecords(OpenGeneration(engine: engine.withoutRead, file: file, generation: generation))
        records = local
        ownRecords = PosixLocked(local)
        self.interaction = interaction
        reopen = .platform
    }

    init(_ configuration: KeybayConfiguration, agent: AgentRecords, reopen: LocalReopen, interaction: any KeybayInteraction) {
        // Nothing of the store is read here, but hosts may use guarded memory once they have a
        // session (the C API hands values out in it).
        Sodium.ensureInitialised()
        self.configuration = configuration
        records = agent
        ownRecords = PosixLocked(nil)
        self.interaction = interaction
        self.reopen = reopen
    }

    /// The store file's path, `<dataHome>/keybay/<applicationID>/` and the store's file name.
    public var storePath: String { configuration.storePath }
    /// The unlock methods: list, add, remove, verify. They use the interaction the session was
    /// opened with.
    public var auth: KeybayAuth { KeybayAuth(session: self) }
    /// Whether the open generation is protected by methods (false, too, when the session is
    /// closed or the store can no longer be read: the next operation reports why).
    public var isProtected: Bool {
        guard !records.isClosed else { return false }
        guard let local = records as? LocalRecords else { return true }
        return (try? local.freshSnapshot().suite == .methods) ?? false
    }
    /// Whether record operations go through the keybay agent (the store was unlocked with
    /// `keybay-methods unlock`); false after ``close()``.
    public var readsThroughAgent: Bool { records is AgentRecords && !records.isClosed }

    // MARK: Reading

    /// The value of `key`, or nil if there is no such record.
    ///
    /// - Parameter key: A record key (``KeybayRecordKey``).
    /// - Returns: The value's bytes, or nil.
    /// - Throws: `.invalidKey` for a key outside the grammar, `.closed` after ``close()``,
    ///   `.integrity` when the record fails authentication (the file was changed).
    public func get(_ key: String) throws -> [UInt8]? {
        _ = try RecordKey.validated(key)
        return try records.get(key)
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
        _ = try RecordKey.validated(key)
        return try records.contains(key)
    }

    /// All keys in ascending byte order.
    ///
    /// - Throws: `.closed` after ``close()``.
    public func keys() throws -> [String] {
        try records.keys()
    }

    /// The values of those `keys` that exist, all from one generation of the store (a write by
    /// another task or process lands wholly before or wholly after).
    ///
    /// - Parameter keys: Record keys; a key given twice appears once.
    /// - Returns: The values found, by key; keys without a record are absent.
    /// - Throws: `.invalidKey` for any key outside the grammar (before anything is read), and
    ///   what ``get(_:)`` throws.
    public func getMany(_ keys: [String]) throws -> [String: [UInt8]] {
        _ = try keys.map(RecordKey.validated)
        let values = try records.getMany(keys)
        return Dictionary(zip(keys, values).compactMap { key, value in value.map { (key, $0) } }, uniquingKeysWith: { first, _ in first })
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
        _ = try RecordKey.validated(key)
        try LocalRecords.checkValue(value, for: key)
        try records.set(key, value: value)
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
        _ = try RecordKey.validated(key)
        return try records.delete(key)
    }

    /// Removes every record; the store, its root and its methods stay. Writes nothing when
    /// there is no record.
    ///
    /// - Throws: `.closed`, and the write failures of ``set(_:bytes:)``.
    public func clearAll() throws {
        try records.clearAll()
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
        let moved = try localRecords().withGeneration { open in
            try open.engine.moveRoot(open.file, previous: open.generation, to: rootPlugin, options: options, interaction: interaction)
        }
        return KeybayRootMove(rootPlugin: moved.root.id, rootLocation: moved.root.location, oldRootLeftAt: moved.oldRootLeftAt)
    }

    /// Ends the session; later calls throw `.closed`. Keys held in guarded memory are freed.
    /// Idempotent; safe to call while other tasks use the session (their next call throws
    /// `.closed`).
    public func close() {
        records.close()
        ownRecords.withLock { $0?.close() }
    }
}
