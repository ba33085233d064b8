// SPDX-License-Identifier: Apache-2.0
import Keybay

/// A change that took effect but could not be confirmed durable (the new store is in place): the
/// command prints its result as for a success, then fails with that error, so that what a
/// command prints is what is on disk.
extension Command {
    /// Runs a change; such an unconfirmed one is returned instead of thrown.
    static func tookEffect(_ change: () throws -> Void) throws -> KeybayError? {
        do {
            try change()
            return nil
        } catch let e as KeybayError where e.tookEffect {
            return e
        }
    }

    /// Success, or the unconfirmed change's error once its result is printed.
    static func succeeded(unless unconfirmed: KeybayError?) throws -> Int32 {
        if let unconfirmed { throw unconfirmed }
        return Exit.success
    }
}
