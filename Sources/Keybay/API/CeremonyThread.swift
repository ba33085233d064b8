// SPDX-License-Identifier: Apache-2.0
import Glibc
import Synchronization

/// Runs the blocking part of an `async` entry point (an unlock method's ceremony: an Argon2id
/// run, a wait for a touch of up to 30 s) on a thread of its own and resumes the caller when it
/// is done: a cooperative thread held by a waiting plugin is one the rest of the program cannot
/// use, and with as many waiting calls as cores nothing else would run at all. Cancelling the
/// calling task reaches the plugin as its host's `is_cancelled`, so the wait ends with
/// `.cancelled`.
enum CeremonyThread {
    static func run<T: Sendable>(_ interaction: any KeybayInteraction,
                                 _ body: @escaping @Sendable (_ ceremonyInteraction: any KeybayInteraction) throws -> T) async throws -> T {
        let cancellable = TaskCancellableInteraction(interaction)
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<T, Error>) in
                let work: @Sendable () -> Void = { continuation.resume(with: Result { try body(cancellable) }) }
                if !DetachedThread.start(work) {
                    // No thread to be had: do the work here rather than fail the call.
                    work()
                }
            }
        } onCancel: {
            cancellable.cancel()
        }
    }
}

/// The caller's interaction, cancelled also when the task that started the ceremony is: plugins
/// poll `isCancelled`, and a question not yet asked is not asked.
final class TaskCancellableInteraction: KeybayInteraction, Sendable {
    private let inner: any KeybayInteraction
    private let cancelled = Atomic<Bool>(false)

    init(_ inner: any KeybayInteraction) { self.inner = inner }

    func cancel() { cancelled.store(true, ordering: .releasing) }

    private var taskCancelled: Bool { cancelled.load(ordering: .acquiring) }

    private func checkCancelled() throws {
        if taskCancelled { throw KeybayError(.cancelled, "cancelled: the task waiting for this was cancelled") }
    }

    func askSecret(_ request: KeybaySecretRequest, into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
        try checkCancelled()
        return try inner.askSecret(request, into: buffer)
    }

    func message(_ text: String, level: KeybayMessageLevel) { inner.message(text, level: level) }

    func confirm(_ question: String) throws -> Bool {
        try checkCancelled()
        return try inner.confirm(question)
    }

    func showSecret(_ secret: KeybayShownSecret) throws {
        try checkCancelled()
        try inner.showSecret(secret)
    }

    var isCancelled: Bool { taskCancelled || inner.isCancelled }

    var logLevel: KeybayLogLevel { inner.logLevel }

    func log(_ text: String, level: KeybayLogLevel) { inner.log(text, level: level) }

    func log(_ text: String) { inner.log(text) }
}
