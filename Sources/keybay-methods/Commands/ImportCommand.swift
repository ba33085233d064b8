// SPDX-License-Identifier: Apache-2.0
import Keybay

/// `import age|secret-service ...`: records brought in under one set of rules (new keys
/// imported, equal ones left, different ones conflicts, kept and named, exit 1, unless
/// `--replace`; `--dry-run` writes nothing), and the counts printed.
extension Command {
    /// The age file read from standard input, kept for a retry of the command (which finds
    /// standard input at EOF).
    nonisolated(unsafe) private static var ageInput: [UInt8]?

    static func importRecords(_ c: Context) throws -> Int32 {
        let a = c.a
        guard let source = a.positionals.first else { throw Arguments.UsageError(message: "'import' needs a source: age or secret-service") }
        let ageOnly = ["--identity"], secretServiceOnly = ["--attr", "--key-from", "--prefix"]
        switch source {
        case "age":
            if let stray = (secretServiceOnly.filter { a.commandValues[$0] != nil } + (a.flags.contains("--remove-source") ? ["--remove-source"] : [])).first {
                throw Arguments.UsageError(message: "option \(stray) does not apply to 'import age'")
            }
            return try importAge(c)
        case "secret-service":
            if let stray = ageOnly.first(where: { a.commandValues[$0] != nil }) {
                throw Arguments.UsageError(message: "option \(stray) does not apply to 'import secret-service'")
            }
            return try importSecretService(c)
        default:
            throw Arguments.UsageError(message: "'import' takes age or secret-service, not '\(source.prefix(40))'")
        }
    }

    private static func importAge(_ c: Context) throws -> Int32 {
        let a = c.a
        try a.expect(["age", "AGEFILE"], optional: 1)
        guard let identities = a.commandValues["--identity"], identities.count == 1 else {
            throw Arguments.UsageError(message: "'import age' needs --identity FILE, once")
        }
        var identityFile = try readWholeFile(identities[0], what: "identity file")
        defer { wipe(&identityFile) }
        let input = a.positionals.count == 2 ? a.positionals[1] : "-"
        let file: [UInt8]
        if input == "-" {
            file = try ageInput ?? readWholeFile("-", what: "age file")
            ageInput = file
        } else {
            file = try readWholeFile(input, what: "age file")
        }
        let allowAgent = a.flags.contains("--allow-agent")
        // A new machine's store is made by the import itself; a dry run makes nothing.
        let session = try unlock(a, c.interaction, createIfAbsent: !a.flags.contains("--dry-run"), throughAgent: allowAgent)
        defer { session.close() }
        let report = try session.importAge(file, identityFile: identityFile, replace: a.flags.contains("--replace"), dryRun: a.flags.contains("--dry-run"))
        return printReport(report, json: a.json)
    }

    /// The counts (and the keys in conflict) on standard output; exit 1 when a conflict was kept.
    static func printReport(_ report: KeybayImportReport, json: Bool, extra: [(String, JSON.Value)] = []) -> Int32 {
        func keys(_ list: [String]) -> JSON.Value { .array(list.map { .string($0) }) }
        if json {
            Output.line(JSON.render(.object([("imported", keys(report.imported)), ("unchanged", keys(report.unchanged)),
                                             ("conflicts", keys(report.conflicts)), ("replaced", keys(report.replaced)),
                                             ("dryRun", .bool(report.dryRun))] + extra)))
        } else {
            let verb = report.dryRun ? "would import" : "imported"
            // The source's own counts (secret-service: skipped, removed) follow the store's.
            let more = extra.compactMap { name, value -> String? in if case .number(let n) = value { return ", \(name) \(n)" }; return nil }.joined()
            Output.line("\(verb) \(report.imported.count), unchanged \(report.unchanged.count), replaced \(report.replaced.count), conflicts \(report.conflicts.count)" + more)
            for key in report.conflicts { Output.error("conflict: '\(key)' holds a different value; kept (--replace replaces it)") }
        }
        return report.conflicts.isEmpty ? Exit.success : Exit.failure
    }
}
