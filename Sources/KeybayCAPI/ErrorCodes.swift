// SPDX-License-Identifier: Apache-2.0
import CKeybay
import Keybay

/// The C API's error numbers (keybay.h's KEYBAY_ERR_*), one per stable name. Written out, not
/// derived from the order of `KeybayError.Code`, so a new case can never renumber the others.
enum ErrorCodes {
    static let numbers: [KeybayError.Code: Int32] = [
        .invalidArgument: KEYBAY_ERR_INVALID_ARGUMENT.number, .invalidKey: KEYBAY_ERR_INVALID_KEY.number,
        .valueTooLarge: KEYBAY_ERR_VALUE_TOO_LARGE.number, .storeFull: KEYBAY_ERR_STORE_FULL.number,
        .storeNotFound: KEYBAY_ERR_STORE_NOT_FOUND.number, .alreadyInitialized: KEYBAY_ERR_ALREADY_INITIALIZED.number,
        .stateConflict: KEYBAY_ERR_STATE_CONFLICT.number, .platformKeyInvalidated: KEYBAY_ERR_PLATFORM_KEY_INVALIDATED.number,
        .rootUnavailable: KEYBAY_ERR_ROOT_UNAVAILABLE.number, .rolledBack: KEYBAY_ERR_ROLLED_BACK.number,
        .protectionMismatch: KEYBAY_ERR_PROTECTION_MISMATCH.number, .authenticationRequired: KEYBAY_ERR_AUTHENTICATION_REQUIRED.number,
        .keyChanged: KEYBAY_ERR_KEY_CHANGED.number, .malformed: KEYBAY_ERR_MALFORMED.number, .integrity: KEYBAY_ERR_INTEGRITY.number,
        .unsupported: KEYBAY_ERR_UNSUPPORTED.number, .insecurePermissions: KEYBAY_ERR_INSECURE_PERMISSIONS.number, .io: KEYBAY_ERR_IO.number,
        .methodNotFound: KEYBAY_ERR_METHOD_NOT_FOUND.number, .wrongSecret: KEYBAY_ERR_WRONG_SECRET.number, .locked: KEYBAY_ERR_LOCKED.number,
        .cancelled: KEYBAY_ERR_CANCELLED.number, .timedOut: KEYBAY_ERR_TIMED_OUT.number, .methodUnavailable: KEYBAY_ERR_METHOD_UNAVAILABLE.number,
        .pinRequired: KEYBAY_ERR_PIN_REQUIRED.number, .interactionRequired: KEYBAY_ERR_INTERACTION_REQUIRED.number,
        .pluginNotFound: KEYBAY_ERR_PLUGIN_NOT_FOUND.number, .pluginRefused: KEYBAY_ERR_PLUGIN_REFUSED.number,
        .pluginFailed: KEYBAY_ERR_PLUGIN_FAILED.number, .closed: KEYBAY_ERR_CLOSED.number,
    ]

    /// keybay_get or keybay_delete of a key with no record: the C API's own code.
    static let notFoundName = "not-found"

    /// The stable name of each number, the C API's own included.
    static let names: [Int32: String] = {
        var names = Dictionary(uniqueKeysWithValues: numbers.map { ($0.value, $0.key.rawValue) })
        names[KEYBAY_ERR_NOT_FOUND.number] = notFoundName
        return names
    }()
}

extension keybay_code {
    /// The code as the C functions return it (`keybay_code` is unsigned to C, `Int32` here).
    var number: Int32 { Int32(bitPattern: rawValue) }
}
