// SPDX-License-Identifier: Apache-2.0
import Glibc
import Synchronization

/// Runs independent pieces of CPU work on the calling thread and, when there is enough of it to
/// pay for starting a thread, on one more: reading a large store is hashing and decrypting
/// megabytes, which one core does at about half the speed of the cipher alone. The pieces are
/// taken in order from a shared counter, so neither thread idles while work is left. No thread
/// outlives the call, and a thread that cannot be started only means the caller does it all.
enum ParallelWork {
    /// Below this much work (bytes hashed or decrypted) everything runs on the calling thread.
    static let minimumBytes = 256 * 1024

    /// Calls `piece(i)` once for every i in 0..<count; pieces must not depend on each other.
    static func run(count: Int, bytes: Int, _ piece: (Int) -> Void) {
        guard count > 1, bytes >= minimumBytes else {
            for i in 0..<count { piece(i) }
            return
        }
        withoutActuallyEscaping(piece) { piece in
            let queue = Queue(count: count, piece: piece)
            let context = Unmanaged.passRetained(queue)
            var helper = pthread_t()
            let started = pthread_create(&helper, nil, { raw in
                Unmanaged<Queue>.fromOpaque(raw!).takeRetainedValue().drain()
                return nil
            }, context.toOpaque()) == 0
            if !started { context.release() }
            queue.drain()
            // Joining also makes everything the helper wrote visible here.
            if started { pthread_join(helper, nil) }
        }
    }

    private final class Queue: @unchecked Sendable {
        private let next = Atomic<Int>(0)
        private let count: Int
        private let piece: (Int) -> Void

        init(count: Int, piece: @escaping (Int) -> Void) {
            self.count = count
            self.piece = piece
        }

        func drain() {
            while true {
                let i = next.wrappingAdd(1, ordering: .relaxed).oldValue
                guard i < count else { return }
                piece(i)
            }
        }
    }
}
