// SPDX-License-Identifier: Apache-2.0
/// What an import did (or, for a dry run, would do), by record key, each list in ascending byte order.
public struct KeybayImportReport: Sendable, Equatable {
    /// Keys that had no record and were stored.
    public var imported: [String] = []
    /// Keys whose record already held the same value: nothing written.
    public var unchanged: [String] = []
    /// Keys whose record held a different value, kept as it was (an import without `replace`).
    public var conflicts: [String] = []
    /// Keys whose different value was replaced (an import with `replace`).
    public var replaced: [String] = []
    /// Whether nothing was written because the import was a dry run.
    public var dryRun = false

    /// An empty report.
    public init() {}
}
