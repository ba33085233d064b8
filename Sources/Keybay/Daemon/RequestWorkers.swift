// SPDX-License-Identifier: Apache-2.0
import Glibc
import Synchronization

/// The agent's requests in progress, each on a thread of its own (detached), started by the main
/// thread once a request is whole: a write waiting for the store's lock or an fsync holds its
/// thread and its store's turn, and no other store and no other connection. A finished reply is
/// queued for the main thread, which a byte on a pipe wakes.
final class RequestWorkers: Sendable {
    private let finished = Mutex<[(id: UInt64, frame: [UInt8])]>([])
    private let running = Mutex(0)
    /// The pipe's ends: the main thread polls `wakeup`, a worker writes to `notify`.
    let wakeup: Int32
    private let notify: Int32

    init() throws {
        var ends: [Int32] = [-1, -1]
        guard pipe(&ends) == 0 else { throw KeybayError.posix("cannot make the agent's wake-up pipe", "pipe") }
        for end in ends {
            _ = fcntl(end, F_SETFD, FD_CLOEXEC)
            _ = fcntl(end, F_SETFL, fcntl(end, F_GETFL) | O_NONBLOCK)
        }
        (wakeup, notify) = (ends[0], ends[1])
    }

    /// How many are running.
    var count: Int { running.withLock { $0 } }

    /// Runs `work` on a new thread and queues the frame it returns under `id`; false (and `work`
    /// not run) when no thread could be started.
    func start(id: UInt64, _ work: @escaping @Sendable () -> [UInt8]) -> Bool {
        running.withLock { $0 += 1 }
        let started = DetachedThread.start { [self] in
            var frame = work()
            // Swapped in under the lock: the queue holds the only copy, so the connection's wipe
            // is in place (a copy left here would be freed unwiped).
            finished.withLock { queue in
                queue.append((id, []))
                swap(&queue[queue.count - 1].frame, &frame)
            }
            running.withLock { $0 -= 1 }
            var byte: UInt8 = 1
            _ = write(notify, &byte, 1)
        }
        if !started { running.withLock { $0 -= 1 } }
        return started
    }

    /// The replies finished since the last call (the wake-up pipe emptied first).
    func takeFinished() -> [(id: UInt64, frame: [UInt8])] {
        var sink = [UInt8](repeating: 0, count: 64)
        while read(wakeup, &sink, sink.count) > 0 {}
        return finished.withLock { queue in
            defer { queue = [] }
            return queue
        }
    }

    /// Waits until none is running, at most `seconds`; whether none is.
    func waitUntilDone(seconds: Double) -> Bool {
        let deadline = AgentSocket.monotonicNow() + seconds
        while count > 0 {
            guard AgentSocket.monotonicNow() < deadline else { return false }
            usleep(10_000)
        }
        return true
    }
}
