/// One enrolled unlock method, as listed without calling any plugin.
public struct KeybayMethod: Sendable, Equatable {
    /// 16 random bytes as 32 lowercase hex characters.
    public let id: String
    /// The plugin that unlocks it, e.g. `passphrase`.
    public let plugin: String
    public let label: String

    /// Labels an enrollment may give: 1–64 bytes of UTF-8 without control characters (C0, DEL,
    /// C1), bidirectional marks, overrides and isolates (U+061C, U+200E–U+200F, U+202A–U+202E,
    /// U+2066–U+2069) or line and paragraph separators (U+2028–U+2029).
    public static func isValidLabel(_ label: String) -> Bool { MethodNames.isValidNewLabel(label) }

    /// Whether `scalar` is one of the characters a label may not hold, which a program showing
    /// stored text should escape (a label written by an older version may hold them).
    public static func misleadsWhenShown(_ scalar: Unicode.Scalar) -> Bool { MethodNames.misleadsWhenShown(scalar) }

    /// Refuses a label an enrollment may not give as invalid input (exit 2 in the CLI).
    public static func validateLabel(_ label: String) throws {
        guard isValidLabel(label) else {
            throw KeybayError(.invalidArgument, "invalid label: use 1–64 bytes of text without control characters or bidirectional overrides")
        }
    }

    init(_ method: MethodEnvelope.Public) {
        id = hexString(method.methodId)
        plugin = method.pluginId
        label = method.label
    }
}

/// An enrolled method with its plugin's one-line description of its parameters, or why there is
/// none (the plugin is missing, refused, or failed to describe them).
public struct KeybayMethodDescription: Sendable {
    public let method: KeybayMethod
    public let description: String?
    public let failure: KeybayError?
}
