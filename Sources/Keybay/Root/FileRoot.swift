import Glibc

/// `file-root`, the TPM-less platform root: 32 random bytes in a private file under
/// `$XDG_STATE_HOME/keybay/<app>/`, apart from the store under `$XDG_DATA_HOME`, so a copy of
/// the data directory alone opens nothing. Any process of the same user can read it: it
/// protects against copied files, backups and other users, not against same-user malware.
///
/// Root file (38 bytes): `"KBFR" | version:u16 (=1) | root(32)`.
/// Provider state (32 bytes): `SHA-256("keybay:v2:s1:provider-state:file-root" | 0x00 | domain | root)`.
struct FileRoot: RootProvider {
    static let pluginId = "file-root"
    static let fileName = "file-root.key"
    static let stagingName = "file-root.key.stage"
    static let magic: [UInt8] = Array("KBFR".utf8)
    static let version: UInt16 = 1
    static let fileBytes = 4 + 2 + 32
    static let providerStateLabel = "keybay:v2:s1:provider-state:file-root"

    let stateHome: String
    let applicationID: String

    var id: String { Self.pluginId }
    var directoryComponents: [String] { ["keybay", applicationID] }
    var location: String { stateHome + "/keybay/" + applicationID + "/" + Self.fileName }

    private func directory(create: Bool) throws -> PrivateDirectory? {
        try PrivateDirectory.open(base: stateHome, components: directoryComponents, create: create)
    }

    func exists() throws -> Bool {
        guard let dir = try directory(create: false) else { return false }
        return try dir.contains(Self.fileName)
    }

    func create(domain: [UInt8]) throws -> [UInt8] {
        let dir = try directory(create: true)!
        let root = SecureBytes(randomCount: 32)
        var file = ByteWriter(capacity: Self.fileBytes)
        file.raw(Self.magic)
        file.u16(Self.version)
        root.withUnsafeBytes { file.raw($0) }
        var bytes = file.bytes
        defer { Sodium.wipe(&bytes) }
        try dir.createExclusive(Self.fileName, stagingName: Self.stagingName, with: bytes)
        return Self.providerState(root: root, domain: domain)
    }

    func seal(_ plaintext: SecureBytes, aad: [UInt8], providerState: [UInt8], domain: [UInt8]) throws -> [UInt8] {
        let root = try loadMatching(providerState: providerState, domain: domain)
        return plaintext.withUnsafeBytes { XChaCha20Poly1305.seal(key: root, plaintext: $0, aad: aad) }
    }

    func open(_ sealed: ArraySlice<UInt8>, aad: [UInt8], providerState: [UInt8], domain: [UInt8]) throws -> SecureBytes {
        let root = try loadMatching(providerState: providerState, domain: domain)
        let opened = sealed.withUnsafeBytes { XChaCha20Poly1305.openSecure(key: root, sealed: $0, aad: aad) }
        guard let opened else {
            throw KeybayError(.integrity, "the store's key package failed authentication with the platform root \(location) (the store file was modified)")
        }
        return opened
    }

    func reset() throws {
        guard let dir = try directory(create: false) else { return }
        try dir.removeIfPresent(Self.stagingName)
        try dir.removeIfPresent(Self.fileName)
        try dir.sync()
    }

    /// Reads the root and checks it against the store's provider state before any decryption.
    private func loadMatching(providerState: [UInt8], domain: [UInt8]) throws -> SecureBytes {
        guard let dir = try directory(create: false),
              let read = try dir.read(Self.fileName, maxBytes: Self.fileBytes * 2) else {
            throw KeybayError(.platformKeyInvalidated, "platform key invalidated: the root file \(location) is missing")
        }
        var bytes = read.bytes
        defer { Sodium.wipe(&bytes) }
        guard bytes.count == Self.fileBytes, bytes[0..<4].elementsEqual(Self.magic), bytes[4] == 0, bytes[5] == UInt8(Self.version) else {
            throw KeybayError(.platformKeyInvalidated, "platform key invalidated: the root file \(location) is not a version-1 file-root key (\(bytes.count) bytes)")
        }
        let root = SecureBytes(copying: bytes[6...])
        guard Sodium.constantTimeEqual(Self.providerState(root: root, domain: domain), providerState) else {
            throw KeybayError(.platformKeyInvalidated, "platform key invalidated: the root file \(location) does not belong to this store")
        }
        return root
    }

    static func providerState(root: SecureBytes, domain: [UInt8]) -> [UInt8] {
        var input = Array(providerStateLabel.utf8) + [0] + domain
        root.withUnsafeBytes { input.append(contentsOf: $0) }
        defer { Sodium.wipe(&input) }
        return SHA256.hash(input)
    }
}
