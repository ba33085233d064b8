import Glibc

/// The one error type Keybay throws. `code` is stable (scripts and hosts match on it);
/// `message` names the cause and, where there is one, the file, never a secret or a value.
public struct KeybayError: Error, Sendable, Equatable, CustomStringConvertible {
    public enum Code: String, Sendable, CaseIterable {
        // Caller input (CLI exit 2).
        case invalidArgument = "invalid-argument"
        case invalidKey = "invalid-key"
        case valueTooLarge = "value-too-large"
        case storeFull = "store-full"
        // State of the store and its root (CLI exit 1).
        case storeNotFound = "store-not-found"
        case alreadyInitialized = "already-initialized"
        case stateConflict = "state-conflict"
        case platformKeyInvalidated = "platform-key-invalidated"
        /// The root cannot be reached (no device, no permission to it, no service on the bus).
        case rootUnavailable = "root-unavailable"
        /// The store is older than its root's rollback floor: an older copy was put back.
        case rolledBack = "rolled-back"
        case protectionMismatch = "protection-mismatch"
        case authenticationRequired = "authentication-required"
        /// Another process added or removed a method (a new store key) since this session
        /// unlocked the store: open it again.
        case keyChanged = "key-changed"
        // The bytes on disk (CLI exit 1).
        case malformed = "malformed"
        case integrity = "integrity"
        case unsupported = "unsupported"
        // The file system (CLI exit 1).
        case insecurePermissions = "insecure-permissions"
        case io = "io"
        // Unlock methods and plugins (CLI exit 1 unless noted).
        case methodNotFound = "method-not-found"
        case wrongSecret = "wrong-secret"
        case locked = "locked"
        case cancelled = "cancelled"
        case timedOut = "timed-out"
        case methodUnavailable = "method-unavailable"
        case pinRequired = "pin-required"
        /// A secret or confirmation is needed but the host cannot ask (CLI exit 4).
        case interactionRequired = "interaction-required"
        case pluginNotFound = "plugin-not-found"
        case pluginRefused = "plugin-refused"
        case pluginFailed = "plugin-failed"
        // A session used after close (exit 1).
        case closed = "closed"
    }

    public let code: Code
    public let message: String

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { "\(message) [\(code.rawValue)]" }

    /// True for failures caused by what the caller passed in, not by the store.
    public var isInvalidInput: Bool {
        switch code {
        case .invalidArgument, .invalidKey, .valueTooLarge, .storeFull: return true
        default: return false
        }
    }
}

extension KeybayError {
    /// The failure `errno` describes, for `what` was done to `path`: refused access is
    /// `.insecurePermissions`, anything else `.io`.
    static func posix(_ what: String, _ path: String) -> KeybayError {
        let code = errno
        let reason = String(cString: strerror(code))
        if code == EACCES || code == EPERM {
            return KeybayError(.insecurePermissions, "\(what) \(path): \(reason)")
        }
        return KeybayError(.io, "\(what) \(path): \(reason)")
    }
}
