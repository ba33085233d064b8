// SPDX-License-Identifier: Apache-2.0
/// What a check's run came to, and what becomes of the checks after it.
struct Verdict {
    /// The later checks of a run that stopped.
    enum Rest {
        /// Not listed: the run ends (the file is not a plugin that loads, so what would apply is unknown).
        case unlisted
        /// Each later check that applies is listed with this outcome and detail, by its own name.
        case marked(CheckResult.Outcome, String)
    }

    let outcome: CheckResult.Outcome
    let detail: String
    /// nil: the checks after it run.
    var rest: Rest? = nil

    static func pass(_ detail: String = "") -> Verdict { Verdict(outcome: .pass, detail: detail) }
    static func fail(_ detail: String) -> Verdict { Verdict(outcome: .fail, detail: detail) }
    static func skip(_ detail: String) -> Verdict { Verdict(outcome: .skip, detail: detail) }
    /// Passes (showing `shown`, what came back, if anything), or fails with `failure`: what was
    /// tried and what came back.
    static func check(_ passed: Bool, _ failure: String, shown: String = "") -> Verdict {
        passed ? .pass(shown) : .fail(failure)
    }
    /// This verdict, then the run stops as `rest` says.
    func then(_ rest: Rest) -> Verdict { Verdict(outcome: outcome, detail: detail, rest: rest) }
}
