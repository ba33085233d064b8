// SPDX-License-Identifier: Apache-2.0
import Glibc
import Synchronization
import Testing
@testable import Keybay

/// Reads large enough to be split between two threads (`ParallelWork`): every value comes back
/// exactly, and every frame is still checked against the manifest. A frame's digest and its
/// decryption may run on different threads; a value is returned only if both passed, and each
/// bad frame is refused as `frame-digest`, in a read of all records and read alone.
@Suite struct LargeReadTests {
    static let valueBytes = 100 * 1024
    static let count = 6
    static var keys: [String] { (0..<count).map { "r/\($0)" } }

    static func store() throws -> (Sandbox, KeybaySession, [String: [UInt8]]) {
        let box = Sandbox()
        let session = try KeybayStore.open(box.configuration())
        var values: [String: [UInt8]] = [:]
        for key in keys {
            values[key] = Sodium.randomBytes(valueBytes)
            try session.set(key, bytes: values[key]!)
        }
        // Hashing and decrypting these frames is enough work for two threads.
        #expect(2 * count * valueBytes >= ParallelWork.minimumBytes)
        return (box, session, values)
    }

    /// Writes `file` as the store, opens it and checks that reading every record, and reading
    /// each of the records `refused` alone, is an integrity failure of `reason`.
    static func reopen(_ box: Sandbox, writing file: [UInt8], refused: [String], reason: String,
                       sourceLocation: SourceLocation = #_sourceLocation) throws -> KeybaySession {
        writeBytes(box.storePath, file)
        let reopened = try KeybayStore.open(box.configuration(), createIfAbsent: false)
        for read in [keys] + refused.map({ [$0] }) {
            let error = keybayError { _ = try reopened.getMany(read) }
            #expect(error?.code == .integrity && error?.reason == reason, "\(read): \(String(describing: error))", sourceLocation: sourceLocation)
        }
        return reopened
    }

    /// Enough work runs on two threads: the thread that takes piece 0 waits until another has
    /// taken piece 1, which a single thread (taking them in order) never does. The wait has a
    /// hang guard, after which the ids show one thread did both.
    @Test func enoughWorkRunsOnTwoThreads() {
        let started = Atomic<Bool>(false)
        // A pthread mutex, not Mutex: ThreadSanitizer intercepts the one, not the other (its
        // futex-based implementation is not instrumented), and reported a race here.
        final class Threads: @unchecked Sendable {
            let lock = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
            var ids: [Int: pthread_t] = [:]
            init() { pthread_mutex_init(lock, nil) }
            deinit { pthread_mutex_destroy(lock); lock.deallocate() }
            func withLock<R>(_ body: (inout [Int: pthread_t]) -> R) -> R { pthread_mutex_lock(lock); defer { pthread_mutex_unlock(lock) }; return body(&ids) }
        }
        let threads = Threads()
        ParallelWork.run(count: 2, bytes: ParallelWork.minimumBytes) { piece in
            threads.withLock { $0[piece] = pthread_self() }
            if piece == 1 { started.store(true, ordering: .releasing) }
            var waited = 0
            while piece == 0 && !started.load(ordering: .acquiring) && waited < 10_000 { usleep(1000); waited += 1 }
        }
        let ids = threads.withLock { $0 }
        #expect(ids.count == 2 && pthread_equal(ids[0]!, ids[1]!) == 0, "both pieces ran on one thread")
        let single = Mutex<Set<pthread_t>>([])
        ParallelWork.run(count: 8, bytes: ParallelWork.minimumBytes - 1) { _ in single.withLock { _ = $0.insert(pthread_self()) } }
        #expect(single.withLock { $0 } == [pthread_self()], "less work stays on the calling thread")
    }

    @Test func everyValueComesBackExactly() throws {
        let (box, session, values) = try Self.store()
        defer { session.close(); withExtendedLifetime(box) {} }
        #expect(try session.getMany(Self.keys.reversed() + ["r/missing"]) == values)
        for (key, value) in values { #expect(try session.get(key) == value) }
    }

    /// Older frames of r/2 and r/4 (same store key, epoch and AAD, so each decrypts) put back
    /// into a newer generation: only the digest check can refuse them.
    @Test func olderFramesAreRefusedEachOnItsOwn() throws {
        let (box, session, _) = try Self.store()
        let older = try session.freshSnapshot()
        let olderFile = try #require(readBytes(box.storePath))
        try session.set("r/2", bytes: Sodium.randomBytes(Self.valueBytes))
        try session.set("r/4", bytes: Sodium.randomBytes(Self.valueBytes))
        #expect(try session.freshSnapshot().frameStarts == older.frameStarts, "same lengths: the frames keep their places")
        session.close()
        var file = try #require(readBytes(box.storePath))
        for i in [2, 4] {
            let frame = older.frameStarts[i]..<(older.frameStarts[i] + older.entries[i].frameLength)
            file.replaceSubrange(frame, with: olderFile[frame])
        }
        let reopened = try Self.reopen(box, writing: file, refused: ["r/2", "r/4"], reason: "frame-digest")
        defer { reopened.close() }
        #expect(try reopened.getMany(["r/0", "r/1", "r/3", "r/5"]).count == 4, "the other records still read")
    }

    @Test func aFlippedByteInALargeFrameIsRefused() throws {
        let (box, session, _) = try Self.store()
        let snapshot = try session.freshSnapshot()
        session.close()
        var file = try #require(readBytes(box.storePath))
        file[snapshot.frameStarts[5] + Self.valueBytes / 2] ^= 0x40
        let reopened = try Self.reopen(box, writing: file, refused: ["r/5"], reason: "frame-digest")
        defer { reopened.close() }
        #expect(keybayCode { _ = try reopened.get("r/5") } == .integrity)
    }
}
