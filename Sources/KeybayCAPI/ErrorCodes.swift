// SPDX-License-Identifier: Apache-2.0
import CKeybay
import Keybay

/// The C API's error numbers (keybay.h's KEYBAY_ERR_*), one per stable name. Written out, not
/// derived from the order of `KeybayError.Code`, so a new case can never renumber the others.
enum ErrorCodes {
    static let numbers: [KeybayError.Code: Int32] = [
        .invalidArgument: KEYBAY_ERR_INVALID_ARGUMENT, .invalidKey: KEYBAY_ERR_INVALID_KEY,
        .valueTooLarge: KEYBAY_ERR_VALUE_TOO_LARGE, .storeFull: KEYBAY_ERR_STORE_FULL,
        .storeNotFound: KEYBAY_ERR_STORE_NOT_FOUND, .alreadyInitialized: KEYBAY_ERR_ALREADY_INITIALIZED,
        .stateConflict: KEYBAY_ERR_STATE_CONFLICT, .platformKeyInvalidated: KEYBAY_ERR_PLATFORM_KEY_INVALIDATED,
        .rootUnavailable: KEYBAY_ERR_ROOT_UNAVAILABLE, .rolledBack: KEYBAY_ERR_ROLLED_BACK,
        .protectionMismatch: KEYBAY_ERR_PROTECTION_MISMATCH, .authenticationRequired: KEYBAY_ERR_AUTHENTICATION_REQUIRED,
        .keyChanged: KEYBAY_ERR_KEY_CHANGED, .malformed: KEYBAY_ERR_MALFORMED, .integrity: KEYBAY_ERR_INTEGRITY,
        .unsupported: KEYBAY_ERR_UNSUPPORTED, .insecurePermissions: KEYBAY_ERR_INSECURE_PERMISSIONS, .io: KEYBAY_ERR_IO,
        .methodNotFound: KEYBAY_ERR_METHOD_NOT_FOUND, .wrongSecret: KEYBAY_ERR_WRONG_SECRET, .locked: KEYBAY_ERR_LOCKED,
        .cancelled: KEYBAY_ERR_CANCELLED, .timedOut: KEYBAY_ERR_TIMED_OUT, .methodUnavailable: KEYBAY_ERR_METHOD_UNAVAILABLE,
        .pinRequired: KEYBAY_ERR_PIN_REQUIRED, .interactionRequired: KEYBAY_ERR_INTERACTION_REQUIRED,
        .pluginNotFound: KEYBAY_ERR_PLUGIN_NOT_FOUND, .pluginRefused: KEYBAY_ERR_PLUGIN_REFUSED,
        .pluginFailed: KEYBAY_ERR_PLUGIN_FAILED, .closed: KEYBAY_ERR_CLOSED,
    ]

    /// keybay_get or keybay_delete of a key with no record: the C API's own code.
    static let notFoundName = "not-found"

    /// The stable name of each number, the C API's own included.
    static let names: [Int32: String] = {
        var names = Dictionary(uniqueKeysWithValues: numbers.map { ($0.value, $0.key.rawValue) })
        names[KEYBAY_ERR_NOT_FOUND] = notFoundName
        return names
    }()
}
