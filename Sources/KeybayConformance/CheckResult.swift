// SPDX-License-Identifier: Apache-2.0
/// What one check came to: its name (its table entry's), its outcome and what was tried and
/// what came back (or, for a check that did not run, why).
package struct CheckResult: Sendable, Equatable {
    package enum Outcome: String, Sendable { case pass, fail, skip, notRun = "not-run" }
    /// The key of the table entry that gave this result (`Check.key`).
    package let key: String
    package let name: String
    package let outcome: Outcome
    package let detail: String
    /// True only for a check that ran and passed.
    package var passed: Bool { outcome == .pass }
}
