// SPDX-License-Identifier: Apache-2.0
import Glibc
import Synchronization

/// The agent's connections in progress, each on a thread of its own (detached), at most `limit`
/// at once: a client that is slow to send or to read costs its own thread for its bound, and
/// nobody else's time. While `limit` are busy the agent accepts nothing more; new connections
/// wait in the socket's backlog (their clients' bounds still run).
final class ConnectionThreads: Sendable {
    /// How many connections are served at once.
    static let limit = 32

    private let running = Mutex(0)

    /// How many are being served.
    var count: Int { running.withLock { $0 } }

    /// Whether another may start now.
    var hasRoom: Bool { count < Self.limit }

    /// Runs `work` on a new thread; false (and `work` not run) when no thread could be started.
    func start(_ work: @escaping @Sendable () -> Void) -> Bool {
        running.withLock { $0 += 1 }
        let job = Job { [self] in
            work()
            running.withLock { $0 -= 1 }
        }
        let context = Unmanaged.passRetained(job)
        var attributes = pthread_attr_t()
        pthread_attr_init(&attributes)
        pthread_attr_setdetachstate(&attributes, Int32(PTHREAD_CREATE_DETACHED))
        var thread = pthread_t()
        let started = pthread_create(&thread, &attributes, { raw in
            Unmanaged<Job>.fromOpaque(raw!).takeRetainedValue().body()
            return nil
        }, context.toOpaque()) == 0
        pthread_attr_destroy(&attributes)
        if !started {
            context.release()
            running.withLock { $0 -= 1 }
        }
        return started
    }

    /// Waits until none is left, at most `seconds`; whether none is.
    func waitUntilDone(seconds: Double) -> Bool {
        let deadline = AgentSocket.monotonicNow() + seconds
        while count > 0 {
            guard AgentSocket.monotonicNow() < deadline else { return false }
            usleep(10_000)
        }
        return true
    }

    private final class Job: Sendable {
        let body: @Sendable () -> Void
        init(_ body: @escaping @Sendable () -> Void) { self.body = body }
    }
}
