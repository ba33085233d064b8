// SPDX-License-Identifier: Apache-2.0
/// One recipient stanza: `-> ARG...` and its base64 body wrapped at 64 columns.
struct AgeStanza: Equatable {
    var arguments: [String]
    var body: [UInt8]
}

/// The textual header of an age v1 file (age spec, "Header"): the version line, one or more
/// stanzas, and the MAC line. Parsing is strict: every rule of the spec's ABNF is checked and
/// every base64 field must be canonical, so exactly one byte string is accepted for a header.
struct AgeHeader {
    static let versionLine = Array("age-encryption.org/v1\n".utf8)
    private static let versionPrefix = Array("age-encryption.org/".utf8)
    static let columns = 64

    var stanzas: [AgeStanza]
    var mac: [UInt8]
    /// The bytes the MAC covers: the header up to and including `---`.
    var authenticated: ArraySlice<UInt8>
    /// Where the binary payload starts.
    var payloadStart: Int

    /// The header without its MAC: version line, stanzas, and `---` (the MAC's input).
    static func encode(_ stanzas: [AgeStanza]) -> [UInt8] {
        var out = versionLine
        for stanza in stanzas {
            out += Array("->".utf8)
            for argument in stanza.arguments { out += [0x20] + Array(argument.utf8) }
            out.append(0x0a)
            let body = Base64.encode(stanza.body, padded: false)
            var i = 0
            // Full lines of 64, then a final shorter line, which is empty when the body fills its lines.
            while body.count - i >= columns { out += body[i..<(i + columns)] + [0x0a]; i += columns }
            out += body[i...] + [0x0a]
        }
        return out + Array("---".utf8)
    }

    /// The MAC line that ends the header, after the `---` of `encode`.
    static func macLine(_ mac: [UInt8]) -> [UInt8] {
        [0x20] + Base64.encode(mac, padded: false) + [0x0a]
    }

    static func parse(_ file: [UInt8]) throws(AgeFailure) -> AgeHeader {
        var at = 0
        func line() throws(AgeFailure) -> ArraySlice<UInt8> {
            guard let end = file[at...].firstIndex(of: 0x0a) else { throw .header("the header ends without a line feed") }
            defer { at = end + 1 }
            return file[at..<end]
        }
        let version = try line()
        guard Array(version) + [0x0a] == versionLine else {
            if version.starts(with: versionPrefix) {
                throw .header("unsupported age version '\(String(decoding: version.dropFirst(versionPrefix.count).prefix(32), as: UTF8.self))'")
            }
            throw .header("not an age file (no age-encryption.org version line)")
        }
        var stanzas: [AgeStanza] = []
        while true {
            let start = at
            let first = try line()
            if first.starts(with: Array("---".utf8)) {
                guard !stanzas.isEmpty else { throw .header("the header has no recipient stanza") }
                // "--- " and 43 base64 characters: a 32-byte MAC.
                guard first.count == 4 + 43, first[first.startIndex + 3] == 0x20,
                      let mac = Base64.decode(first.dropFirst(4), padded: false), mac.count == 32 else {
                    throw .header("the MAC line is malformed")
                }
                return AgeHeader(stanzas: stanzas, mac: mac, authenticated: file[0..<(start + 3)], payloadStart: at)
            }
            guard first.starts(with: Array("-> ".utf8)) else { throw .header("a header line is neither a stanza nor the MAC") }
            var arguments: [String] = []
            for argument in first.dropFirst(3).split(separator: 0x20, omittingEmptySubsequences: false) {
                guard !argument.isEmpty, argument.allSatisfy({ $0 >= 0x21 && $0 <= 0x7e }) else {
                    throw .header("a stanza argument is empty or not printable ASCII")
                }
                arguments.append(String(decoding: argument, as: UTF8.self))
            }
            var body: [UInt8] = []
            while true {
                let bodyLine = try line()
                guard bodyLine.count <= columns, bodyLine.allSatisfy({ Base64.sextet($0) != nil }) else {
                    throw .header("a stanza body line is longer than 64 columns or not base64")
                }
                body += bodyLine
                if bodyLine.count < columns { break }
            }
            guard let decoded = Base64.decode(body, padded: false) else { throw .header("a stanza body is not canonical base64") }
            stanzas.append(AgeStanza(arguments: arguments, body: decoded))
        }
    }
}
