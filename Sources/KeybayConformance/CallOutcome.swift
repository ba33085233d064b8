// SPDX-License-Identifier: Apache-2.0
import Keybay

/// What a call came back with, for a FAIL detail: "OK" (code nil) or the error with its code.
struct CallOutcome {
    let code: KeybayError.Code?
    let text: String

    init(_ body: () throws -> Void) {
        do {
            try body()
            (code, text) = (nil, "OK")
        } catch let e as KeybayError {
            (code, text) = (e.code, e.description)
        } catch {
            (code, text) = (.pluginFailed, "\(error)")
        }
    }
}
