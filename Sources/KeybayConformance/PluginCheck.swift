// SPDX-License-Identifier: Apache-2.0
import Keybay

/// `keybay-methods plugin-check PATH.so`: a conformance run for plugin authors. It loads the
/// plugin through the real loader (every refusal applies), then drives each operation with a
/// scripted host and checks the documented behaviour. Each check passes, fails (with a detail
/// saying what was tried and what came back), is skipped (the runner has no way to try it, and
/// says why) or is not run (an earlier step it needs failed).
public enum PluginCheck {
    /// Every check, in the order they run: those of any file, then a method's, then a root's.
    static let table: [Check] = FileChecks.table + MethodChecks.table + RootChecks.table

    /// Runs every check of `table` that applies to the plugin at `path`; `options` are passed
    /// to `enroll`. `wrongOptions`, laid over `options`, enroll a second, different credential:
    /// the way to check a method that asks the host for no secret (a key file, a device without
    /// a PIN). `changeCredential`, a shell command run (`/bin/sh -c`) after every other check,
    /// changes the enrolled credential (`cp b.key a.key`): the enrolled parameters must then
    /// unwrap to another M or WRONG_SECRET, which proves the dependency even when the
    /// parameters carry a salt. `pin`, for a method whose device fixes its PIN (a PKCS#11
    /// token), answers every PIN request except the wrong-secret check's, which presents one
    /// wrong PIN. `isolation` is where the plugin runs, by a host's rule (a root outside the
    /// installation is checked only with `.inProcess`).
    public static func run(path: String, options: [(String, String)] = [], wrongOptions: [(String, String)] = [],
                           changeCredential: String? = nil, pin: SecureBytes? = nil,
                           isolation: KeybayPluginIsolation = .fromEnvironment) -> [CheckResult] {
        run(path: path, options: options, wrongOptions: wrongOptions, changeCredential: changeCredential, pin: pin, isolation: isolation, table: table)
    }

    static func run(path: String, options: [(String, String)] = [], wrongOptions: [(String, String)] = [],
                    changeCredential: String? = nil, pin: SecureBytes? = nil, isolation: KeybayPluginIsolation = .fromEnvironment,
                    table: [Check]) -> [CheckResult] {
        let run = CheckRun(path: path, options: options, wrongOptions: wrongOptions, changeCredential: changeCredential, pin: pin, isolation: isolation)
        defer { run.finish() }
        var results: [CheckResult] = []
        var stopped: Verdict.Rest?
        for check in table where check.appliesTo(run) {
            let name = check.name(run)
            switch stopped {
            case .unlisted?:
                return results
            case .marked(let outcome, let why)?:
                results.append(CheckResult(key: check.key, name: name, outcome: outcome, detail: why))
                continue
            case nil:
                break
            }
            let verdict: Verdict
            do {
                verdict = try check.run(run)
            } catch {
                verdict = Verdict.fail("\(error)").then(.marked(.notRun, "needs '\(name)', which failed"))
            }
            if !(check.quietWhenPassing && verdict.outcome == .pass) {
                results.append(CheckResult(key: check.key, name: name, outcome: verdict.outcome, detail: verdict.detail))
            }
            stopped = verdict.rest
        }
        return results
    }
}
