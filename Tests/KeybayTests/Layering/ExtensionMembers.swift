// SPDX-License-Identifier: Apache-2.0

/// Members that extensions add, and the members a file names after a dot. A higher layer may
/// extend a lower layer's type; the lower layer must not call what it added, and the check of
/// top-level names cannot see that call, because a member is named after a dot.
extension SourceLayering {
    /// A member that an extension in `file` declares at the top of its body.
    struct ExtensionMember: Equatable {
        let name: String
        let file: String
        let layer: String
    }

    /// Words that may stand before a declaration's keyword.
    static let memberModifiers: Set<String> = modifiers.union(["static", "override", "mutating", "nonmutating", "convenience",
                                                               "required", "open", "lazy", "weak", "unowned", "dynamic", "consuming",
                                                               "set"])  // private(set)

    /// The name a line declares, if it starts with a declaration (after attributes and modifiers).
    static func declaredName(onLine line: Substring) -> String? {
        var words = line.split(whereSeparator: { !($0.isLetter || $0.isNumber || $0 == "_" || $0 == "@") }).map(String.init)[...]
        while let w = words.first, memberModifiers.contains(w) || w.hasPrefix("@") || (w == "class" && words.dropFirst().first.map(declarationKeywords.contains) == true) {
            words = words.dropFirst()
        }
        guard let keyword = words.first, declarationKeywords.contains(keyword) || keyword == "case", words.count > 1 else { return nil }
        return words[words.startIndex + 1]
    }

    /// The code cut into statements: at line ends, semicolons and braces, each with the brace
    /// depth it starts at and the brace that ends it (nil at a line end or semicolon).
    static func statements(in code: String) -> [(text: Substring, depth: Int, closer: Character?)] {
        var result: [(text: Substring, depth: Int, closer: Character?)] = []
        var depth = 0, start = code.startIndex
        for i in code.indices where "{};\n".contains(code[i]) {
            let c = code[i]
            result.append((code[start..<i].drop { $0 == " " || $0 == "\t" }, depth, c == "{" || c == "}" ? c : nil))
            if c == "{" { depth += 1 } else if c == "}" { depth -= 1 }
            start = code.index(after: i)
        }
        result.append((code[start...].drop { $0 == " " || $0 == "\t" }, depth, nil))
        return result
    }

    /// The members declared directly in each `extension` body of the code (not in nested types).
    static func extensionMembers(in code: String) -> [String] {
        var names: [String] = []
        var opening = false, inExtension = false
        for (text, depth, closer) in statements(in: code) {
            if depth == 0 {
                let words = text.split(whereSeparator: { !($0.isLetter || $0 == "@") }).drop { memberModifiers.contains(String($0)) || $0.hasPrefix("@") }
                if words.first == "extension" { opening = true }
                if closer == "{" { inExtension = opening; opening = false }
            } else if depth == 1 {
                if inExtension, let name = declaredName(onLine: text) { names.append(name) }
                if closer == "}" { inExtension = false }
            }
        }
        return names
    }

    /// Every name the code declares, at any depth: the members a file may reach through a type of
    /// its own layer or one below.
    static func declaredNames(in code: String) -> Set<String> {
        var names: Set<String> = []
        for (trimmed, _, _) in statements(in: code) {
            guard let name = declaredName(onLine: trimmed) else { continue }
            names.insert(name)
            // `case a, b(Int), c`: each case of the list.
            if trimmed.split(separator: " ").contains(where: { $0 == "case" }) {
                var parenthesis = 0, word = ""
                for c in trimmed.drop(while: { $0 != " " }) {
                    if c == "(" { parenthesis += 1 } else if c == ")" { parenthesis -= 1 }
                    if parenthesis == 0, c.isLetter || c.isNumber || c == "_" { word.append(c) } else {
                        if !word.isEmpty { names.insert(word) }
                        word = ""
                    }
                }
            }
        }
        return names
    }

    /// Identifiers right after a dot: the members the code names.
    static func memberUses(in code: String) -> Set<String> {
        Set(identifiers(in: code).filter(\.afterDot).map(\.name))
    }

    /// Members that types from outside the core also have, so that naming one says nothing of
    /// our extensions: the standard library's and the plugin ABI's C structs'.
    static let outsideMembers: [String: String] = [
        "count": "Collection.count (Agent's AgentFrame has a count(_:itemBytes:))",
        "initialize": "UnsafeMutablePointer.initialize(to:) (the API has KeybayStore.initialize)",
        "verify": "keybay_plugin_descriptor.verify, a C field (the API has KeybayAuth.verify)",
    ]

    /// Each file that names, after a dot, a member that only an extension of a layer it may not
    /// use declares (no declaration of that name in its own layer or the layers below it).
    func extensionMemberViolations(allowed: [String: Set<String>]) -> [String] {
        var added: [String: Set<String>] = [:], declared: [String: Set<String>] = [:]
        for file in files {
            let code = Self.code(of: file.text)
            for name in Self.extensionMembers(in: code) { added[name, default: []].insert(file.layer) }
            declared[file.layer, default: []].formUnion(Self.declaredNames(in: code))
        }
        return files.flatMap { file -> [String] in
            let reachable = (allowed[file.layer] ?? []).union([file.layer])
            return Self.memberUses(in: Self.code(of: file.text)).sorted().compactMap { name in
                guard Self.outsideMembers[name] == nil, let layers = added[name], layers.isDisjoint(with: reachable),
                      !reachable.contains(where: { declared[$0]?.contains(name) == true }) else { return nil }
                return "\(file.path) uses .\(name) (an extension in \(layers.sorted().joined(separator: ", ")))"
            }
        }.sorted()
    }
}
