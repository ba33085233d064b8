/// The storage domain binds a store to its application identity, the identity's assurance,
/// the root profile and the store's location relative to its base directory (never an absolute
/// path, which may change):
/// `SHA-256("keybay:v2:storage-domain" | 0x00 | LP(identity) | LP([assurance]) | LP(profile) | LP(location))`.
enum StorageDomain {
    static let label = "keybay:v2:storage-domain"
    /// The identity is declared by the host's configuration; nothing on Linux attests it.
    static let assuranceHostDeclared: UInt8 = 1

    static func derive(identity: String, assurance: UInt8 = assuranceHostDeclared, profile: String, location: String) -> [UInt8] {
        SHA256.hash(transcript(label, [Array(identity.utf8), [assurance], Array(profile.utf8), Array(location.utf8)]))
    }
}
