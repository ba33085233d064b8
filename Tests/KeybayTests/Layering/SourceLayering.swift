// SPDX-License-Identifier: Apache-2.0

struct SourceFile {
    let path: String
    let layer: String
    let text: String
}

/// The names each layer declares at file scope, and the names each file uses in its code
/// (comments and string contents left out; a name after a dot is a member, not a use).
struct SourceLayering {
    let files: [SourceFile]
    /// Top-level name → the layer declaring it.
    let owners: [String: String]

    init(_ files: [SourceFile]) {
        self.files = files
        var owners: [String: String] = [:]
        for file in files {
            for name in Self.topLevelDeclarations(in: Self.code(of: file.text)) where owners[name] == nil {
                owners[name] = file.layer
            }
        }
        self.owners = owners
    }

    func violations(allowed: [String: Set<String>]) -> [String] {
        files.flatMap { file -> [String] in
            let permitted = allowed[file.layer] ?? []
            return Set(Self.usedNames(in: Self.code(of: file.text))).sorted().compactMap { name in
                guard let owner = owners[name], owner != file.layer, !permitted.contains(owner) else { return nil }
                return "\(file.path) uses \(name) (\(owner))"
            }
        }.sorted()
    }

    static let declarationKeywords: Set<String> = ["struct", "class", "enum", "protocol", "actor", "typealias", "func", "let", "var"]
    static let modifiers: Set<String> = ["public", "package", "internal", "private", "fileprivate", "final", "indirect", "nonisolated"]

    /// Names declared by lines that start at column 0 (the file scope).
    static func topLevelDeclarations(in code: String) -> [String] {
        code.split(separator: "\n").compactMap { line -> String? in
            guard let first = line.first, first.isLetter || first == "@" else { return nil }
            var words = line.split(whereSeparator: { !($0.isLetter || $0.isNumber || $0 == "_" || $0 == "@") }).map(String.init)[...]
            while let w = words.first, modifiers.contains(w) || w.hasPrefix("@") { words = words.dropFirst() }
            guard let keyword = words.first, declarationKeywords.contains(keyword), words.count > 1 else { return nil }
            return words[words.startIndex + 1]
        }
    }

    /// Identifiers in code that are not members (not right after a dot). Names are ASCII.
    static func usedNames(in code: String) -> [String] {
        identifiers(in: code).filter { !$0.afterDot }.map(\.name)
    }

    /// Every identifier in code, and whether it stands right after a dot (a member).
    static func identifiers(in code: String) -> [(name: String, afterDot: Bool)] {
        var names: [(name: String, afterDot: Bool)] = []
        var current: [UInt8] = []
        var previous: UInt8 = 0x20
        var afterDot = false
        func isLetter(_ b: UInt8) -> Bool { (b | 0x20) >= 0x61 && (b | 0x20) <= 0x7a || b == 0x5f }
        for b in Array(code.utf8) + [0x20] {
            if isLetter(b) || (b >= 0x30 && b <= 0x39 && !current.isEmpty) {
                if current.isEmpty { afterDot = previous == 0x2e }
                current.append(b)
            } else {
                if !current.isEmpty { names.append((String(decoding: current, as: UTF8.self), afterDot)) }
                current.removeAll(keepingCapacity: true)
            }
            if b != 0x20 && b != 0x0a && b != 0x09 { previous = b }
        }
        return names
    }

    /// The text with comments removed and every string literal's contents blanked, its
    /// interpolations kept (they are code).
    static func code(of text: String) -> String {
        lex(text).code
    }

    /// The contents of the string literals (interpolations left out).
    static func stringLiterals(in text: String) -> [String] {
        lex(text).strings
    }

    private static func lex(_ text: String) -> (code: String, strings: [String]) {
        let chars = Array(text.utf8)
        var code: [UInt8] = []
        var strings: [String] = []
        var i = 0
        // Open string literals (each with whether it is multi-line), and for each interpolation
        // the parenthesis depth at which it closes.
        var literals: [(multiLine: Bool, text: [UInt8])] = []
        var interpolationDepths: [Int] = []
        var depth = 0
        let quote = UInt8(ascii: "\""), backslash = UInt8(ascii: "\\"), open = UInt8(ascii: "("), close = UInt8(ascii: ")")
        let slash = UInt8(ascii: "/"), star = UInt8(ascii: "*"), newline = UInt8(ascii: "\n")
        func at(_ a: UInt8, _ b: UInt8, _ k: Int) -> Bool { k + 1 < chars.count && chars[k] == a && chars[k + 1] == b }
        func tripleQuote(_ k: Int) -> Bool { k + 2 < chars.count && chars[k] == quote && chars[k + 1] == quote && chars[k + 2] == quote }
        while i < chars.count {
            let c = chars[i]
            if !literals.isEmpty && interpolationDepths.count < literals.count {
                let multi = literals[literals.count - 1].multiLine
                if at(backslash, open, i) {
                    interpolationDepths.append(depth)
                    depth += 1
                    code.append(open)
                    i += 2
                } else if c == backslash {
                    literals[literals.count - 1].text.append(contentsOf: chars[i..<min(i + 2, chars.count)])
                    i += 2
                } else if multi ? tripleQuote(i) : c == quote {
                    strings.append(String(decoding: literals.removeLast().text, as: UTF8.self))
                    code.append(contentsOf: [quote, quote])
                    i += multi ? 3 : 1
                } else {
                    literals[literals.count - 1].text.append(c)
                    if c == newline { code.append(newline) }
                    i += 1
                }
                continue
            }
            if at(slash, slash, i) {
                while i < chars.count && chars[i] != newline { i += 1 }
            } else if at(slash, star, i) {
                var nesting = 0
                repeat {
                    if at(slash, star, i) { nesting += 1; i += 2 } else if at(star, slash, i) { nesting -= 1; i += 2 } else {
                        if chars[i] == newline { code.append(newline) }
                        i += 1
                    }
                } while nesting > 0 && i < chars.count
            } else if tripleQuote(i) {
                literals.append((true, []))
                i += 3
            } else if c == quote {
                literals.append((false, []))
                i += 1
            } else {
                if c == open { depth += 1 }
                if c == close {
                    depth -= 1
                    if let closes = interpolationDepths.last, closes == depth { interpolationDepths.removeLast() }
                }
                code.append(c)
                i += 1
            }
        }
        return (String(decoding: code, as: UTF8.self), strings)
    }
}
