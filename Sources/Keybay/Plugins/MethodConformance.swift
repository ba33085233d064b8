import CKeybayPlugin
import Glibc

extension KeybayPluginCheck {
    /// The checks of a method plugin: probe, one enrollment with the scripted host, then what
    /// must hold for its parameters and M.
    struct MethodRun {
        let plugin: LoadedPlugin
        let options: [(String, String)]
        let wrongOptions: [(String, String)]
        /// A shell command (`/bin/sh -c`) that changes the enrolled credential (`cp b.key a.key`),
        /// run after every other check: the enrolled parameters must then unwrap to another M.
        let changeCredential: String?

        static let secret = "plugin-check secret 1"
        static let otherSecret = "plugin-check secret 2"
        static let unknownOption = "plugin-check-unknown-option"
        static let enrollName = "enroll with a scripted host returns parameters and a 32-byte M"
        static let malformedKinds = ["empty", "truncated", "extended", "garbage"]

        /// The checks that need an enrollment, in the order they run.
        var enrolledCheckNames: [String] {
            var names = ["unwrap of the enrolled parameters returns the same M", "verify of the enrolled parameters returns the same M",
                         "a wrong secret gives a different M (or WRONG_SECRET)"]
            if !wrongOptions.isEmpty { names.append(wrongCredentialName) }
            if plugin.isInteractive { names.append("with no interaction available, unwrap reports INTERACTION_UNAVAILABLE") }
            names += Self.malformedKinds.map { "\($0) parameters give MALFORMED_PARAMS with a set_error line" }
            names += ["an unknown enroll option gives INVALID_OPTION with a set_error line", "describe returns one line of text",
                      "buffers come back through free_buffer, which clears them"]
            if changeCredential != nil { names.append(changedCredentialName) }
            return names
        }

        var wrongCredentialName: String { "a second credential (\(Self.spelled(wrongOptions, as: "--wrong-opt"))) gives a different M" }

        var changedCredentialName: String {
            "after --change-credential '\(changeCredential ?? "")', unwrap of the enrolled parameters gives another M (or WRONG_SECRET)"
        }

        static func spelled(_ options: [(String, String)], as flag: String = "--opt") -> String {
            options.isEmpty ? "no options" : options.map { "\(flag) \($0.0)=\($0.1)" }.joined(separator: " ")
        }

        /// `options` with `wrongOptions` laid over them: a name in both takes the wrong value.
        var secondOptions: [(String, String)] {
            options.filter { o in !wrongOptions.contains { $0.0 == o.0 } } + wrongOptions
        }

        /// For a failed enrollment: the declared options plugin-check was not given.
        var optionHint: String {
            let given = Set(options.map(\.0))
            let missing = plugin.options.filter { !given.contains($0.name) }
            guard !missing.isEmpty else { return "" }
            return "; hint: enroll may need options: " + missing.map { "--opt \($0.name)=… (\($0.help))" }.joined(separator: ", ")
                + "; give them as plugin-check PATH.so --opt NAME=VALUE"
        }

        func checks(_ results: inout Results) {
            let probeHost = ScriptedHost(secret: "x", refuse: true)
            let probe = outcome { try plugin.call(probeHost, "probe") { d, h in d.pointee.probe(h) } }
            results.check("probe never prompts", probeHost.asked == 0, "probe asked for a secret \(probeHost.asked) time(s) through a host that cannot ask")
            let probeAnswered = probe.code == nil || probe.code == .methodUnavailable
            results.check("probe answers OK or NOT_AVAILABLE", probeAnswered, "probe returned \(probe.text)", shown: probe.code == nil ? "" : probe.text)
            if probe.code == .methodUnavailable {
                for name in [Self.enrollName] + enrolledCheckNames { results.add(name, .skip, "the method is not available here (probe answered NOT_AVAILABLE)") }
                return
            }

            let host = ScriptedHost(secret: Self.secret)
            let enrolled: (params: [UInt8], secret: SecureBytes)
            do {
                enrolled = try plugin.enroll(options: options, interaction: host)
                results.pass(Self.enrollName, "\(enrolled.params.count) bytes of parameters with \(Self.spelled(options)); "
                             + (host.asked == 0 ? "asked the host for no secret" : "asked for a secret \(host.asked) time(s)"))
            } catch {
                results.fail(Self.enrollName, "enroll with \(Self.spelled(options)) returned \(error)" + optionHint)
                for name in enrolledCheckNames { results.add(name, .notRun, "needs a successful enroll") }
                return
            }
            // A plugin that showed a secret (a recovery key) is answered with it; the wrong secret
            // is then the one a second enrollment showed, which must differ.
            let shownKey = host.shown.withLock { $0 }
            var otherKey: [UInt8]?
            if shownKey != nil {
                let second = ScriptedHost(secret: Self.otherSecret)
                let got = outcome { _ = try plugin.enroll(options: options, interaction: second) }
                otherKey = second.shown.withLock { $0 }
                results.check("a second enrollment shows a different secret", otherKey != nil && otherKey != shownKey,
                              otherKey == nil ? "a second enroll returned \(got.text) and showed no secret" : "a second enroll showed the same secret")
            }
            let names = enrolledCheckNames
            var next = 0
            func name() -> String { defer { next += 1 }; return names[next] }

            for verification in [false, true] {
                let which = verification ? "verify" : "unwrap"
                let got = Swift.Result {
                    try plugin.unwrap(params: enrolled.params, interaction: ScriptedHost(secret: Self.secret, recoveryKey: shownKey), forVerification: verification)
                }
                switch got {
                case .success(let m): results.check(name(), m.equals(enrolled.secret), "\(which) answered '\(Self.secret)' as at enroll returned another M")
                case .failure(let e): results.fail(name(), "\(which) answered '\(Self.secret)' as at enroll returned \(e)")
                }
            }
            wrongSecretCheck(name(), enrolled, otherKey: otherKey, &results)
            if !wrongOptions.isEmpty { wrongCredentialCheck(name(), enrolled, shownKey: shownKey, &results) }
            if plugin.isInteractive {
                let refusing = ScriptedHost(secret: "", refuse: true)
                let got = outcome { _ = try plugin.unwrap(params: enrolled.params, interaction: refusing) }
                if got.code == nil && refusing.asked == 0 {
                    results.add(name(), .skip, "unwrap asked the host for nothing (its interaction is a touch or a device), so there was nothing to refuse")
                } else {
                    results.check(name(), got.code == .interactionRequired,
                                  "unwrap through a host whose ask_secret and confirm answer INTERACTION_UNAVAILABLE returned \(got.text)")
                }
            }
            let variants: [[UInt8]] = [[], Array(enrolled.params.dropLast()), enrolled.params + [0],
                                       [UInt8](repeating: 0xff, count: max(1, enrolled.params.count))]
            for params in variants {
                let check = name()
                guard params != enrolled.params else {
                    results.add(check, .skip, "these are the enrolled parameters (\(params.count) bytes)")
                    continue
                }
                let errorHost = ScriptedHost(secret: Self.secret, recoveryKey: shownKey)
                let got = outcome { _ = try plugin.unwrap(params: params, interaction: errorHost) }
                results.check(check, got.code == .malformed && errorHost.gaveErrorLine,
                              got.code != .malformed ? "unwrap of \(params.count) bytes returned \(got.text)"
                              : errorHost.gaveErrorLine ? "" : "unwrap of \(params.count) bytes returned MALFORMED_PARAMS without a set_error line saying what is wrong")
            }
            let optionHost = ScriptedHost(secret: Self.secret)
            let unknown = options + [(Self.unknownOption, "1")]
            let got = outcome { _ = try plugin.enroll(options: unknown, interaction: optionHost) }
            results.check(name(), got.code == .invalidArgument && optionHost.gaveErrorLine,
                          got.code != .invalidArgument ? "enroll with \(Self.spelled(unknown)) returned \(got.text)"
                          : optionHost.gaveErrorLine ? "" : "enroll with \(Self.spelled(unknown)) returned INVALID_OPTION without a set_error line naming the option")
            switch Swift.Result(catching: { try plugin.describe(params: enrolled.params) }) {
            case .success(let text):
                results.check(name(), !text.isEmpty && !text.contains("\n"),
                              "describe of the enrolled parameters returned " + (text.isEmpty ? "an empty text" : "several lines: \"\(text)\""), shown: "\"\(text)\"")
            case .failure(let e): results.fail(name(), "describe of the enrolled parameters returned \(e)")
            }
            freeBufferCheck(name(), enrolled.params, &results)
            // Last: it changes the credential every check above enrolled or unwrapped with.
            if let command = changeCredential { changedCredentialCheck(name(), command, enrolled, shownKey: shownKey, &results) }
        }

        /// A different answer to ask_secret must give another M; a method that asks for nothing
        /// cannot be shown a wrong secret this way (the --wrong-opt check is its way).
        private func wrongSecretCheck(_ name: String, _ enrolled: (params: [UInt8], secret: SecureBytes), otherKey: [UInt8]?,
                                      _ results: inout Results) {
            let host = ScriptedHost(secret: Self.otherSecret, recoveryKey: otherKey)
            let tried = otherKey != nil ? "unwrap answered with the secret a second enrollment showed"
                                        : "unwrap answered '\(Self.otherSecret)' (enrolled with '\(Self.secret)')"
            switch Swift.Result(catching: { try plugin.unwrap(params: enrolled.params, interaction: host) }) {
            case .failure(let e as KeybayError) where e.code == .wrongSecret:
                results.pass(name, "\(tried) returned WRONG_SECRET")
            case .failure(let e):
                results.fail(name, "\(tried) returned \(e); expected another M or WRONG_SECRET")
            case .success where host.asked == 0:
                let example = plugin.options.first.map { "--wrong-opt \($0.name)=…" } ?? "--wrong-opt NAME=VALUE"
                let covered = changeCredential != nil ? "; the --change-credential check below covers it"
                    : wrongOptions.isEmpty ? "; give a second credential with \(example), or change it between enroll and unwrap with --change-credential CMD"
                    : "; the --wrong-opt check below covers it"
                results.add(name, .skip, "unwrap asked the host for no secret, so plugin-check cannot present a wrong one" + covered)
            case .success(let m):
                results.check(name, !m.equals(enrolled.secret), "\(tried) returned the enrolled M: M does not depend on the secret")
            }
        }

        /// Enrolls a second credential (the options with `wrongOptions` laid over them): its M
        /// must differ, each enrollment's parameters must unwrap to its own M, and the first
        /// credential must give the same M when enrolled again (else a different M shows nothing).
        private func wrongCredentialCheck(_ name: String, _ enrolled: (params: [UInt8], secret: SecureBytes), shownKey: [UInt8]?,
                                          _ results: inout Results) {
            let first = Self.spelled(options), second = Self.spelled(secondOptions)
            var step = "enroll with \(second)"
            do {
                let secondHost = ScriptedHost(secret: Self.secret)
                let other = try plugin.enroll(options: secondOptions, interaction: secondHost)
                step = "unwrap of the parameters enrolled with \(second)"
                let otherHost = ScriptedHost(secret: Self.secret, recoveryKey: secondHost.shown.withLock { $0 })
                guard try plugin.unwrap(params: other.params, interaction: otherHost).equals(other.secret) else {
                    return results.fail(name, "\(step) returned another M than that enroll")
                }
                step = "unwrap of the parameters enrolled with \(first), after enrolling \(second)"
                guard try plugin.unwrap(params: enrolled.params, interaction: ScriptedHost(secret: Self.secret, recoveryKey: shownKey)).equals(enrolled.secret) else {
                    return results.fail(name, "\(step) returned another M than at enroll (does unwrap use state the last enroll left?)")
                }
                guard !other.secret.equals(enrolled.secret) else {
                    return results.fail(name, "enroll with \(first) and with \(second) returned the same M: M does not depend on the credential")
                }
                step = "a second enroll with \(first)"
                let again = try plugin.enroll(options: options, interaction: ScriptedHost(secret: Self.secret))
                if again.secret.equals(enrolled.secret) {
                    results.pass(name, "\(first) gives the same M at every enrollment, \(second) another")
                } else {
                    results.add(name, .skip, "inconclusive: two enrollments with \(first) gave different M (the parameters carry a random value), "
                                + "so another M for \(second) shows nothing; "
                                + (changeCredential != nil ? "the --change-credential check below covers it"
                                   : "change the credential between enroll and unwrap with --change-credential CMD"))
                }
            } catch {
                results.fail(name, "\(step) returned \(error)")
            }
        }

        /// Runs `command` (`/bin/sh -c`, standard input /dev/null, its output on standard error),
        /// which must exit 0, then unwraps the first enrollment's parameters with the same
        /// answers: the credential changed, so M must differ or unwrap say WRONG_SECRET. The one
        /// check that proves a method asking for nothing depends on its credential even when its
        /// parameters carry a salt (two enrollments differ, so --wrong-opt is inconclusive).
        private func changedCredentialCheck(_ name: String, _ command: String, _ enrolled: (params: [UInt8], secret: SecureBytes),
                                            shownKey: [UInt8]?, _ results: inout Results) {
            let status = Self.shell(command)
            guard status == 0 else {
                return results.fail(name, status < 0 ? "/bin/sh -c '\(command)' could not be started"
                                    : status >= 256 ? "/bin/sh -c '\(command)' was killed by signal \(status - 256)"
                                    : "/bin/sh -c '\(command)' exited \(status); the credential was not changed")
            }
            let tried = "unwrap of the parameters enrolled before '\(command)', answered as at enroll,"
            switch Swift.Result(catching: { try plugin.unwrap(params: enrolled.params, interaction: ScriptedHost(secret: Self.secret, recoveryKey: shownKey)) }) {
            case .success(let m):
                results.check(name, !m.equals(enrolled.secret), "\(tried) returned the enrolled M: M does not depend on the credential")
            case .failure(let e as KeybayError) where e.code == .wrongSecret:
                results.pass(name, "\(tried) returned WRONG_SECRET")
            case .failure(let e):
                results.fail(name, "\(tried) returned \(e); expected another M or WRONG_SECRET")
            }
        }

        /// `/bin/sh -c command` with standard input from /dev/null and standard output sent to
        /// standard error (plugin-check's own output, --json included, stays on standard output).
        /// Its exit status; 256 + the signal if it was killed; -1 if it could not be started.
        static func shell(_ command: String) -> Int32 {
            var actions = posix_spawn_file_actions_t()
            posix_spawn_file_actions_init(&actions)
            defer { posix_spawn_file_actions_destroy(&actions) }
            posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
            posix_spawn_file_actions_adddup2(&actions, 2, 1)
            let argv: [UnsafeMutablePointer<CChar>?] = ["/bin/sh", "-c", command].map { (word: String) in strdup(word) } + [nil]
            defer { argv.forEach { free($0) } }
            var pid: pid_t = 0
            guard posix_spawn(&pid, "/bin/sh", &actions, nil, argv, environ) == 0 else { return -1 }
            var status: Int32 = 0
            while waitpid(pid, &status, 0) < 0 {
                guard errno == EINTR else { return -1 }
            }
            if status & 0x7f != 0 { return 256 + (status & 0x7f) }
            return (status >> 8) & 0xff
        }

        /// free_buffer (called under the plugin's lock, like every call) must leave the buffer
        /// empty: data NULL, length 0.
        private func freeBufferCheck(_ name: String, _ params: [UInt8], _ results: inout Results) {
            var text = keybay_buffer()
            let described = (try? plugin.call(NonInteractive(), "could not describe its parameters") { d, h in LoadedPlugin.describe(d, h, params, &text) }) != nil
            // After a failure the out-buffer is the plugin's: never freed by the host.
            guard described, text.data != nil else {
                return results.add(name, .skip, "describe handed out no buffer to free")
            }
            plugin.discard(&text)
            results.check(name, text.data == nil && text.length == 0, "after free_buffer the buffer still holds \(text.data == nil ? "no data" : "a pointer") and length \(text.length)")
        }
    }
}
