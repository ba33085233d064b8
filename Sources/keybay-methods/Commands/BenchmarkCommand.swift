// SPDX-License-Identifier: Apache-2.0
import Keybay

/// `benchmark [PLUGIN]`: a plugin that calibrates a cost (the passphrase's Argon2id by default).
extension Command {
    static func benchmark(_ c: Context) throws -> Int32 {
        let a = c.a
        try a.expect(["PLUGIN"], optional: 1)
        let plugin = a.positionals.first ?? "passphrase"
        let interaction = CommandInteraction(descriptors: SecretDescriptors(), noInput: true)
        let result = try KeybayPlugins.benchmark(plugin: plugin, options: a.options, search: search(a), interaction: interaction)
        let ms = Int(result.unlockSeconds * 1000)
        a.json ? Output.line(JSON.render(.object([("plugin", .string(plugin)), ("parameters", .string(result.parameters)),
                                                  ("unlockMilliseconds", .number(ms))])))
               : Output.line("\(plugin): \(result.parameters); one unlock takes \(ms) ms here")
        return Exit.success
    }
}
