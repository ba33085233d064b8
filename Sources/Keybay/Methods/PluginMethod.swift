// SPDX-License-Identifier: Apache-2.0
/// A method served by a method plugin, as `PluginRoot` serves a root: the plugin's operations
/// (`MethodPlugin.swift`) under the method interface.
struct PluginMethod: MethodProvider {
    let plugin: LoadedPlugin

    var id: String { plugin.id }
    var needsDevice: Bool { plugin.needsDevice }
    var isOnePerStore: Bool { plugin.isOnePerStore }
    var calibrates: Bool { plugin.calibrates }

    func probe() -> String? { plugin.probe() }

    func enroll(options: [(String, String)], interaction: any KeybayInteraction,
                about: MethodCallContext) throws -> (params: [UInt8], secret: SecureBytes, grants: [FileGrant]) {
        try plugin.enroll(options: options, interaction: interaction, about: about)
    }

    func unwrap(params: [UInt8], interaction: any KeybayInteraction, about: MethodCallContext) throws -> SecureBytes {
        try plugin.unwrap(params: params, interaction: interaction, about: about)
    }

    func verify(params: [UInt8], interaction: any KeybayInteraction, about: MethodCallContext) throws -> SecureBytes {
        try plugin.unwrap(params: params, interaction: interaction, about: about, forVerification: true)
    }

    func describe(params: [UInt8]) throws -> String { try plugin.describe(params: params) }
}
