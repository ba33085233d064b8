// SPDX-License-Identifier: Apache-2.0
import CSodium

// Below every layer (every layer holds secrets in it), so it calls libsodium itself rather than
// through Crypto's `Sodium`.

/// Secret bytes in guarded memory (`sodium_malloc`: guard pages, canary, mlock where allowed),
/// read-only after they are filled and wiped when freed. Immutable after `init`, hence Sendable.
public final class SecureBytes: @unchecked Sendable {
    private let pointer: UnsafeMutableRawPointer
    /// The number of bytes (at least 1).
    public let count: Int

    /// Allocates `count` bytes and lets `fill` write them once; on a throw the memory is wiped and freed.
    init(count: Int, fill: (UnsafeMutableRawBufferPointer) throws -> Void) rethrows {
        precondition(Self.sodiumInitialised, "libsodium failed to initialise")
        precondition(count > 0, "SecureBytes needs at least one byte")
        guard let p = sodium_malloc(count) else {
            fatalError("sodium_malloc(\(count)) failed: out of memory")
        }
        do {
            try fill(UnsafeMutableRawBufferPointer(start: p, count: count))
        } catch {
            sodium_free(p)
            throw error
        }
        sodium_mprotect_readonly(p)
        pointer = p
        self.count = count
    }

    /// Fresh random bytes.
    convenience init(randomCount count: Int) {
        self.init(count: count) { randombytes_buf($0.baseAddress!, $0.count) }
    }

    /// Copies `bytes` into guarded memory. The caller should wipe its own copy.
    public convenience init(copying bytes: some Collection<UInt8>) {
        self.init(count: bytes.count) { buffer in
            var i = 0
            for b in bytes { buffer[i] = b; i += 1 }
        }
    }

    /// Lends the bytes, read-only, for the duration of `body`; do not copy them out.
    ///
    /// - Parameter body: Reads the bytes; the pointer is valid only inside it.
    /// - Returns: What `body` returns.
    /// - Throws: What `body` throws.
    public func withUnsafeBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        try body(UnsafeRawBufferPointer(start: pointer, count: count))
    }

    /// Constant-time comparison.
    public func equals(_ other: SecureBytes) -> Bool {
        count == other.count && withUnsafeBytes { a in other.withUnsafeBytes { b in sodium_memcmp(a.baseAddress!, b.baseAddress!, count) == 0 } }
    }

    /// `sodium_init` once, on first use (a global `let`: thread-safe; libsodium allows further
    /// calls, so `Sodium.ensureInitialised` elsewhere is harmless).
    private static let sodiumInitialised: Bool = sodium_init() >= 0

    deinit {
        sodium_free(pointer) // sodium_free wipes before unmapping
    }
}
