// SPDX-License-Identifier: Apache-2.0
import Glibc

/// A value behind a pthread mutex, for state that threads change at once (a session's open
/// generation, written by concurrent `set`s). `Synchronization.Mutex` orders them as well, but
/// through a futex that ThreadSanitizer cannot see, so every such change looked like a race to
/// it (`scripts/sanitizers.sh capi`); TSan intercepts `pthread_mutex_lock`.
final class PosixLocked<Value>: @unchecked Sendable {
    // A mutex must not move: it is allocated here.
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    /// Under `mutex`.
    private var value: Value

    init(_ value: Value) {
        self.value = value
        pthread_mutex_init(mutex, nil)
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
    }

    /// Runs `body` on the value, holding the lock.
    func withLock<R>(_ body: (inout Value) throws -> R) rethrows -> R {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body(&value)
    }

    /// Runs `body` on the value if the lock is free now; nil (and `body` not run) if not.
    func withLockIfAvailable<R>(_ body: (inout Value) throws -> R) rethrows -> R? {
        guard pthread_mutex_trylock(mutex) == 0 else { return nil }
        defer { pthread_mutex_unlock(mutex) }
        return try body(&value)
    }
}
