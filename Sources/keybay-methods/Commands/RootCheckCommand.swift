// SPDX-License-Identifier: Apache-2.0
import Keybay

/// `root check`, the `policy:` line of `status` and `init`'s warning about literal PCRs: the
/// root's platform policy as it reports it (docs/cli.md).
extension Command {
    /// `root check`: exit 0 when the root would open now; 1 with `pcr-mismatch` and `pcrs`
    /// naming the PCRs that changed when it would not. Unseals nothing, writes nothing.
    static func rootCheck(_ c: Context) throws -> Int32 {
        let a = c.a
        try a.expect(["check"])
        let config = try configuration(a)
        guard let check = try KeybayStore.checkRoot(config) else {
            a.json ? Output.line(JSON.render(.object([("opens", .bool(true))])))
                   : Output.line("the root \(try KeybayStore.status(config).rootPlugin) has no platform policy to check")
            return Exit.success
        }
        if let mismatch = check.mismatchError { throw mismatch }
        a.json ? Output.line(JSON.render(.object([("opens", .bool(true)), ("policy", policyJSON(check))])))
               : Output.line("the root would open: \(policyText(check))")
        return Exit.success
    }

    /// `policy`, `pcrs` (bound), `key` (a signed policy's key fingerprint), `recovery`,
    /// `satisfied`, `differingPcrs`.
    static func policyJSON(_ check: KeybayRootCheck) -> JSON.Value {
        .object([("policy", .string(check.policy)), ("pcrs", .array(check.boundPCRs.map { .number($0) }))]
                + (check.report["key"].map { [("key", .string($0))] } ?? [])
                + [("recovery", .bool(check.recoveryEnrolled)), ("satisfied", .bool(check.opens)),
                   ("differingPcrs", .array(check.differingPCRs.map { .number($0) }))])
    }

    static func policyText(_ check: KeybayRootCheck) -> String {
        let pcrs = check.boundPCRs.map(String.init).joined(separator: ",")
        let policy = switch check.policy {
        case "none": "none (not bound to PCRs)"
        case "pcrs": "literal PCRs \(pcrs) (SHA-256)"
        case "signed": "PCRs \(pcrs) (SHA-256) as signed by the key \(check.report["key"] ?? "?")"
        default: "\(check.policy) PCRs \(pcrs)"
        }
        let now = check.opens ? "satisfied now" : "NOT satisfied now: PCR \(check.differingPCRs.map(String.init).joined(separator: ",")) changed"
        return "\(policy), \(now); root recovery \(check.recoveryEnrolled ? "enrolled" : "not enrolled")"
    }

    /// The policy for `status` of a store that exists: its check, or why there is none (a TPM
    /// that cannot be reached now does not fail `status`).
    static func statusPolicy(_ config: KeybayConfiguration, _ s: KeybayStatus) -> (text: String, json: JSON.Value)? {
        guard s.state == .platformOnly || s.state == .protected else { return nil }
        do {
            guard let check = try KeybayStore.checkRoot(config) else { return nil }
            return (policyText(check), policyJSON(check))
        } catch let e as KeybayError {
            return ("unknown (\(e.message))", .object([("error", .object([("code", .string(e.code.rawValue))] + Output.errorFields(e)))]))
        } catch {
            return ("unknown (\(error))", .object([("error", .object([("code", .string("internal"))]))]))
        }
    }

    /// After `init`: literal PCRs without root recovery lose the store at the first change of a
    /// bound PCR. Said on standard error, and returned for `--json`'s `warnings`.
    static func initWarnings(_ config: KeybayConfiguration) -> [JSON.Value] {
        guard let check = try? KeybayStore.checkRoot(config), check.policy == "pcrs", !check.recoveryEnrolled else { return [] }
        let pcrs = check.boundPCRs.map(String.init).joined(separator: ",")
        let message = "the root is sealed to the current values of PCR \(pcrs) with no root recovery: a firmware, Secure Boot (dbx), boot loader "
            + "or kernel update that changes one loses the store; use --opt recovery=yes, or a signed policy (--opt pcr-public-key=PATH)"
        Output.error("warning: " + message)
        return [.object([("reason", .string("pcr-change-loses-store")), ("pcrs", .array(check.boundPCRs.map { .number($0) })),
                         ("message", .string(message))])]
    }
}
