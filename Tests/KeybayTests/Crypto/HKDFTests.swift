// SPDX-License-Identifier: Apache-2.0
import Testing
@testable import Keybay

/// RFC 5869 Appendix A, test cases 1–3 (HKDF-SHA256).
@Suite struct HKDFTests {
    struct Case: Sendable, CustomTestStringConvertible {
        let name: String, ikm: String, salt: String, info: String, length: Int, prk: String, okm: String
        var testDescription: String { name }
    }

    static let cases: [Case] = [
        Case(name: "A.1 basic", ikm: String(repeating: "0b", count: 22), salt: "000102030405060708090a0b0c",
             info: "f0f1f2f3f4f5f6f7f8f9", length: 42,
             prk: "077709362c2e32df0ddc3f0dc47bba6390b6c73bb50f9c3122ec844ad7c2b3e5",
             okm: "3cb25f25faacd57a90434f64d0362f2a2d2d0a90cf1a5a4c5db02d56ecc4c5bf34007208d5b887185865"),
        Case(name: "A.2 long inputs",
             ikm: (0x00...0x4f).map { hexString([UInt8($0)]) }.joined(),
             salt: (0x60...0xaf).map { hexString([UInt8($0)]) }.joined(),
             info: (0xb0...0xff).map { hexString([UInt8($0)]) }.joined(), length: 82,
             prk: "06a6b88c5853361a06104c9ceb35b45cef760014904671014a193f40c15fc244",
             okm: "b11e398dc80327a1c8e7f78c596a49344f012eda2d4efad8a050cc4c19afa97c59045a99cac7827271cb41c65e590e09da3275600c2f09b8367793a9aca3db71cc30c58179ec3e87c14c01d5c1f3434f1d87"),
        Case(name: "A.3 empty salt and info", ikm: String(repeating: "0b", count: 22), salt: "", info: "", length: 42,
             prk: "19ef24a32c717b167f33a91d6f648bdf96596776afdb6377ac434c1c293ccb04",
             okm: "8da4e775a563c18f715f802a063c5a31b8a11f5c5ee1879ec3454e5f3c738d2d9d201395faa4b61a96c8"),
    ]

    @Test(arguments: cases)
    func rfc5869(_ c: Case) {
        let okm = hex(c.ikm).withUnsafeBytes { HKDF.derive(ikm: $0, salt: hex(c.salt), info: hex(c.info), count: c.length) }
        #expect(okm.withUnsafeBytes { hexString($0) } == c.okm)
        // The extract step alone: HMAC(salt or zeros, IKM).
        let salt = c.salt.isEmpty ? [UInt8](repeating: 0, count: 32) : hex(c.salt)
        #expect(hexString(HMACSHA256.authenticate(key: salt, message: hex(c.ikm))) == c.prk)
        // The separate extract and expand steps that HPKE's labelled functions build on.
        let prk = hex(c.ikm).withUnsafeBytes { HKDF.extract(salt: hex(c.salt), ikm: $0) }
        #expect(prk.withUnsafeBytes { hexString($0) } == c.prk)
        #expect(HKDF.expand(prk: prk, info: hex(c.info), count: c.length).withUnsafeBytes { hexString($0) } == c.okm)
    }

    @Test func rfc4231HMACCase2() {
        // RFC 4231 test case 2: key "Jefe", data "what do ya want for nothing?".
        let tag = HMACSHA256.authenticate(key: Array("Jefe".utf8), message: Array("what do ya want for nothing?".utf8))
        #expect(hexString(tag) == "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843")
    }

    @Test func sha256OfEmptyAndABC() {
        #expect(hexString(SHA256.hash([UInt8]())) == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
        #expect(hexString(SHA256.hash(Array("abc".utf8))) == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
    }
}
