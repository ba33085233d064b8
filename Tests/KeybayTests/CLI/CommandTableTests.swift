// SPDX-License-Identifier: Apache-2.0
import Foundation
import Testing

/// The CLI's one table of commands (Sources/keybay-methods/CommandTable.swift) against every
/// other list of them: the usage the built CLI prints, the man page's COMMANDS, docs/cli.md's
/// Commands and the bash completion must name the same commands and the same subcommands
/// (`root move`, `import age`, `backup exclude|include`, ...).
@Suite struct CommandTableTests {
    /// Each command and its subcommands (none: an empty set).
    typealias Commands = [String: Set<String>]

    /// The command of a synopsis, and its subcommand: the second word when it is a lowercase
    /// literal, each alternative of `a|b`. Arguments are upper case or options.
    static func command(of synopsis: String) -> (name: String, subcommands: Set<String>) {
        let words = synopsis.split(whereSeparator: \.isWhitespace).map(String.init)
        guard words.count > 1, let first = words[1].first, first.isLowercase, first.isLetter,
              words[1].allSatisfy({ $0.isLowercase || $0 == "-" || $0 == "|" }) else { return (words.first ?? "", []) }
        return (words[0], Set(words[1].split(separator: "|").map(String.init)))
    }

    static func commands(_ synopses: [String]) -> Commands {
        synopses.map(command(of:)).reduce(into: Commands()) { $0[$1.name, default: []].formUnion($1.subcommands) }
    }

    /// The text between the line `start` and the next line beginning with `end`.
    static func section(_ text: String, from start: String, to end: String) throws -> [Substring] {
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false)
        let first = try #require(lines.firstIndex { $0 == start }, "no \(start)")
        return Array(lines[(first + 1)...].prefix { !$0.hasPrefix(end) })
    }

    /// The table's command names, from its source: each entry begins `CommandSpec("NAME"`, and
    /// one with `usage: []` is left out of the usage.
    static func table() throws -> (all: Set<String>, unlisted: Set<String>) {
        let source = try String(contentsOfFile: packageDirectory + "/Sources/keybay-methods/CommandTable.swift", encoding: .utf8)
        let entries = source.components(separatedBy: "CommandSpec(\"").dropFirst()
        let names = entries.map { String($0.prefix { $0 != "\"" }) }
        let unlisted = zip(names, entries).filter { $0.1.contains("usage: [])") }.map(\.0)
        return (Set(names), Set(unlisted))
    }

    /// `keybay-methods --help`: the lines of its commands that start with two spaces and a word.
    static func usage() throws -> Commands {
        let help = try run(cliPath, ["--help"], environment: ["PATH": "/usr/bin:/bin"])
        #expect(help.status == 0)
        let lines = try section(help.out, from: "commands:", to: "global options")
        return commands(lines.filter { $0.hasPrefix("  ") && !$0.hasPrefix("   ") }
            .map { $0.dropFirst(2).components(separatedBy: "  ")[0] })
    }

    /// docs/keybay-methods.1: the tag line of each entry under COMMANDS, its roff taken out.
    static func manPage() throws -> Commands {
        let page = try String(contentsOfFile: packageDirectory + "/docs/keybay-methods.1", encoding: .utf8)
        let lines = try section(page, from: ".SH COMMANDS", to: ".SH")
        let tags = zip(lines, lines.dropFirst()).filter { $0.0 == ".TP" }.map { String($0.1) }
        return commands(tags.map { tag in
            var text = tag.split(separator: " ", maxSplits: 1).dropFirst().joined()
            for font in ["\\fB", "\\fI", "\\fR", "\\fP", "\\&", "\""] { text = text.replacingOccurrences(of: font, with: "") }
            return text.replacingOccurrences(of: "\\-", with: "-")
        })
    }

    /// docs/cli.md: the headings under "Commands", each the command in backquotes.
    static func reference() throws -> Commands {
        let text = try String(contentsOfFile: packageDirectory + "/docs/cli.md", encoding: .utf8)
        let headings = try section(text, from: "## Commands", to: "## ").filter { $0.hasPrefix("### `") }
        return commands(headings.map { $0.dropFirst(5).prefix { $0 != "`" }.description })
    }

    /// completions/keybay-methods.bash, run by bash: the words it offers for the command, then
    /// for each command the words after it. The CLI it would ask (`get`'s keys, `enroll`'s
    /// plugins) is not there and the directory is empty, so only the words it knows remain.
    static func completion() throws -> Commands {
        let box = Sandbox()
        let script = """
            cd "$1" || exit 1
            source "$2"
            complete_words() {
                COMP_WORDS=(/nonexistent/keybay-methods "$@"); COMP_CWORD=$#
                COMP_LINE="${COMP_WORDS[*]}"; COMP_POINT=${#COMP_LINE}
                COMPREPLY=(); _keybay_methods; echo "${COMPREPLY[*]}"
            }
            for command in $(complete_words ""); do echo "$command: $(complete_words "$command" "")"; done
            """
        let r = try run("/bin/bash", ["-c", script, "bash", box.root, packageDirectory + "/completions/keybay-methods.bash"],
                        environment: ["PATH": "/usr/bin:/bin", "HOME": box.root])
        #expect(r.status == 0, "\(r.stderr)")
        return r.out.split(separator: "\n").reduce(into: Commands()) { result, line in
            let parts = line.split(separator: ":", maxSplits: 1)
            result[String(parts[0])] = Set((parts.count > 1 ? parts[1] : "").split(separator: " ").map(String.init))
        }
    }

    /// The commands and subcommands a list has that `expected` lacks, and those it lacks: empty when they agree.
    static func disagreement(_ list: Commands, _ expected: Commands) -> [String] {
        func pairs(_ c: Commands) -> Set<String> { Set(c.flatMap { name, subs in [name] + subs.map { name + " " + $0 } }) }
        let (have, want) = (pairs(list), pairs(expected))
        return have.subtracting(want).sorted().map { "extra: " + $0 } + want.subtracting(have).sorted().map { "missing: " + $0 }
    }

    @Test func theUsageManPageReferenceAndCompletionListTheTablesCommands() throws {
        let table = try Self.table()
        #expect(table.all.count >= 20 && table.all.isSuperset(of: ["get", "set", "root", "import", "help"]), "\(table)")
        // `help` alone is left out of the usage, which it prints: any other command it lists.
        #expect(table.unlisted == ["help"], "\(table.unlisted)")
        let usage = try Self.usage()
        #expect(Set(usage.keys) == table.all.subtracting(table.unlisted), "the usage: \(usage.keys.sorted()), the table: \(table)")
        // What the usage lists, and the commands it leaves out (`help`), without subcommands.
        let expected = usage.merging(table.unlisted.map { ($0, []) }) { listed, _ in listed }
        #expect(expected["root"] == ["move", "check", "reseal"] && expected["import"] == ["age", "secret-service"])
        for (file, listed) in [("docs/keybay-methods.1", try Self.manPage()), ("docs/cli.md", try Self.reference()),
                               ("completions/keybay-methods.bash", try Self.completion())] {
            let differences = Self.disagreement(listed, expected)
            #expect(differences.isEmpty, "\(file): \(differences)")
        }
    }
}
