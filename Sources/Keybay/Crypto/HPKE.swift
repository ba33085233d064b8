// SPDX-License-Identifier: Apache-2.0
import CSodium

/// HPKE (RFC 9180) in Base mode for exactly one ciphersuite:
/// DHKEM(X25519, HKDF-SHA256) (KEM 0x0020), HKDF-SHA256 (KDF 0x0001), ChaCha20-Poly1305 (AEAD 0x0003).
/// Only the single-shot Seal/Open of §6.1 is offered: each `seal` sets up a fresh context and
/// encrypts one message at sequence number 0. There is no PSK, Auth or Export interface.
///
/// Private keys, DH outputs, shared secrets, PRKs, the AEAD key and opened plaintexts live in
/// `SecureBytes`; transient copies in ordinary arrays are wiped.
enum HPKE {
    static let kemID: UInt16 = 0x0020
    static let kdfID: UInt16 = 0x0001
    static let aeadID: UInt16 = 0x0003

    /// Sizes from RFC 9180 §7.1–7.3 for this suite.
    static let nsk = 32, npk = 32, nenc = 32, nsecret = 32, nh = 32
    static let nk = 32, nn = 12, nt = 16

    static let modeBase: UInt8 = 0x00

    /// suite_id for the KEM's own KDF calls (§4.1): "KEM" | I2OSP(kem_id, 2).
    static let kemSuiteID: [UInt8] = Array("KEM".utf8) + i2osp2(kemID)
    /// suite_id for the key schedule (§5.1): "HPKE" | kem_id | kdf_id | aead_id.
    static let hpkeSuiteID: [UInt8] = Array("HPKE".utf8) + i2osp2(kemID) + i2osp2(kdfID) + i2osp2(aeadID)

    private static let versionLabel: [UInt8] = Array("HPKE-v1".utf8)

    private static func i2osp2(_ v: UInt16) -> [UInt8] { [UInt8(v >> 8), UInt8(v & 0xff)] }

    // MARK: Labelled KDF (§4)

    /// LabeledExtract(salt, label, ikm) = Extract(salt, "HPKE-v1" | suite_id | label | ikm).
    /// The secret `ikm` is fed to HMAC after the public prefix instead of being concatenated.
    static func labeledExtract(suiteID: [UInt8], salt: UnsafeRawBufferPointer, label: String,
                               ikm: UnsafeRawBufferPointer) -> SecureBytes {
        let prefix = versionLabel + suiteID + Array(label.utf8)
        return prefix.withUnsafeBytes { HKDF.extract(salt: salt, ikm: [$0, ikm]) }
    }

    /// LabeledExtract with an empty (public) salt.
    static func labeledExtract(suiteID: [UInt8], label: String, ikm: UnsafeRawBufferPointer) -> SecureBytes {
        labeledExtract(suiteID: suiteID, salt: UnsafeRawBufferPointer(start: nil, count: 0), label: label, ikm: ikm)
    }

    /// LabeledExpand(prk, label, info, L) = Expand(prk, I2OSP(L, 2) | "HPKE-v1" | suite_id | label | info, L).
    static func labeledExpand(suiteID: [UInt8], prk: SecureBytes, label: String, info: [UInt8], count: Int) -> SecureBytes {
        precondition(count > 0 && count <= 0xffff)
        let labeledInfo = i2osp2(UInt16(count)) + versionLabel + suiteID + Array(label.utf8) + info
        return HKDF.expand(prk: prk, info: labeledInfo, count: count)
    }

    // MARK: DHKEM(X25519, HKDF-SHA256) (§4.1, §7.1)

    /// DeriveKeyPair (§7.1.3, X25519): dkp_prk = LabeledExtract("", "dkp_prk", ikm);
    /// sk = LabeledExpand(dkp_prk, "sk", "", Nsk). `ikm` should hold at least Nsk bytes of entropy.
    /// The private key is returned as derived (X25519 clamps it on every use, RFC 7748 §5),
    /// which is also how RFC 9180 Appendix A prints skEm and skRm.
    static func deriveKeyPair(ikm: UnsafeRawBufferPointer) -> (privateKey: SecureBytes, publicKey: [UInt8]) {
        let dkpPRK = labeledExtract(suiteID: kemSuiteID, label: "dkp_prk", ikm: ikm)
        let sk = labeledExpand(suiteID: kemSuiteID, prk: dkpPRK, label: "sk", info: [], count: nsk)
        return (sk, publicKey(of: sk))
    }

    /// pk(sk) = X25519(sk, 9).
    static func publicKey(of privateKey: SecureBytes) -> [UInt8] {
        Sodium.ensureInitialised()
        precondition(privateKey.count == nsk, "X25519 private key must be 32 bytes")
        var pk = [UInt8](repeating: 0, count: npk)
        let rc = privateKey.withUnsafeBytes { sk in
            pk.withUnsafeMutableBytes { out in
                crypto_scalarmult_base(out.baseAddress!.assumingMemoryBound(to: UInt8.self),
                                       sk.baseAddress!.assumingMemoryBound(to: UInt8.self))
            }
        }
        precondition(rc == 0, "crypto_scalarmult_base failed")
        return pk
    }

    /// DH(sk, pk) = X25519(sk, pk); nil when the result is all zeros (a low-order `pk`),
    /// which §7.1.4 requires us to reject. libsodium performs that check and returns -1.
    static func dh(privateKey: SecureBytes, publicKey: [UInt8]) -> SecureBytes? {
        Sodium.ensureInitialised()
        guard privateKey.count == nsk, publicKey.count == npk else { return nil }
        struct Rejected: Error {}
        return try? SecureBytes(count: 32) { out in
            let rc = privateKey.withUnsafeBytes { sk in
                publicKey.withUnsafeBytes { pk in
                    crypto_scalarmult(out.baseAddress!.assumingMemoryBound(to: UInt8.self),
                                      sk.baseAddress!.assumingMemoryBound(to: UInt8.self),
                                      pk.baseAddress!.assumingMemoryBound(to: UInt8.self))
                }
            }
            if rc != 0 { throw Rejected() } // SecureBytes wipes and frees the output
        }
    }

    /// ExtractAndExpand(dh, kem_context) (§4.1).
    private static func extractAndExpand(dh: SecureBytes, kemContext: [UInt8]) -> SecureBytes {
        let eaePRK = dh.withUnsafeBytes { labeledExtract(suiteID: kemSuiteID, label: "eae_prk", ikm: $0) }
        return labeledExpand(suiteID: kemSuiteID, prk: eaePRK, label: "shared_secret", info: kemContext, count: nsecret)
    }

    /// Encap(pkR) (§4.1). The ephemeral key pair is random unless a test pins `ephemeralIKM`
    /// (then it is DeriveKeyPair(ephemeralIKM)). Throws `.invalidArgument` for a public key of the
    /// wrong length or one that yields the all-zero DH output.
    static func encap(recipientPublicKey pkR: [UInt8], ephemeralIKM: [UInt8]? = nil) throws -> (sharedSecret: SecureBytes, enc: [UInt8]) {
        guard pkR.count == npk else {
            throw KeybayError(.invalidArgument, "HPKE recipient public key must be \(npk) bytes, got \(pkR.count)")
        }
        let skE: SecureBytes, pkE: [UInt8]
        if let ikm = ephemeralIKM {
            guard ikm.count >= nsk else {
                throw KeybayError(.invalidArgument, "HPKE ephemeral IKM must be at least \(nsk) bytes")
            }
            (skE, pkE) = ikm.withUnsafeBytes { deriveKeyPair(ikm: $0) }
        } else {
            // GenerateKeyPair: any 32 random bytes are an X25519 private key (clamped on use).
            skE = SecureBytes(randomCount: nsk)
            pkE = publicKey(of: skE)
        }
        guard let dh = dh(privateKey: skE, publicKey: pkR) else {
            throw KeybayError(.invalidArgument, "HPKE recipient public key is a low-order point (the X25519 result is all zeros)")
        }
        let enc = pkE
        return (extractAndExpand(dh: dh, kemContext: enc + pkR), enc)
    }

    /// Decap(enc, skR) (§4.1); nil for an `enc` of the wrong length or a low-order `enc`.
    static func decap(enc: [UInt8], recipientPrivateKey skR: SecureBytes) -> SecureBytes? {
        guard enc.count == nenc, skR.count == nsk, let dh = dh(privateKey: skR, publicKey: enc) else { return nil }
        let pkRm = publicKey(of: skR)
        return extractAndExpand(dh: dh, kemContext: enc + pkRm)
    }

    // MARK: Key schedule (§5.1) and nonces (§5.2)

    struct Context {
        let keyScheduleContext: [UInt8]
        let secret: SecureBytes
        let key: SecureBytes
        let baseNonce: SecureBytes

        /// ComputeNonce(seq) = base_nonce XOR I2OSP(seq, Nn). A 64-bit sequence number is padded
        /// on the left with zeros, as §5.2 allows. The caller should wipe the result when done.
        func nonce(sequence: UInt64) -> [UInt8] {
            let seq = [UInt8](repeating: 0, count: HPKE.nn - 8) + withUnsafeBytes(of: sequence.bigEndian) { Array($0) }
            return baseNonce.withUnsafeBytes { base in (0..<HPKE.nn).map { base[$0] ^ seq[$0] } }
        }
    }

    /// KeySchedule(mode_base, shared_secret, info, default_psk = "", default_psk_id = "").
    /// The exporter secret is not derived: this implementation has no Export interface.
    static func keySchedule(sharedSecret: SecureBytes, info: [UInt8]) -> Context {
        let empty = UnsafeRawBufferPointer(start: nil, count: 0)
        let pskIDHash = labeledExtract(suiteID: hpkeSuiteID, label: "psk_id_hash", ikm: empty)
        let infoHash = info.withUnsafeBytes { labeledExtract(suiteID: hpkeSuiteID, label: "info_hash", ikm: $0) }
        var context = [modeBase]
        pskIDHash.withUnsafeBytes { context += $0 }
        infoHash.withUnsafeBytes { context += $0 }
        let secret = sharedSecret.withUnsafeBytes {
            labeledExtract(suiteID: hpkeSuiteID, salt: $0, label: "secret", ikm: empty)
        }
        let key = labeledExpand(suiteID: hpkeSuiteID, prk: secret, label: "key", info: context, count: nk)
        let baseNonce = labeledExpand(suiteID: hpkeSuiteID, prk: secret, label: "base_nonce", info: context, count: nn)
        return Context(keyScheduleContext: context, secret: secret, key: key, baseNonce: baseNonce)
    }

    // MARK: ChaCha20-Poly1305 (IETF, RFC 8439): ciphertext | tag(16)

    static func aeadSeal(key: SecureBytes, nonce: [UInt8], aad: [UInt8], plaintext: UnsafeRawBufferPointer) -> [UInt8] {
        Sodium.ensureInitialised()
        precondition(key.count == nk && nonce.count == nn)
        var out = [UInt8](repeating: 0, count: plaintext.count + nt)
        var clen: UInt64 = 0
        let rc = out.withUnsafeMutableBytes { o in
            key.withUnsafeBytes { k in
                aad.withUnsafeBytes { a in
                    nonce.withUnsafeBytes { n in
                        crypto_aead_chacha20poly1305_ietf_encrypt(
                            o.baseAddress!.assumingMemoryBound(to: UInt8.self), &clen,
                            plaintext.baseAddress?.assumingMemoryBound(to: UInt8.self), UInt64(plaintext.count),
                            a.baseAddress?.assumingMemoryBound(to: UInt8.self), UInt64(a.count),
                            nil, n.baseAddress!.assumingMemoryBound(to: UInt8.self),
                            k.baseAddress!.assumingMemoryBound(to: UInt8.self))
                    }
                }
            }
        }
        precondition(rc == 0 && Int(clen) == out.count, "ChaCha20-Poly1305 encryption failed")
        return out
    }

    /// Opens straight into guarded memory; nil on any failure (including an empty plaintext,
    /// which `SecureBytes` cannot hold).
    static func aeadOpen(key: SecureBytes, nonce: [UInt8], aad: [UInt8], ciphertext: UnsafeRawBufferPointer) -> SecureBytes? {
        guard ciphertext.count > nt else { return nil }
        struct Failed: Error {}
        return try? SecureBytes(count: ciphertext.count - nt) { out in
            if !aeadOpen(key: key, nonce: nonce, aad: aad, ciphertext: ciphertext, into: out) { throw Failed() }
        }
    }

    /// Opens into `out` (exactly `ciphertext.count - nt` bytes, which may be none): false on any
    /// failure, `out` then zeroed by libsodium. For callers that assemble several messages in one
    /// guarded buffer (age's STREAM chunks).
    static func aeadOpen(key: SecureBytes, nonce: [UInt8], aad: [UInt8], ciphertext: UnsafeRawBufferPointer,
                         into out: UnsafeMutableRawBufferPointer) -> Bool {
        Sodium.ensureInitialised()
        guard key.count == nk, nonce.count == nn, ciphertext.count >= nt, out.count == ciphertext.count - nt else { return false }
        var mlen: UInt64 = 0
        func decrypt(_ m: UnsafeMutablePointer<UInt8>) -> Int32 {
            key.withUnsafeBytes { k in
                aad.withUnsafeBytes { a in
                    nonce.withUnsafeBytes { n in
                        crypto_aead_chacha20poly1305_ietf_decrypt(
                            m, &mlen, nil, ciphertext.baseAddress!.assumingMemoryBound(to: UInt8.self), UInt64(ciphertext.count),
                            a.baseAddress?.assumingMemoryBound(to: UInt8.self), UInt64(a.count),
                            n.baseAddress!.assumingMemoryBound(to: UInt8.self), k.baseAddress!.assumingMemoryBound(to: UInt8.self))
                    }
                }
            }
        }
        var scratch: UInt8 = 0 // libsodium wants a pointer even for an empty plaintext
        let rc = out.baseAddress.map { decrypt($0.assumingMemoryBound(to: UInt8.self)) } ?? decrypt(&scratch)
        return rc == 0 && Int(mlen) == out.count
    }

    // MARK: Single-shot API (§6.1)

    /// SealBase(pkR, info, aad, pt): a fresh context, one encryption at sequence number 0.
    /// `ephemeralIKM` pins the ephemeral key for tests; leave it nil otherwise.
    /// Throws `.invalidArgument` for a bad recipient key, a short ephemeral IKM or an empty plaintext.
    static func seal(recipientPublicKey: [UInt8], info: [UInt8], aad: [UInt8], plaintext: UnsafeRawBufferPointer,
                     ephemeralIKM: [UInt8]? = nil) throws -> (enc: [UInt8], ciphertext: [UInt8]) {
        guard plaintext.count > 0 else {
            throw KeybayError(.invalidArgument, "HPKE plaintext must not be empty")
        }
        let (sharedSecret, enc) = try encap(recipientPublicKey: recipientPublicKey, ephemeralIKM: ephemeralIKM)
        let context = keySchedule(sharedSecret: sharedSecret, info: info)
        var nonce = context.nonce(sequence: 0)
        defer { Sodium.wipe(&nonce) }
        return (enc, aeadSeal(key: context.key, nonce: nonce, aad: aad, plaintext: plaintext))
    }

    /// OpenBase(enc, skR, info, aad, ct): nil on any failure (bad or low-order `enc`, wrong key,
    /// modified ciphertext, info or aad). The plaintext is returned in guarded memory.
    static func open(enc: [UInt8], recipientPrivateKey: SecureBytes, info: [UInt8], aad: [UInt8],
                     ciphertext: UnsafeRawBufferPointer) -> SecureBytes? {
        guard ciphertext.count > nt,
              let sharedSecret = decap(enc: enc, recipientPrivateKey: recipientPrivateKey) else { return nil }
        let context = keySchedule(sharedSecret: sharedSecret, info: info)
        var nonce = context.nonce(sequence: 0)
        defer { Sodium.wipe(&nonce) }
        return aeadOpen(key: context.key, nonce: nonce, aad: aad, ciphertext: ciphertext)
    }
}
