// SPDX-License-Identifier: Apache-2.0
/// The storage domain binds a store to its application identity, the identity's assurance,
/// the root profile and the store's location relative to its base directory (never an absolute
/// path, which may change):
/// `SHA-256("keybay:v2:storage-domain" | 0x00 | LP(identity) | LP([assurance]) | LP(profile) | LP(location))`.
enum StorageDomain {
    static let label = "keybay:v2:storage-domain"
    /// The identity is declared by the host's configuration; nothing attests it.
    static let assuranceHostDeclared: UInt8 = 1
    /// The identity is the sandbox's own (Flatpak's `[Application] name=`, snap's
    /// `SNAP_INSTANCE_NAME`), which the root checked before answering: the sandbox root
    /// (`KeybayConfiguration.sandboxRoot`), which works only inside a sandbox and only for the
    /// sandbox's application. Other roots keep `assuranceHostDeclared` inside a sandbox too:
    /// their stores were made before Keybay looked at the sandbox, and another byte would give
    /// them another domain (they would no longer open).
    static let assuranceSandboxAttested: UInt8 = 2

    static func derive(identity: String, assurance: UInt8 = assuranceHostDeclared, profile: String, location: String) -> [UInt8] {
        SHA256.hash(transcript(label, [Array(identity.utf8), [assurance], Array(profile.utf8), Array(location.utf8)]))
    }
}
