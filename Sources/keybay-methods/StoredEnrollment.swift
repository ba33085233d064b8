// SPDX-License-Identifier: Apache-2.0
import Keybay

/// `enroll` and `change` after their ceremony: the prepared enrollment is committed and its
/// result printed, with the secret the plugin showed (a recovery key), if any, once. Text a
/// plugin shows that is not plain is refused before anything is stored. When that secret may not
/// have reached standard output (a failed or short write, a failing close), the enrollment is
/// taken back (`undone` says how): a secret nobody may have is never left as a way in. A commit
/// that took effect but could not be confirmed durable is printed as stored, then fails.
enum StoredEnrollment {
    /// `enroll`'s result: the method, and the verb of its text line.
    static func commitAndPrint(_ c: Command.Context, _ prepared: PreparedEnrollment, enrolledAs verb: String, undone: String) throws {
        let method = prepared.method
        var fields: [(String, JSON.Value)] = [("id", .string(method.id)), ("plugin", .string(method.plugin)), ("label", .string(method.label))]
        if prepared.shownSecret != nil { fields.append(("methodId", .string(method.id))) }
        try commitAndPrint(c, prepared, json: fields,
                           text: "\(verb) \(method.plugin) method \(method.id) (\(method.label)); the store now needs the platform root and one method",
                           undone: undone)
    }

    static func commitAndPrint(_ c: Command.Context, _ prepared: PreparedEnrollment, json fields: [(String, JSON.Value)], text: String,
                               undone: String) throws {
        let shown = prepared.shownSecret
        if let shown {
            do {
                try ShownSecretOutput.check(shown)
            } catch {
                prepared.discard()
                throw error
            }
        }
        // The library's order: commit, then show, then take back if showing failed.
        let printed = { (shown: KeybayShownSecret?) throws in
            if c.a.json {
                let object = JSON.render(.object(fields))
                if let shown { ShownSecretOutput.printJSON(object, adding: shown) } else { Output.line(object) }
            } else {
                Output.line(text)
                if let shown { ShownSecretOutput.printText(shown) }
            }
            guard let shown else { return }
            Output.closeStandardOutput()
            if let failure = Output.standardOutputFailure {
                throw KeybayError(.io, "cannot write standard output: \(failure); the \(shown.kind.displayName) may not have been shown in full, so \(undone)")
            }
        }
        var unconfirmed: KeybayError?
        do {
            // (The session stays open: taking the enrollment back may need it.)
            try prepared.commit(showingSecretWith: { try printed($0) })
        } catch let e as KeybayError where e.tookEffect && e.methodID == nil {
            // The commit took effect unconfirmed (printed below, or shown already); a failed
            // take-back names the method and is reported as it is.
            unconfirmed = e
        }
        if shown == nil { try printed(nil) }
        if let unconfirmed { throw unconfirmed }
    }
}
