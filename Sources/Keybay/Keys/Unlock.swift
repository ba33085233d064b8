// SPDX-License-Identifier: Apache-2.0
/// Runs a method's ceremony (its plugin, a prompt, a touch) for the stored public description
/// and returns the method's 32-byte secret M.
typealias MethodCeremony = (MethodEnvelope.Public) throws -> SecureBytes

/// How a store's key package is to be opened: with the platform root alone, or with the root and
/// one enrolled method, named beforehand or chosen once the store's methods are known.
enum Unlock {
    /// A platform-only store. A protected one throws `.authenticationRequired`, listing its methods.
    case platform
    /// A protected store, with the method whose id this is. A platform-only store is a
    /// `.protectionMismatch`; nothing on disk is `.storeNotFound`, and nothing is created.
    case method(id: [UInt8], ceremony: MethodCeremony)
    /// Whatever the store needs: a platform-only store as `.platform`; a protected one with the
    /// method whose id `choose` returns (called only then, with the store's methods).
    case choosing(choose: ([MethodEnvelope.Public]) throws -> [UInt8], ceremony: MethodCeremony)

    /// Only an existing store can be opened with a named method: it is never created.
    var needsExistingStore: Bool {
        if case .method = self { return true }
        return false
    }

    /// Whether opening may run a method's ceremony (then it runs before any lock is taken).
    var mayRunCeremony: Bool {
        if case .platform = self { return false }
        return true
    }
}
