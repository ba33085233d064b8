// SPDX-License-Identifier: Apache-2.0
import Keybay
import KeybayConformance

/// `plugin-check PATH.so`: the conformance run for a plugin, one line a check; exit 1 if any failed.
extension Command {
    static func pluginCheck(_ c: Context) throws -> Int32 {
        let a = c.a
        try a.expect(["PATH.so"])
        // A device fixes its PIN: the real one, from --pin-fd, answers where a scripted one would not do.
        let pin = try a.secretFDs.pin.map { try c.interaction.descriptorSecret($0, what: "PIN") }
        let results = PluginCheck.run(path: a.positionals[0], options: a.options, wrongOptions: a.wrongOptions,
                                      changeCredential: a.changeCredential, pin: pin)
        let count = { (o: CheckResult.Outcome) in results.filter { $0.outcome == o }.count }
        if a.json {
            Output.line(JSON.render(.array(results.map {
                .object([("check", .string($0.name)), ("result", .string($0.outcome.rawValue)), ("passed", .bool($0.passed)), ("detail", .string($0.detail))])
            })))
        } else {
            let tags: [CheckResult.Outcome: String] = [.pass: "PASS", .fail: "FAIL", .skip: "SKIP", .notRun: "NOT RUN"]
            for r in results { Output.line("\(tags[r.outcome]!)  \(r.name)\(r.detail.isEmpty ? "" : ": " + r.detail)") }
            Output.line("\(count(.pass)) passed, \(count(.fail)) failed, \(count(.skip)) skipped, \(count(.notRun)) not run")
        }
        return count(.fail) == 0 ? Exit.success : Exit.failure
    }
}
