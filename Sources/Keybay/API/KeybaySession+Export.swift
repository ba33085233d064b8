// SPDX-License-Identifier: Apache-2.0
/// Taking records out on purpose (an age file to recipients the user holds) and bringing them in
/// (an age export, or records read from elsewhere), with the same conflict rules everywhere.
extension KeybaySession {
    /// The store's records (or those of `keys`), in the export layout (docs/format.md,
    /// "Export"), encrypted with age to `recipients`. Never plaintext.
    ///
    /// A session that reads through the keybay agent is refused unless `allowAgent`: an unlocked
    /// session must not hand the whole store out without its unlock method being used.
    /// - Parameters:
    ///   - recipients: One or more `age1…` X25519 recipients.
    ///   - keys: The keys to export; empty for every record.
    ///   - allowAgent: Allow the export through the agent.
    /// - Returns: The age file.
    /// - Throws: `.invalidArgument` for a bad or missing recipient, `.authenticationRequired`
    ///   through the agent without `allowAgent`; for `keys`, `.invalidKey`, and `.invalidArgument`
    ///   naming keys without a record; what ``getMany(_:)`` throws.
    public func export(to recipients: [String], keys: [String] = [], allowAgent: Bool = false) throws -> [UInt8] {
        guard !recipients.isEmpty else { throw KeybayError(.invalidArgument, "an export needs at least one age recipient") }
        let publicKeys = try recipients.map(AgeX25519.parseRecipient)
        if !allowAgent, records is AgentRecords {
            guard !records.isClosed else { throw closedError() }
            throw KeybayError(.authenticationRequired, "\(storePath) is unlocked in the keybay agent: an export opens it with its unlock method, or allows the agent explicitly")
                .with(path: storePath)
        }
        let wanted = keys.isEmpty ? try self.keys() : Array(Set(keys)).sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }
        var values = try getMany(wanted)
        defer { for k in values.keys { Sodium.wipe(&values[k]!) } }
        let missing = wanted.filter { values[$0] == nil }
        guard missing.isEmpty else {
            throw KeybayError(.invalidArgument, "no record \(missing.map { "'\($0)'" }.joined(separator: ", ")) in \(storePath)")
        }
        let layout = ExportRecords.encode(wanted.map { ($0, values[$0]!) })
        return try layout.withUnsafeBytes { try AgeFile.encrypt($0, to: publicKeys) }
    }

    /// Imports an export: decrypts `file` with the identities in `identityFile`, then
    /// ``importRecords(_:replace:dryRun:)``.
    ///
    /// - Parameters:
    ///   - file: An age file whose payload is in the export layout.
    ///   - identityFile: An identity file as `age-keygen` writes it.
    ///   - replace: Replace records that hold a different value.
    ///   - dryRun: Report what would be done, write nothing.
    /// - Returns: What was (or would be) done.
    /// - Throws: `.invalidArgument` for an identity file without identities; `.wrongSecret` when
    ///   none matches; `.malformed` or `.unsupported` for a file that is not age v1 or a payload
    ///   not in the layout; `.integrity` when the header or payload does not authenticate; what
    ///   ``importRecords(_:replace:dryRun:)`` throws.
    public func importAge(_ file: [UInt8], identityFile: [UInt8], replace: Bool = false, dryRun: Bool = false) throws -> KeybayImportReport {
        let identities = try KeybayAge.identities(fromFile: identityFile)
        let plaintext: AgePlaintext
        do { plaintext = try AgeFile.decrypt(file, identities: identities) } catch { throw error.keybayError("the age file") }
        var records = try plaintext.withUnsafeBytes { try ExportRecords.decode($0, context: "the age file's payload") }
        defer { for i in records.indices { Sodium.wipe(&records[i].value) } }
        return try importRecords(records, replace: replace, dryRun: dryRun)
    }

    /// Stores `records` under the import rules: a key without a record is imported, one with the
    /// same value is left unchanged, one with a different value is a conflict and kept unless
    /// `replace`. A session that reads the store itself writes all of them in one commit; each
    /// stored record is then read back and compared.
    ///
    /// - Parameters:
    ///   - records: Keys (each once) and values.
    ///   - replace: Replace records that hold a different value.
    ///   - dryRun: Report what would be done, write nothing.
    /// - Returns: What was (or would be) done.
    /// - Throws: `.invalidKey`, `.valueTooLarge`, `.invalidArgument` for a key given twice (all
    ///   before anything is written); `.integrity` when a record does not read back as written;
    ///   the write failures of ``set(_:bytes:)``.
    public func importRecords(_ records: [(key: String, value: [UInt8])], replace: Bool = false, dryRun: Bool = false) throws -> KeybayImportReport {
        var seen: Set<String> = []
        for record in records {
            _ = try RecordKey.validated(record.key)
            try LocalRecords.checkValue(record.value, for: record.key)
            guard seen.insert(record.key).inserted else { throw KeybayError(.invalidArgument, "the key '\(record.key)' is given twice") }
        }
        var report = KeybayImportReport()
        report.dryRun = dryRun
        if let local = self.records as? LocalRecords, !dryRun {
            try local.write { snapshot in
                report = KeybayImportReport()
                let toWrite = classify(records, existing: try existingValues(records, in: snapshot), replace: replace, into: &report)
                guard !toWrite.isEmpty else { return nil }
                let written = Set(toWrite.map { Array(records[$0].key.utf8) })
                var frames = LocalRecords.frames(of: snapshot, excluding: []).filter { !written.contains($0.key) }
                for i in toWrite {
                    frames.append(records[i].value.withUnsafeBytes { StoreEncoder.sealFrame(key: Array(records[i].key.utf8), value: $0, keys: snapshot.keys) })
                }
                return frames.sorted { $0.key.lexicographicallyPrecedes($1.key) }
            }
        } else {
            // Through the agent, one write per record; a dry run reads what is there.
            var existing = try self.records.getMany(records.map(\.key))
            defer { for i in existing.indices { if existing[i] != nil { Sodium.wipe(&existing[i]!) } } }
            let toWrite = classify(records, existing: existing, replace: replace, into: &report)
            if !dryRun { for i in toWrite { try self.records.set(records[i].key, value: records[i].value) } }
        }
        if !dryRun { try verify(records, report) }
        return report
    }

    private func existingValues(_ records: [(key: String, value: [UInt8])], in snapshot: StoreSnapshot) throws -> [[UInt8]?] {
        try records.map { record in try snapshot.index(of: Array(record.key.utf8)).map { try snapshot.value(at: $0, context: storePath) } }
    }

    /// Sorts each record into the report; returns the indices of those to write.
    private func classify(_ records: [(key: String, value: [UInt8])], existing: [[UInt8]?], replace: Bool,
                          into report: inout KeybayImportReport) -> [Int] {
        var toWrite: [Int] = []
        for (i, record) in records.enumerated() {
            guard let old = existing[i] else { report.imported.append(record.key); toWrite.append(i); continue }
            if Sodium.constantTimeEqual(old, record.value) { report.unchanged.append(record.key) }
            else if replace { report.replaced.append(record.key); toWrite.append(i) }
            else { report.conflicts.append(record.key) }
        }
        let order: (String, String) -> Bool = { $0.utf8.lexicographicallyPrecedes($1.utf8) }
        report.imported.sort(by: order); report.unchanged.sort(by: order); report.conflicts.sort(by: order); report.replaced.sort(by: order)
        return toWrite
    }

    /// Reads every written record back and compares it with what was given.
    private func verify(_ records: [(key: String, value: [UInt8])], _ report: KeybayImportReport) throws {
        let written = Set(report.imported + report.replaced)
        let wanted = records.filter { written.contains($0.key) }
        guard !wanted.isEmpty else { return }
        var back = try getMany(wanted.map(\.key))
        defer { for k in back.keys { Sodium.wipe(&back[k]!) } }
        for record in wanted where !(back[record.key].map { Sodium.constantTimeEqual($0, record.value) } ?? false) {
            throw KeybayError(.integrity, "'\(record.key)' does not read back from \(storePath) as it was imported").with(path: storePath)
        }
    }
}
