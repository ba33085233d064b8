// SPDX-License-Identifier: Apache-2.0
/// Where each part of a store file lies, found by strict decoding before any decryption:
/// `bootstrap | sealedPackage | recordFrame ... | sealedManifest | sealedManifestLength:u32`.
struct StoreLayout {
    let bootstrap: Bootstrap
    let sealedPackage: Range<Int>
    let frames: Range<Int>
    let sealedManifest: Range<Int>

    static let maxSealedManifestBytes = 4 + Suite1.maxRecords * (4 + Suite1.maxKeyBytes + 4 + 32) + XChaCha20Poly1305.overhead

    /// The largest file that can hold a valid store: the 16 MiB a writer keeps (bootstrap
    /// included) plus the largest sealed package of any suite.
    static let maxTotalBytes = Suite1.maxFileBytes + StoreSuite.methods.maxSealedPackageBytes

    static func decode(_ file: [UInt8], context: String) throws -> StoreLayout {
        guard file.count <= maxTotalBytes else {
            throw KeybayError(.malformed, "\(context): file is \(file.count) bytes, limit \(maxTotalBytes)").with(reason: "file-too-large")
        }
        var r = ByteReader(file, context: context)
        let bootstrap = try Bootstrap.decode(&r)
        let packageStart = r.offset
        _ = try r.take(bootstrap.sealedPackageLength, "sealed package")
        let framesStart = r.offset
        guard file.count - bootstrap.sealedPackageLength <= Suite1.maxFileBytes else {
            throw r.malformed("file is \(file.count) bytes, more than 16 MiB besides its \(bootstrap.sealedPackageLength)-byte sealed package")
                .with(reason: "content-too-large")
        }
        guard r.remaining >= 4 else { throw r.malformed("truncated: no sealed manifest length") }
        let manifestLength = file[(file.count - 4)...].reduce(0) { $0 << 8 | Int($1) }
        guard manifestLength > XChaCha20Poly1305.overhead, manifestLength <= maxSealedManifestBytes,
              manifestLength <= r.remaining - 4 else {
            throw r.malformed("sealed manifest length \(manifestLength) out of range")
        }
        let manifestStart = file.count - 4 - manifestLength
        return StoreLayout(bootstrap: bootstrap,
                           sealedPackage: packageStart..<framesStart,
                           frames: framesStart..<manifestStart,
                           sealedManifest: manifestStart..<(file.count - 4))
    }
}
