// SPDX-License-Identifier: Apache-2.0
/// What one check came to: its name (its table entry's), its outcome and what was tried and
/// what came back (or, for a check that did not run, why). Public to the CLI, which reads it as
/// a client of this module; the module is no product.
public struct CheckResult: Sendable, Equatable {
    /// Passed, failed, skipped (the runner cannot try it) or not run (a step it needs failed).
    public enum Outcome: String, Sendable { case pass, fail, skip, notRun = "not-run" }
    /// The key of the table entry that gave this result (`Check.key`).
    public let key: String
    /// The check's name, as reports show it.
    public let name: String
    /// What it came to.
    public let outcome: Outcome
    /// What was tried and what came back, or why it did not run.
    public let detail: String
    /// True only for a check that ran and passed.
    public var passed: Bool { outcome == .pass }
}
