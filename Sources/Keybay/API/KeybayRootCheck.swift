// SPDX-License-Identifier: Apache-2.0
/// Whether a store's platform root would open now, and its platform policy, as the root reports
/// them without unsealing anything (`keybay-methods root check`, `status`).
public struct KeybayRootCheck: Sendable, Equatable {
    /// The root's platform policy: `none`, `pcrs` (literal PCR values) or `signed` (a signed PCR policy).
    public let policy: String
    /// The PCRs (0–23, ascending, SHA-256 bank) the policy binds; empty for `none`.
    public let boundPCRs: [Int]
    /// Whether root recovery (a second sealed copy opened with a recovery secret) is enrolled.
    public let recoveryEnrolled: Bool
    /// The bound PCRs whose values now keep the root from opening; empty when it would open.
    public let differingPCRs: [Int]
    /// Every word of the root's report (`NAME=VALUE`, docs/plugins.md "Root check"), for what
    /// the fields above do not carry.
    public let report: [String: String]

    /// True when the PCRs now in effect satisfy the policy (the root would open).
    public var opens: Bool { differingPCRs.isEmpty }

    /// A check's result from the root's report line and the PCR mask it returned.
    init(report line: String, differing mask: UInt32) {
        var words: [String: String] = [:]
        for word in line.split(separator: " ") {
            guard let eq = word.firstIndex(of: "=") else { continue }
            words[String(word[..<eq])] = String(word[word.index(after: eq)...])
        }
        report = words
        policy = words["policy"] ?? "none"
        boundPCRs = (words["pcrs"] ?? "").split(separator: ",").compactMap { Int($0) }
        recoveryEnrolled = words["root-recovery"] == "yes"
        differingPCRs = ErrorDetail.pcrList(mask)
    }

    /// The `pcr-mismatch` error `root check` and the API report for a check that would not
    /// open: `.platformKeyInvalidated` with `pcrs` naming the PCRs that differ.
    public var mismatchError: KeybayError? {
        guard !opens else { return nil }
        let list = differingPCRs.map(String.init).joined(separator: ",")
        return KeybayError(.platformKeyInvalidated, "platform key invalidated: PCR \(list) (SHA-256) no longer holds the value the root was sealed to")
            .with(reason: "pcr-mismatch", pcrs: differingPCRs)
    }
}

extension KeybayStore {
    /// Checks, without unsealing anything, whether the store's root would open now: the root
    /// file, the object loaded in this TPM, its counter and the bound PCRs' values against its
    /// policy. Takes no lock and writes nothing.
    /// - Parameter configuration: Which application's store; it must exist.
    /// - Returns: The root's policy and the PCRs that keep it from opening (none when it would);
    ///   nil for a root that offers no check (it has no platform policy: every root but `tpm2`).
    /// - Throws: `.storeNotFound` without a store; the root's failures for any cause but a PCR
    ///   change (another machine's TPM, a missing counter, an unreachable TPM).
    public static func checkRoot(_ configuration: KeybayConfiguration) throws -> KeybayRootCheck? {
        let engine = try StoreEngine(configuration.settings)
        guard let found = engine.found else {
            throw KeybayError(.storeNotFound, "no store at \(engine.storePath)").with(path: engine.storePath)
        }
        var reader = ByteReader(found.bytes, context: engine.storePath)
        let bootstrap = try Bootstrap.decode(&reader)
        return try engine.root.check(providerState: bootstrap.providerState).map { KeybayRootCheck(report: $0.report, differing: $0.differingPCRs) }
    }
}
