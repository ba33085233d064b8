// SPDX-License-Identifier: Apache-2.0
import Synchronization

/// The record source of a store read and written by this process: the open generation, re-read
/// (one stat) when another process replaced the file, and every write a read-modify-write
/// through the engine's durable commit, all under one lock. A session that reads the store
/// itself uses it, and so does the keybay agent for each store it holds (on the held engine);
/// the agent's callers are not trusted, so keys and values are checked here too.
///
/// `close()` never waits: the generation (with its keys in guarded memory) is dropped at once,
/// or by the call in progress as it ends. A call that has it keeps it alive until it is done.
final class LocalRecords: RecordSource {
    let storePath: String
    private let state: PosixLocked<OpenGeneration?>
    private let closed = Atomic<Bool>(false)

    init(_ open: OpenGeneration) {
        storePath = open.engine.storePath
        state = PosixLocked(open)
    }

    var isClosed: Bool { closed.load(ordering: .acquiring) }

    func close() {
        closed.store(true, ordering: .releasing)
        _ = state.withLockIfAvailable { $0 = nil }
    }

    /// Runs `body` on the open generation, under the lock.
    func withGeneration<R>(_ body: (inout OpenGeneration) throws -> R) throws -> R {
        try state.withLock { state in
            defer { if isClosed { state = nil } }
            guard !isClosed, state != nil else { throw Self.closedError(storePath) }
            return try body(&state!)
        }
    }

    /// Whether the live file is still the one held (false once closed); waits for a call in progress.
    var holdsLiveFile: Bool {
        (try? withGeneration { $0.file.identity() == $0.generation.identity }) ?? false
    }

    /// `holdsLiveFile`, or nil while a call is in progress (that call checks the file itself).
    var holdsLiveFileIfIdle: Bool? {
        guard !isClosed else { return false }
        return state.withLockIfAvailable { open in open.map { $0.file.identity() == $0.generation.identity } ?? false }
    }

    /// The live generation (re-read if another process replaced the file).
    func freshSnapshot() throws -> StoreSnapshot {
        try withGeneration { open in
            if open.file.identity() != open.generation.identity {
                open.generation = try open.engine.reload(open.file, reusing: open.generation.snapshot)
            }
            return open.generation.snapshot
        }
    }

    // MARK: Records

    func get(_ key: String) throws -> [UInt8]? {
        let keyBytes = try RecordKey.validated(key)
        let snapshot = try freshSnapshot()
        guard let i = snapshot.index(of: keyBytes) else { return nil }
        return try snapshot.value(at: i, context: storePath)
    }

    func getMany(_ keys: [String]) throws -> [[UInt8]?] {
        let keyBytes = try keys.map(RecordKey.validated)
        let snapshot = try freshSnapshot()
        let indices = keyBytes.map(snapshot.index(of:))
        var found = try snapshot.values(at: indices.compactMap { $0 }, context: storePath).makeIterator()
        return indices.map { $0.flatMap { _ in found.next() } }
    }

    func keys() throws -> [String] {
        try freshSnapshot().keyNames
    }

    func contains(_ key: String) throws -> Bool {
        let keyBytes = try RecordKey.validated(key)
        return try freshSnapshot().index(of: keyBytes) != nil
    }

    func set(_ key: String, value: [UInt8]) throws {
        let keyBytes = try RecordKey.validated(key)
        try Self.checkValue(value, for: key)
        try write { snapshot in
            let frame = value.withUnsafeBytes { StoreEncoder.sealFrame(key: keyBytes, value: $0, keys: snapshot.keys) }
            var frames = Self.frames(of: snapshot, excluding: keyBytes)
            let at = frames.firstIndex { !$0.key.lexicographicallyPrecedes(keyBytes) } ?? frames.endIndex
            frames.insert(frame, at: at)
            return frames
        }
    }

    func delete(_ key: String) throws -> Bool {
        let keyBytes = try RecordKey.validated(key)
        var found = false
        try write { snapshot in
            guard snapshot.index(of: keyBytes) != nil else { return nil }
            found = true
            return Self.frames(of: snapshot, excluding: keyBytes)
        }
        return found
    }

    func clearAll() throws {
        try write { snapshot in snapshot.entries.isEmpty ? nil : [] }
    }

    /// `.valueTooLarge` for a value over the format's limit.
    static func checkValue(_ value: [UInt8], for key: String) throws {
        guard value.count <= Suite1.maxValueBytes else {
            throw KeybayError(.valueTooLarge, "the value for '\(key)' is \(value.count) bytes, limit \(Suite1.maxValueBytes)")
        }
    }

    // MARK: Writing

    /// The frames of `snapshot` as they are, but the one of `key`.
    static func frames(of snapshot: StoreSnapshot, excluding key: [UInt8]) -> [PendingFrame] {
        var frames: [PendingFrame] = []
        frames.reserveCapacity(snapshot.entries.count + 1)
        for (i, e) in snapshot.entries.enumerated() where e.key != key {
            frames.append(PendingFrame(key: e.key, bytes: snapshot.frame(at: i), digest: e.digest))
        }
        return frames
    }

    /// One durable commit of the frames `change` gives for the live generation (nil: nothing to write).
    func write(_ change: (StoreSnapshot) throws -> [PendingFrame]?) throws {
        if let unconfirmed = try replaceGeneration({ try $0.engine.commit($0.file, previous: $0.generation, change: change) }) { throw unconfirmed }
    }

    /// Runs a write on the open generation and keeps the one it produces, also when it could
    /// not be confirmed durable (it is the store all the same); returns why not.
    func replaceGeneration(_ body: (OpenGeneration) throws -> Landed) throws -> KeybayError? {
        try withGeneration { open in
            let landed = try body(open)
            open.generation = landed.generation
            return landed.unconfirmed
        }
    }
}

/// A store this process reads itself: the engine, the directory and the generation it holds.
struct OpenGeneration: Sendable {
    let engine: StoreEngine
    let file: StoreFile
    var generation: Generation
}
