// SPDX-License-Identifier: Apache-2.0
import CSodium

/// libsodium must be initialised once before use; a global `let` is initialised exactly once,
/// thread-safely, on first touch.
enum Sodium {
    private static let initialised: Bool = sodium_init() >= 0

    static func ensureInitialised() {
        precondition(initialised, "libsodium failed to initialise")
    }

    static func randomBytes(_ count: Int) -> [UInt8] {
        ensureInitialised()
        var out = [UInt8](repeating: 0, count: count)
        out.withUnsafeMutableBytes { randombytes_buf($0.baseAddress!, $0.count) }
        return out
    }

    /// Constant-time equality for secrets and commitments of equal length.
    static func constantTimeEqual(_ a: UnsafeRawBufferPointer, _ b: UnsafeRawBufferPointer) -> Bool {
        guard a.count == b.count else { return false }
        if a.count == 0 { return true }
        return sodium_memcmp(a.baseAddress!, b.baseAddress!, a.count) == 0
    }

    static func constantTimeEqual(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        a.withUnsafeBytes { pa in b.withUnsafeBytes { pb in constantTimeEqual(pa, pb) } }
    }

    /// Wipes an ordinary array in place (for transient copies that could not live in guarded memory).
    static func wipe(_ bytes: inout [UInt8]) {
        bytes.withUnsafeMutableBytes { if let base = $0.baseAddress { sodium_memzero(base, $0.count) } }
    }
}
