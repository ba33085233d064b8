// SPDX-License-Identifier: Apache-2.0
/// Labels, and methods as a store lists them (the struct itself is declared in
/// API/Vocabulary/KeybayMethod.swift, below every layer).
extension KeybayMethod {
    /// Labels an enrollment may give: 1–64 bytes of UTF-8 without control characters (C0, DEL,
    /// C1), bidirectional marks, overrides and isolates (U+061C, U+200E–U+200F, U+202A–U+202E,
    /// U+2066–U+2069) or line and paragraph separators (U+2028–U+2029).
    public static func isValidLabel(_ label: String) -> Bool { MethodNames.isValidNewLabel(label) }

    /// Whether `scalar` is one of the characters a label may not hold, which a program showing
    /// stored text should escape (a label written by an older version may hold them).
    public static func misleadsWhenShown(_ scalar: Unicode.Scalar) -> Bool { MethodNames.misleadsWhenShown(scalar) }

    /// Refuses a label an enrollment may not give as invalid input (exit 2 in the CLI).
    ///
    /// - Parameter label: The label to check.
    /// - Throws: `.invalidArgument` when ``isValidLabel(_:)`` is false.
    public static func validateLabel(_ label: String) throws {
        guard isValidLabel(label) else {
            throw KeybayError(.invalidArgument, "invalid label: use 1–64 bytes of text without control characters or bidirectional overrides")
                .with(reason: "invalid-label")
        }
    }

    init(_ method: MethodEnvelope.Public) {
        self.init(id: hexString(method.methodId), plugin: method.pluginId, label: method.label)
    }

    /// This method with ``needsDevice`` read from its plugin's descriptor (loaded, never probed
    /// or run); unchanged when the plugin cannot be loaded.
    /// - Parameter search: Where its plugin is looked for (the store's configuration's).
    /// - Returns: The method, with ``needsDevice`` filled in where the plugin could be read.
    public func describingDevice(search: KeybayPluginSearch) -> KeybayMethod {
        var m = self
        m.needsDevice = (try? MethodResolver(search: search).method(plugin))?.needsDevice
        return m
    }
}

/// An enrolled method with its plugin's one-line description of its parameters, or why there is
/// none (the plugin is missing, refused, or failed to describe them).
public struct KeybayMethodDescription: Sendable {
    /// The enrolled method.
    public let method: KeybayMethod
    /// The plugin's one-line description of its parameters, or nil when `failure` says why not.
    public let description: String?
    /// Why there is no description (the plugin is missing, was refused, or failed); nil when
    /// there is one.
    public let failure: KeybayError?
}
