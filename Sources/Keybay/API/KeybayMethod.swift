/// One enrolled unlock method, as listed without calling any plugin.
public struct KeybayMethod: Sendable, Equatable {
    /// 16 random bytes as 32 lowercase hex characters.
    public let id: String
    /// The plugin that unlocks it, e.g. `passphrase`.
    public let plugin: String
    public let label: String

    /// Labels: 1–64 bytes of UTF-8 without control characters.
    public static func isValidLabel(_ label: String) -> Bool { MethodNames.isValidLabel(label) }

    init(_ method: MethodEnvelope.Public) {
        id = hexString(method.methodId)
        plugin = method.pluginId
        label = method.label
    }
}
