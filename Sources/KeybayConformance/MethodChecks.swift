// SPDX-License-Identifier: Apache-2.0
import Keybay

/// The checks of a method plugin: probe, one enrollment with the scripted host, then what
/// must hold for its parameters and M.
enum MethodChecks {
    static let secret = "plugin-check secret 1"
    static let otherSecret = "plugin-check secret 2"
    static let unknownOption = "plugin-check-unknown-option"

    static let table: [Check] = [
        Check("probe-never-prompts", "probe never prompts", appliesTo: Applies.methods) { run in
            let plugin = try run.needs(run.plugin, "loaded plugin")
            let host = ScriptedHost(secret: "x", refuse: true)
            run.probe = CallOutcome { try plugin.probe(host) }
            return .check(host.asked == 0, "probe asked for a secret \(host.asked) time(s) through a host that cannot ask")
        },
        Check("probe-answers", "probe answers OK or NOT_AVAILABLE", appliesTo: Applies.methods) { run in
            let probe = try run.needs(run.probe, "probe outcome")
            let verdict = Verdict.check(probe.code == nil || probe.code == .methodUnavailable, "probe returned \(probe.text)",
                                        shown: probe.code == nil ? "" : probe.text)
            guard probe.code == .methodUnavailable else { return verdict }
            return verdict.then(.marked(.skip, "the method is not available here (probe answered NOT_AVAILABLE)"))
        },
        Check("enroll", "enroll with a scripted host returns parameters and a 32-byte M", appliesTo: Applies.methods) { run in
            let plugin = try run.needs(run.plugin, "loaded plugin")
            let host = ScriptedHost(secret: secret, pin: run.pin)
            do {
                let enrolled = try plugin.enroll(options: run.options, interaction: host)
                run.enrolled = enrolled
                run.shownKey = host.shownSecret
                return .pass("\(enrolled.params.count) bytes of parameters with \(spelled(run.options)); "
                             + (host.asked == 0 ? "asked the host for no secret" : "asked for a secret \(host.asked) time(s)"))
            } catch {
                return Verdict.fail("enroll with \(spelled(run.options)) returned \(error)" + optionHint(run)).then(.marked(.notRun, "needs a successful enroll"))
            }
        },
        // A plugin that showed a secret (a recovery key) is answered with it; the wrong secret
        // is then the one a second enrollment showed, which must differ.
        Check("second-enrollment-shows", "a second enrollment shows a different secret", appliesTo: Applies.methods { $0.shownKey != nil }) { run in
            let plugin = try run.needs(run.plugin, "loaded plugin")
            let second = ScriptedHost(secret: otherSecret)
            let got = CallOutcome { _ = try plugin.enroll(options: run.options, interaction: second) }
            run.otherKey = second.shownSecret
            return .check(run.otherKey != nil && run.otherKey != run.shownKey,
                          run.otherKey == nil ? "a second enroll returned \(got.text) and showed no secret" : "a second enroll showed the same secret")
        },
        sameM("unwrap", forVerification: false),
        sameM("verify", forVerification: true),
        Check("wrong-secret", "a wrong secret gives a different M (or WRONG_SECRET)", appliesTo: Applies.methods, run: wrongSecret),
        Check("wrong-credential", { "a second credential (\(spelled($0.wrongOptions, as: "--wrong-opt"))) gives a different M" },
              appliesTo: Applies.methods { !$0.wrongOptions.isEmpty }, run: wrongCredential),
        Check("interaction-unavailable", "with no interaction available, unwrap reports INTERACTION_UNAVAILABLE",
              appliesTo: Applies.methods { $0.plugin?.isInteractive == true }) { run in
            let plugin = try run.needs(run.plugin, "loaded plugin"), enrolled = try run.needs(run.enrolled, "enrollment")
            let refusing = ScriptedHost(secret: "", refuse: true)
            let got = CallOutcome { _ = try plugin.unwrap(enrolled, interaction: refusing) }
            if got.code == nil && refusing.asked == 0 {
                return .skip("unwrap asked the host for nothing (its interaction is a touch or a device), so there was nothing to refuse")
            }
            return .check(got.code == .interactionRequired,
                          "unwrap through a host whose ask_secret and confirm answer INTERACTION_UNAVAILABLE returned \(got.text)")
        },
        malformed("empty") { _ in [] },
        malformed("truncated") { Array($0.dropLast()) },
        malformed("extended") { $0 + [0] },
        malformed("garbage") { [UInt8](repeating: 0xff, count: max(1, $0.count)) },
        Check("unknown-option", "an unknown enroll option gives INVALID_OPTION with a set_error line", appliesTo: Applies.methods) { run in
            let plugin = try run.needs(run.plugin, "loaded plugin")
            let host = ScriptedHost(secret: secret, pin: run.pin)
            let unknown = run.options + [(unknownOption, "1")]
            let got = CallOutcome { _ = try plugin.enroll(options: unknown, interaction: host) }
            return .check(got.code == .invalidArgument && host.gaveErrorLine,
                          got.code != .invalidArgument ? "enroll with \(spelled(unknown)) returned \(got.text)"
                          : host.gaveErrorLine ? "" : "enroll with \(spelled(unknown)) returned INVALID_OPTION without a set_error line naming the option")
        },
        Check("describe", "describe returns one line of text", appliesTo: Applies.methods) { run in
            let plugin = try run.needs(run.plugin, "loaded plugin"), enrolled = try run.needs(run.enrolled, "enrollment")
            switch Result(catching: { try plugin.describe(params: enrolled.params) }) {
            case .success(let text):
                return .check(!text.isEmpty && !text.contains("\n"),
                              "describe of the enrolled parameters returned " + (text.isEmpty ? "an empty text" : "several lines: \"\(text)\""), shown: "\"\(text)\"")
            case .failure(let e): return .fail("describe of the enrolled parameters returned \(e)")
            }
        },
        // free_buffer (called under the plugin's lock, like every call) must leave the buffer
        // empty: data NULL, length 0.
        Check("free-buffer", "buffers come back through free_buffer, which clears them", appliesTo: Applies.methods) { run in
            let plugin = try run.needs(run.plugin, "loaded plugin"), enrolled = try run.needs(run.enrolled, "enrollment")
            guard let left = plugin.bufferLeftByFreeBuffer(describing: enrolled.params) else { return .skip("describe handed out no buffer to free") }
            return .check(!left.dataLeft && left.length == 0, "after free_buffer the buffer still holds \(left.dataLeft ? "a pointer" : "no data") and length \(left.length)")
        },
        // Last: it changes the credential every check above enrolled or unwrapped with.
        Check("changed-credential", { "after --change-credential '\($0.changeCredential ?? "")', unwrap of the enrolled parameters gives another M (or WRONG_SECRET)" },
              appliesTo: Applies.methods { $0.changeCredential != nil }, run: changedCredential),
    ]

    /// Unwrap (or verify) of the enrolled parameters, answered as at enroll, gives the enrolled M.
    static func sameM(_ which: String, forVerification: Bool) -> Check {
        Check(which, "\(which) of the enrolled parameters returns the same M", appliesTo: Applies.methods) { run in
            let plugin = try run.needs(run.plugin, "loaded plugin"), enrolled = try run.needs(run.enrolled, "enrollment")
            let host = ScriptedHost(secret: secret, pin: run.pin, recoveryKey: run.shownKey)
            switch Result(catching: { try plugin.unwrap(enrolled, interaction: host, forVerification: forVerification) }) {
            case .success(let m): return .check(m.equals(enrolled.secret), "\(which) answered '\(secret)' as at enroll returned another M")
            case .failure(let e): return .fail("\(which) answered '\(secret)' as at enroll returned \(e)")
            }
        }
    }

    /// Parameters made from the enrolled ones (`kind`) must give MALFORMED_PARAMS with a set_error line.
    static func malformed(_ kind: String, _ variant: @escaping @Sendable ([UInt8]) -> [UInt8]) -> Check {
        Check("malformed-\(kind)", "\(kind) parameters give MALFORMED_PARAMS with a set_error line", appliesTo: Applies.methods) { run in
            let plugin = try run.needs(run.plugin, "loaded plugin"), enrolled = try run.needs(run.enrolled, "enrollment")
            let params = variant(enrolled.params)
            guard params != enrolled.params else { return .skip("these are the enrolled parameters (\(params.count) bytes)") }
            let host = ScriptedHost(secret: secret, pin: run.pin, recoveryKey: run.shownKey)
            let got = CallOutcome { _ = try plugin.unwrap(enrolled, params: params, interaction: host) }
            return .check(got.code == .malformed && host.gaveErrorLine,
                          got.code != .malformed ? "unwrap of \(params.count) bytes returned \(got.text)"
                          : host.gaveErrorLine ? "" : "unwrap of \(params.count) bytes returned MALFORMED_PARAMS without a set_error line saying what is wrong")
        }
    }

    /// A different answer to ask_secret must give another M; a method that asks for nothing
    /// cannot be shown a wrong secret this way (the --wrong-opt check is its way).
    @Sendable static func wrongSecret(_ run: CheckRun) throws -> Verdict {
        let plugin = try run.needs(run.plugin, "loaded plugin"), enrolled = try run.needs(run.enrolled, "enrollment")
        let host = ScriptedHost(secret: otherSecret, recoveryKey: run.otherKey)
        let tried = run.otherKey != nil ? "unwrap answered with the secret a second enrollment showed"
                                        : "unwrap answered '\(otherSecret)' (enrolled with \(run.pin != nil ? "the --pin-fd PIN" : "'\(secret)'"))"
        switch Result(catching: { try plugin.unwrap(enrolled, interaction: host) }) {
        case .failure(let e as KeybayError) where e.code == .wrongSecret:
            return .pass("\(tried) returned WRONG_SECRET")
        case .failure(let e):
            return .fail("\(tried) returned \(e); expected another M or WRONG_SECRET")
        case .success where host.asked == 0:
            let example = plugin.options.first.map { "--wrong-opt \($0.name)=…" } ?? "--wrong-opt NAME=VALUE"
            let covered = run.changeCredential != nil ? "; the --change-credential check below covers it"
                : run.wrongOptions.isEmpty ? "; give a second credential with \(example), or change it between enroll and unwrap with --change-credential CMD"
                : "; the --wrong-opt check below covers it"
            return .skip("unwrap asked the host for no secret, so plugin-check cannot present a wrong one" + covered)
        case .success(let m):
            return .check(!m.equals(enrolled.secret), "\(tried) returned the enrolled M: M does not depend on the secret")
        }
    }

    /// Enrolls a second credential (the options with `wrongOptions` laid over them): its M
    /// must differ, each enrollment's parameters must unwrap to its own M, and the first
    /// credential must give the same M when enrolled again (else a different M shows nothing).
    @Sendable static func wrongCredential(_ run: CheckRun) throws -> Verdict {
        let plugin = try run.needs(run.plugin, "loaded plugin"), enrolled = try run.needs(run.enrolled, "enrollment")
        // `options` with `wrongOptions` laid over them: a name in both takes the wrong value.
        let secondOptions = run.options.filter { o in !run.wrongOptions.contains { $0.0 == o.0 } } + run.wrongOptions
        let first = spelled(run.options), second = spelled(secondOptions)
        var step = "enroll with \(second)"
        do {
            let secondHost = ScriptedHost(secret: secret, pin: run.pin)
            let other = try plugin.enroll(options: secondOptions, interaction: secondHost)
            step = "unwrap of the parameters enrolled with \(second)"
            let otherHost = ScriptedHost(secret: secret, pin: run.pin, recoveryKey: secondHost.shownSecret)
            guard try plugin.unwrap(other, interaction: otherHost).equals(other.secret) else {
                return .fail("\(step) returned another M than that enroll")
            }
            step = "unwrap of the parameters enrolled with \(first), after enrolling \(second)"
            guard try plugin.unwrap(enrolled, interaction: ScriptedHost(secret: secret, pin: run.pin, recoveryKey: run.shownKey)).equals(enrolled.secret) else {
                return .fail("\(step) returned another M than at enroll (does unwrap use state the last enroll left?)")
            }
            guard !other.secret.equals(enrolled.secret) else {
                return .fail("enroll with \(first) and with \(second) returned the same M: M does not depend on the credential")
            }
            step = "a second enroll with \(first)"
            let again = try plugin.enroll(options: run.options, interaction: ScriptedHost(secret: secret, pin: run.pin))
            if again.secret.equals(enrolled.secret) {
                return .pass("\(first) gives the same M at every enrollment, \(second) another")
            }
            return .skip("inconclusive: two enrollments with \(first) gave different M (the parameters carry a random value), "
                         + "so another M for \(second) shows nothing; "
                         + (run.changeCredential != nil ? "the --change-credential check below covers it"
                            : "change the credential between enroll and unwrap with --change-credential CMD"))
        } catch {
            return .fail("\(step) returned \(error)")
        }
    }

    /// Runs the command (`/bin/sh -c`, standard input /dev/null, its output on standard error),
    /// which must exit 0, then unwraps the first enrollment's parameters with the same
    /// answers: the credential changed, so M must differ or unwrap say WRONG_SECRET. The one
    /// check that proves a method asking for nothing depends on its credential even when its
    /// parameters carry a salt (two enrollments differ, so --wrong-opt is inconclusive).
    @Sendable static func changedCredential(_ run: CheckRun) throws -> Verdict {
        let plugin = try run.needs(run.plugin, "loaded plugin"), enrolled = try run.needs(run.enrolled, "enrollment")
        let command = try run.needs(run.changeCredential, "--change-credential command")
        let status = ShellCommand.run(command)
        guard status == 0 else {
            return .fail(status < 0 ? "/bin/sh -c '\(command)' could not be started"
                         : status >= 256 ? "/bin/sh -c '\(command)' was killed by signal \(status - 256)"
                         : "/bin/sh -c '\(command)' exited \(status); the credential was not changed")
        }
        let tried = "unwrap of the parameters enrolled before '\(command)', answered as at enroll,"
        switch Result(catching: { try plugin.unwrap(enrolled, interaction: ScriptedHost(secret: secret, pin: run.pin, recoveryKey: run.shownKey)) }) {
        case .success(let m):
            return .check(!m.equals(enrolled.secret), "\(tried) returned the enrolled M: M does not depend on the credential")
        case .failure(let e as KeybayError) where e.code == .wrongSecret:
            return .pass("\(tried) returned WRONG_SECRET")
        case .failure(let e):
            return .fail("\(tried) returned \(e); expected another M or WRONG_SECRET")
        }
    }

    static func spelled(_ options: [(String, String)], as flag: String = "--opt") -> String {
        options.isEmpty ? "no options" : options.map { "\(flag) \($0.0)=\($0.1)" }.joined(separator: " ")
    }

    /// For a failed enrollment: the declared options plugin-check was not given.
    static func optionHint(_ run: CheckRun) -> String {
        let given = Set(run.options.map(\.0))
        let missing = (run.plugin?.options ?? []).filter { !given.contains($0.name) }
        guard !missing.isEmpty else { return "" }
        return "; hint: enroll may need options: " + missing.map { "--opt \($0.name)=… (\($0.help))" }.joined(separator: ", ")
            + "; give them as plugin-check PATH.so --opt NAME=VALUE"
    }
}
