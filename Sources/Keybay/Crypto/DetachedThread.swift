// SPDX-License-Identifier: Apache-2.0
import Glibc

/// Starts work on a thread of its own that nobody joins (a ceremony that may wait for the user,
/// one request of the agent). Whether a thread could be started is the caller's to handle.
enum DetachedThread {
    /// Runs `body` on a new detached thread; false (and `body` not run) when none could be started.
    static func start(_ body: @escaping @Sendable () -> Void) -> Bool {
        let context = Unmanaged.passRetained(Work(body))
        var attributes = pthread_attr_t()
        pthread_attr_init(&attributes)
        pthread_attr_setdetachstate(&attributes, Int32(PTHREAD_CREATE_DETACHED))
        var thread = pthread_t()
        let started = pthread_create(&thread, &attributes, { raw in
            Unmanaged<Work>.fromOpaque(raw!).takeRetainedValue().body()
            return nil
        }, context.toOpaque()) == 0
        pthread_attr_destroy(&attributes)
        if !started { context.release() }
        return started
    }

    private final class Work: Sendable {
        let body: @Sendable () -> Void
        init(_ body: @escaping @Sendable () -> Void) { self.body = body }
    }
}
