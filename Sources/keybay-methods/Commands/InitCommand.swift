// SPDX-License-Identifier: Apache-2.0
import Keybay

/// `init [--opt NAME=VALUE ...] [--keep-in-backups]`: a new platform-only store, and the recovery
/// key its root showed, if it showed one.
extension Command {
    static func initialize(_ c: Context) throws -> Int32 {
        let a = c.a
        try a.expect([])
        var config = try configuration(a)
        config.rootOptions = a.options
        config.excludeFromBackups = !a.flags.contains("--keep-in-backups")
        let unconfirmed = try tookEffect { try KeybayStore.initialize(config, interaction: c.interaction).close() }
        let root = try KeybayStore.status(config).rootPlugin
        let warnings = initWarnings(config)
        let object = JSON.render(.object([("initialized", .bool(true)), ("storePath", .string(config.storePath)),
                                          ("rootPlugin", .string(root))] + (warnings.isEmpty ? [] : [("warnings", .array(warnings))])))
        printInitialized(object, text: "initialized a platform-only store at \(config.storePath) on the root \(root)", c)
        return try succeeded(unless: unconfirmed)
    }

    /// `init`'s result, then the recovery key the root showed while it was created (tpm2's
    /// `recovery=yes`), as `enroll recovery` prints one: text, and the QR code on a terminal;
    /// `--json` adds `recoveryKey`.
    static func printInitialized(_ object: String, text: String, _ c: Context) {
        guard let shown = c.interaction.shownByRoot else {
            c.a.json ? Output.line(object) : Output.line(text)
            return
        }
        if c.a.json { ShownSecretOutput.printJSON(object, adding: shown) } else { Output.line(text); ShownSecretOutput.printText(shown) }
        Output.closeStandardOutput()
        if let failure = Output.standardOutputFailure {
            Output.error("cannot write standard output: \(failure); the root's recovery key may not have been shown in full: "
                + "the store works, but make the root again (reset, init) before relying on its recovery")
        }
    }
}
