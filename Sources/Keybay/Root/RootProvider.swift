// SPDX-License-Identifier: Apache-2.0
/// A platform root owns one secret per application and seals the store's key package with it.
/// The core never sees the secret: it asks the root to create, seal, open and reset, and keeps
/// the opaque provider state the root returns in the store's bootstrap, so that a root that does
/// not belong to a store is detected before any decryption.
protocol RootProvider: Sendable {
    /// Plugin id, e.g. `file-root`; also the storage-domain profile.
    var id: String { get }
    /// Where the root lives, for `status` and messages (a path, a keyring name, ...).
    var location: String { get }
    /// The root's own line on what it protects against and what not; nil if it gives none.
    var protection: String? { get }

    func exists() throws -> Bool
    /// Refuses, before anything of a new store is made, what `create(options:)` would refuse
    /// without trying (options the root does not take) and a root whose `exists` fails (one that
    /// reaches its service to answer, like secret-service; tpm2's looks at its file only).
    /// A name given twice among `options` is refused (`.invalidArgument`) here too.
    func checkCreatable(options: [(String, String)]) throws
    /// Creates the root with the creation options (`init --opt`), passed on in the order given;
    /// never overwrites. Returns the provider state (≤ 64 bytes) for the bootstrap.
    func create(options: [(String, String)]) throws -> [UInt8]
    /// Seals `plaintext` after checking that `providerState` belongs to this root.
    func seal(_ plaintext: SecureBytes, aad: [UInt8], providerState: [UInt8]) throws -> [UInt8]
    /// Opens a sealed package; throws `.platformKeyInvalidated` when the root is absent or is not
    /// the one `providerState` names, `.integrity` when the package fails authentication. Gives
    /// the root's rollback floor with it (0 for a root that keeps none).
    func open(_ sealed: ArraySlice<UInt8>, aad: [UInt8], providerState: [UInt8]) throws -> (package: SecureBytes, floor: UInt64)
    /// Raises the rollback floor to `epoch`, durably; never lowers it. Nothing for a root that
    /// keeps no floor.
    func raiseFloor(to epoch: UInt64, providerState: [UInt8]) throws
    /// Whether the root keeps a rollback floor (`status` and the docs say what it defends).
    var keepsFloor: Bool { get }
    /// Removes the root; idempotent.
    func reset() throws
    /// Whether the root would open now, without unsealing (after checking that `providerState`
    /// names it): its report line and the PCRs in the way (a bit mask, 0 when it would open);
    /// nil for a root that offers no check.
    func check(providerState: [UInt8]) throws -> (report: String, differingPCRs: UInt32)?
    /// Seals the root again to the platform state now in effect, opened with its recovery
    /// secret; `providerState` stays valid. The caller holds the store's exclusive lock.
    func reseal(providerState: [UInt8], recoverySecret: SecureBytes) throws
}

extension RootProvider {
    func check(providerState: [UInt8]) throws -> (report: String, differingPCRs: UInt32)? { nil }
    func reseal(providerState: [UInt8], recoverySecret: SecureBytes) throws {
        throw KeybayError(.unsupported, "the root \(id) has no root recovery").with(pluginID: id, reason: "no-root-recovery")
    }

    func checkCreatable(options: [(String, String)]) throws {
        try refuseRepeatedOptionNames(options)
        _ = try exists()
    }
}

/// Root options are ordered, and a name may be given once (as for a method's options): a second
/// one is `.invalidArgument`, never a silent replacement.
func refuseRepeatedOptionNames(_ options: [(String, String)]) throws {
    var names = Set<String>()
    for (name, _) in options where !names.insert(name).inserted {
        throw KeybayError(.invalidArgument, "option \(name) given twice").with(reason: "repeated-option")
    }
}
