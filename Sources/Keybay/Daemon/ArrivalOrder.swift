// SPDX-License-Identifier: Apache-2.0
import Glibc

/// The turns of one held store: its requests run one at a time, first come first served (each
/// takes a ticket as its thread starts on it, the main thread having read the whole request,
/// and tickets are served in order). Writes land in that order and a read sees every write
/// acknowledged before it was sent. A client that stalls before its request is whole has no
/// ticket, and one slow to take its reply has finished its turn: neither holds anyone. Other
/// stores have turns of their own.
final class ArrivalOrder: @unchecked Sendable {
    // A condition variable needs a mutex at a fixed address: both are allocated here.
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    private let turn = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)
    /// Under `mutex`: the next ticket to hand out and the one being served.
    private var nextTicket: UInt64 = 0
    private var serving: UInt64 = 0

    init() {
        pthread_mutex_init(mutex, nil)
        pthread_cond_init(turn, nil)
    }

    deinit {
        pthread_cond_destroy(turn)
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
        turn.deallocate()
    }

    /// Runs `body` once every request that arrived before this one is done.
    func inTurn<R>(_ body: () throws -> R) rethrows -> R {
        pthread_mutex_lock(mutex)
        let ticket = nextTicket
        nextTicket += 1
        while serving != ticket { pthread_cond_wait(turn, mutex) }
        pthread_mutex_unlock(mutex)
        defer {
            pthread_mutex_lock(mutex)
            serving += 1
            pthread_cond_broadcast(turn)
            pthread_mutex_unlock(mutex)
        }
        return try body()
    }
}
