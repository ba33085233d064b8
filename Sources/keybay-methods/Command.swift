// SPDX-License-Identifier: Apache-2.0
import Keybay

/// The command the arguments name, run from the table (`CommandTable`); each command is in
/// `Commands/`, in a file named after it.
enum Command {
    /// Runs the command; if another process rotated the store key (enrolled or removed a method)
    /// between our unlock and our write, unlocks again and retries, at most twice. `set` retries
    /// too when the store vanished meanwhile (a racing `reset`): it creates one when there is none.
    /// Standard input and the secret descriptors are read once, before the first attempt: a
    /// retry finds them at EOF.
    static func run(_ a: Arguments) throws -> Int32 {
        try a.secretFDs.checkOpen()
        let interaction = CommandInteraction(descriptors: a.secretFDs, noInput: a.noInput)
        // `change` asks for the old secret and a new one: they never come from the same input.
        interaction.newFromUnlockDescriptors = a.command != "change"
        let standardInput = a.command == "set" && a.flags.contains("--stdin") ? try readStandardInput(limit: KeybayRecordKey.maxValueBytes) : nil
        var attempt = 0, vanished = 0
        while true {
            do {
                return try runOnce(a, interaction: interaction, standardInput: standardInput)
            } catch let e as KeybayError where KeybayOpenPolicy.shouldOpenAgain(after: e, retriesSoFar: attempt)
                        || (attempt < KeybayOpenPolicy.keyChangeRetries && e.code == .authenticationRequired && e.methods == nil) {
                // `.authenticationRequired` with --method: the agent stopped serving the store
                // between the open and the operation (without --method, the store may also have
                // become protected meanwhile). The retry opens it as it would without the agent.
                attempt += 1
                // Said, because on a terminal the retry asks for the secret again.
                interaction.message("keybay-methods: " + (e.code == .keyChanged ? "another process changed the store's unlock methods"
                                                                               : "the store became protected, or its unlock in the agent ended,") + " meanwhile; trying again", level: .info)
            } catch let e as KeybayError where vanished < 50 && e.code == .storeNotFound && a.command == "set" && a.method == nil {
                // Each retry opens (or creates) the store afresh; only a reset looping faster
                // than we can write exhausts them.
                vanished += 1
            }
        }
    }

    /// One command, given the secrets read beforehand.
    struct Context {
        let a: Arguments
        let interaction: CommandInteraction
        let standardInput: [UInt8]?
    }

    static func runOnce(_ a: Arguments, interaction: CommandInteraction, standardInput: [UInt8]?) throws -> Int32 {
        if a.help, a.command == "enroll", let plugin = a.positionals.first { return try enrollHelp(a, plugin: plugin) }
        if a.version && !a.help {
            a.json ? Output.line(JSON.render(.object([("version", .string(KeybayVersion.release)), ("pluginABI", .number(KeybayVersion.pluginABI))])))
                   : Output.line("keybay-methods \(KeybayVersion.release) (plugin ABI \(KeybayVersion.pluginABI))")
            return Exit.success
        }
        guard let command = a.command, !a.help else {
            Output.out(Usage.text + "\n")
            return a.command == nil && !a.help ? Exit.usage : Exit.success
        }
        guard let spec = CommandTable.named(command) else { throw Arguments.UsageError(message: "unknown command '\(command)'") }
        return try spec.run(Context(a: a, interaction: interaction, standardInput: standardInput))
    }

    /// `help`: the usage, whatever follows.
    static func help(_ c: Context) throws -> Int32 {
        Output.out(Usage.text + "\n")
        return Exit.success
    }
}
