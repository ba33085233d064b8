// SPDX-License-Identifier: Apache-2.0
/// `bootstrapCore = "KBV2" | suite:u16 | providerStateLength:u32 | providerState`
/// `bootstrap     = bootstrapCore | sealedPackageLength:u32`
struct Bootstrap: Equatable {
    let suite: StoreSuite
    let providerState: [UInt8]
    let sealedPackageLength: Int

    var core: [UInt8] {
        var w = ByteWriter(capacity: 10 + providerState.count)
        w.raw(Suite1.magic)
        w.u16(suite.rawValue)
        w.lengthPrefixed(providerState)
        return w.bytes
    }

    var bytes: [UInt8] {
        var w = ByteWriter()
        w.raw(core)
        w.u32(UInt32(sealedPackageLength))
        return w.bytes
    }

    /// The longest bootstrap: magic, suite, the longest provider state with its length, and the
    /// sealed package's length.
    static let maxBytes = 4 + 2 + 4 + Suite1.maxProviderStateBytes + 4

    /// Reads and checks the bootstrap; leaves `reader` at the sealed package.
    static func decode(_ reader: inout ByteReader) throws -> Bootstrap {
        let magic = try reader.take(4, "magic")
        guard magic.elementsEqual(Suite1.magic) else {
            throw reader.malformed("not a Keybay V2 store (bad magic)")
        }
        let number = try reader.u16("suite")
        guard let suite = StoreSuite(rawValue: number) else {
            throw KeybayError(.unsupported, "\(reader.context): suite \(number) is not supported by this version")
        }
        let state = try reader.lengthPrefixed("provider state", maxLength: Suite1.maxProviderStateBytes)
        let packageLength = Int(try reader.u32("sealed package length"))
        guard packageLength > XChaCha20Poly1305.overhead, packageLength <= suite.maxSealedPackageBytes else {
            throw reader.malformed("sealed package length \(packageLength) out of range")
        }
        return Bootstrap(suite: suite, providerState: Array(state), sealedPackageLength: packageLength)
    }
}
