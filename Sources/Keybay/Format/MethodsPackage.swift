// SPDX-License-Identifier: Apache-2.0
/// Suite-2 package plaintext (sealed by the root like the platform package):
/// `storeId(16) | epoch:u64 | policy:u8 (1 or 2) | count:u8 (1…32) | envelope ...`
/// `envelope = methodId(16) | LP(pluginId) | LP(label) | LP(params) [| LP(grants), policy 2] | salt(16) | publicKey(32) | enc(32) | sealedKey(48)`
/// `grants = (LP(option) | LP(path)) ...`: the files the host opens for the method (open_file).
/// Policy 2 is written only when some method has a grant, so a store without one reads as before.
///
/// The bytes only: how an envelope is sealed to its method and opened with its secret is the
/// methods layer's (Methods/MethodEnvelope+Sealing.swift).
struct MethodEnvelope: Sendable, Equatable {
    static let idBytes = 16
    static let saltBytes = 16
    static let publicKeyBytes = 32
    static let encBytes = 32
    static let sealedKeyBytes = Suite1.storeKeyBytes + 16
    static let maxPluginIdBytes = 64
    static let maxLabelBytes = 64
    static let maxParamsBytes = 4096

    /// The method's public description: everything but the sealed key.
    struct Public: Sendable, Equatable {
        let methodId: [UInt8]
        let pluginId: String
        let label: String
        let params: [UInt8]
        let salt: [UInt8]
        let publicKey: [UInt8]
        /// The files the host opens for the method's plugin, as the user named them at enrollment.
        var grants: [FileGrant] = []
    }

    let method: Public
    let enc: [UInt8]
    let sealedKey: [UInt8]
}

struct MethodsPackage: Sendable {
    static let policyMethods: UInt8 = 1
    /// Methods whose envelopes carry the host's file grants.
    static let policyMethodsWithGrants: UInt8 = 2
    static let maxMethods = 32

    let storeId: [UInt8]
    let epoch: UInt64
    let envelopes: [MethodEnvelope]

    func encode() -> SecureBytes {
        var w = ByteWriter()
        w.raw(storeId)
        w.u64(epoch)
        let withGrants = envelopes.contains { !$0.method.grants.isEmpty }
        w.u8(withGrants ? Self.policyMethodsWithGrants : Self.policyMethods)
        w.u8(UInt8(envelopes.count))
        for e in envelopes {
            w.raw(e.method.methodId)
            w.lengthPrefixed(Array(e.method.pluginId.utf8))
            w.lengthPrefixed(Array(e.method.label.utf8))
            w.lengthPrefixed(e.method.params)
            if withGrants {
                var grants = ByteWriter()
                for g in e.method.grants {
                    grants.lengthPrefixed(Array(g.option.utf8))
                    grants.lengthPrefixed(Array(g.path.utf8))
                }
                w.lengthPrefixed(grants.bytes)
            }
            w.raw(e.method.salt)
            w.raw(e.method.publicKey)
            w.raw(e.enc)
            w.raw(e.sealedKey)
        }
        // Nothing secret in here (Kstore is sealed per method), but the root opens it into
        // guarded memory like any package.
        return SecureBytes(copying: w.bytes)
    }

    static func decode(_ plaintext: SecureBytes, context: String) throws -> MethodsPackage {
        let bytes = plaintext.withUnsafeBytes { Array($0) }
        var r = ByteReader(bytes, context: "\(context): methods package")
        let storeId = Array(try r.take(Suite1.storeIdBytes, "store id"))
        let epoch = try r.u64("epoch")
        guard epoch >= 1, epoch <= Suite1.maxEpoch else { throw r.malformed("epoch out of range") }
        let policy = try r.u8("policy")
        guard policy == policyMethods || policy == policyMethodsWithGrants else {
            throw KeybayError(.unsupported, "\(context): key package policy \(policy) is not supported by this version")
        }
        let count = Int(try r.u8("method count"))
        guard (1...maxMethods).contains(count) else { throw r.malformed("\(count) methods, expected 1…\(maxMethods)") }
        var envelopes: [MethodEnvelope] = []
        for i in 0..<count {
            let id = Array(try r.take(MethodEnvelope.idBytes, "id of method \(i)"))
            let plugin = try r.lengthPrefixed("plugin of method \(i)", maxLength: MethodEnvelope.maxPluginIdBytes)
            let label = try r.lengthPrefixed("label of method \(i)", maxLength: MethodEnvelope.maxLabelBytes)
            let params = try r.lengthPrefixed("parameters of method \(i)", maxLength: MethodEnvelope.maxParamsBytes)
            var grants: [FileGrant] = []
            if policy == policyMethodsWithGrants {
                grants = try decodeGrants(try r.lengthPrefixed("grants of method \(i)", maxLength: FileGrant.maxBytes), method: i, context: r.context)
            }
            let salt = Array(try r.take(MethodEnvelope.saltBytes, "salt of method \(i)"))
            let pk = Array(try r.take(MethodEnvelope.publicKeyBytes, "public key of method \(i)"))
            let enc = Array(try r.take(MethodEnvelope.encBytes, "enc of method \(i)"))
            let sealed = Array(try r.take(MethodEnvelope.sealedKeyBytes, "sealed key of method \(i)"))
            let pluginId = String(decoding: plugin, as: UTF8.self)
            guard MethodNames.isValidPluginID(pluginId) else { throw r.malformed("method \(i) names an invalid plugin id") }
            guard let labelText = String(validating: label, as: UTF8.self), MethodNames.isValidLabel(labelText) else {
                throw r.malformed("method \(i) has an invalid label")
            }
            guard !envelopes.contains(where: { $0.method.methodId == id }) else { throw r.malformed("method id \(hexString(id)) appears twice") }
            envelopes.append(MethodEnvelope(method: .init(methodId: id, pluginId: pluginId, label: labelText, params: Array(params), salt: salt,
                                                          publicKey: pk, grants: grants),
                                            enc: enc, sealedKey: sealed))
        }
        try r.finish()
        // One encoding per package: a writer uses policy 2 only for grants.
        guard policy == policyMethods || envelopes.contains(where: { !$0.method.grants.isEmpty }) else {
            throw r.malformed("policy 2 without a single file grant")
        }
        return MethodsPackage(storeId: storeId, epoch: epoch, envelopes: envelopes)
    }

    /// `grants = (LP(option) | LP(path)) ...`: at most `FileGrant.maxCount`, each well formed
    /// (an option of the plugin-id grammar, an absolute UTF-8 path), no option twice.
    static func decodeGrants(_ bytes: ArraySlice<UInt8>, method i: Int, context: String) throws -> [FileGrant] {
        var r = ByteReader(Array(bytes), context: "\(context): grants of method \(i)")
        var grants: [FileGrant] = []
        while r.remaining > 0 {
            guard grants.count < FileGrant.maxCount else { throw r.malformed("more than \(FileGrant.maxCount) grants") }
            let option = try r.lengthPrefixed("option", maxLength: MethodEnvelope.maxPluginIdBytes)
            let path = try r.lengthPrefixed("path", maxLength: FileGrant.maxPathBytes)
            guard let optionText = String(validating: option, as: UTF8.self), let pathText = String(validating: path, as: UTF8.self) else {
                throw r.malformed("a grant is not UTF-8")
            }
            let grant = FileGrant(option: optionText, path: pathText)
            guard grant.isWellFormed else { throw r.malformed("grant of option '\(optionText.prefix(64))' is malformed") }
            guard !grants.contains(where: { $0.option == optionText }) else { throw r.malformed("option '\(optionText)' is granted twice") }
            grants.append(grant)
        }
        return grants
    }
}

func hexString(_ bytes: some Sequence<UInt8>) -> String {
    let digits: [Character] = Array("0123456789abcdef")
    var s = ""
    for b in bytes { s.append(digits[Int(b >> 4)]); s.append(digits[Int(b & 0xf)]) }
    return s
}
