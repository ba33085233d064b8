// SPDX-License-Identifier: Apache-2.0
import CSodium
import Keybay

/// `root reseal`: the root brought back with the recovery key `init` printed (docs/cli.md).
extension Command {
    /// `root reseal --recovery-key-fd N`: the root sealed again to the PCRs now in effect with
    /// its recovery key (read from descriptor N, else asked for).
    static func rootReseal(_ c: Context) throws -> Int32 {
        let a = c.a
        try a.expect(["reseal"])
        let config = try configuration(a)
        let key: SecureBytes
        if let fd = a.secretFDs.recoveryKey {
            key = try c.interaction.descriptorSecret(fd, what: "root recovery key")
        } else {
            key = try askRootRecoveryKey(c.interaction)
        }
        try KeybayStore.resealRoot(config, recoveryKey: key, interaction: c.interaction)
        let check = try KeybayStore.checkRoot(config)
        a.json ? Output.line(JSON.render(.object([("resealed", .bool(true))] + (check.map { [("policy", policyJSON($0))] } ?? []))))
               : Output.line("re-sealed the root of \(config.storePath)" + (check.map { ": " + policyText($0) } ?? ""))
        return Exit.success
    }

    /// The recovery key from the terminal or a pinentry (refused with --no-input), read into
    /// guarded memory.
    private static func askRootRecoveryKey(_ interaction: CommandInteraction) throws -> SecureBytes {
        let capacity = 257
        guard let raw = sodium_malloc(capacity) else { throw KeybayError(.io, "out of memory") }
        defer { sodium_memzero(raw, capacity); sodium_free(raw) }
        let request = KeybaySecretRequest(kind: .recoveryKey, prompt: "Root recovery key", isConfirmation: false)
        let n = try interaction.askSecret(request, into: UnsafeMutableRawBufferPointer(start: raw, count: capacity))
        return SecureBytes(copying: UnsafeRawBufferPointer(start: raw, count: n))
    }
}
