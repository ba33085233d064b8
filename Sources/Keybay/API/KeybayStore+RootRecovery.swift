// SPDX-License-Identifier: Apache-2.0
extension KeybayStore {
    /// Root recovery: opens the root's second sealed copy with its recovery key (made by
    /// `init --opt recovery=yes` on the `tpm2` root) and seals the root again to the PCR values
    /// now in effect, in one atomic step under the store's exclusive lock; then checks that the
    /// root opens the store. Records and methods are untouched (the store file is not
    /// rewritten). A failure or a kill at any point leaves the old root or the new one, each
    /// opening the store.
    ///
    /// - Parameters:
    ///   - configuration: Which application's store; it must exist.
    ///   - recoveryKey: The recovery key as the user typed it (spaces, dashes and case do not
    ///     matter); never kept.
    ///   - interaction: Who the root may ask or tell.
    /// - Throws: `.wrongSecret` (reason `typo-checksum`, `typo-character`, `typo-length`,
    ///   `too-long` before the TPM is asked; `wrong-recovery-key` with `triesLeft`, counted by the
    ///   TPM's lockout); `.locked` (reason `lockout`); `.unsupported` (reason `no-root-recovery`)
    ///   for a root without recovery; `.storeNotFound`; `.platformKeyInvalidated` (another
    ///   machine's TPM); `.rootUnavailable`; `.io`.
    public static func resealRoot(_ configuration: KeybayConfiguration, recoveryKey: SecureBytes,
                                  interaction: any KeybayInteraction = NonInteractive()) throws {
        try StoreEngine(configuration.settings, interaction: interaction).resealRoot(recoverySecret: recoveryKey)
    }
}
