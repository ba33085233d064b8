// SPDX-License-Identifier: Apache-2.0
/// An unlock method as the API uses it, beside `RootProvider` for roots: it enrolls a credential
/// into a 32-byte method secret M with public parameters, and gives M back from those parameters
/// (unwrap, or verify to check a credential). M only ever lives in guarded memory; what the store
/// does with it (the envelope's key pair, the seal of Kstore) is `MethodEnvelope+Sealing`'s.
/// The API obtains every method through `MethodResolver`.
protocol MethodProvider: Sendable {
    /// Plugin id, e.g. `passphrase`: what an envelope records as its `pluginId`.
    var id: String { get }
    /// It needs hardware present to unlock (a security key, a smart card).
    var needsDevice: Bool { get }
    /// A store may hold at most one method of it.
    var isOnePerStore: Bool { get }
    /// Enrollment tunes a cost to this machine on any secret (`benchmark` can run it).
    var calibrates: Bool { get }

    /// Nil when the method can work here, else why not. Never prompts.
    func probe() -> String?
    /// Runs the enrollment ceremony with `options` (each name once, in order) for the store and
    /// label `about` names: the public parameters, M, and the files the host opened for it.
    func enroll(options: [(String, String)], interaction: any KeybayInteraction,
                about: MethodCallContext) throws -> (params: [UInt8], secret: SecureBytes, grants: [FileGrant])
    /// Runs the unlock ceremony for `params`: M.
    func unwrap(params: [UInt8], interaction: any KeybayInteraction, about: MethodCallContext) throws -> SecureBytes
    /// `unwrap` for a check of the credential (`auth.verify`): the same M, through the method's
    /// own verify where it has one.
    func verify(params: [UInt8], interaction: any KeybayInteraction, about: MethodCallContext) throws -> SecureBytes
    /// One line describing `params`, for listings. Never prompts.
    func describe(params: [UInt8]) throws -> String
}
