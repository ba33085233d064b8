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
    /// True when the change that failed took effect all the same: the new store file was
    /// renamed into place (it is the store now, and what it holds opens), but what came after
    /// (the directory's fsync, the read-back) failed, so it could not be confirmed durable. A
    /// secret only the new store accepts (a recovery key) must still be handed to the user.
    /// Such an error is always `.io`.
    public let tookEffect: Bool
    /// The file or directory the failure is about (a store, a root file, a plugin), when there
    /// is one: the same path the message names.
    public private(set) var path: String?
    /// The plugin that failed, refused or was not found, when one is concerned.
    public private(set) var pluginID: String?
    /// The unlock method concerned (its 32 lowercase hex characters): the one whose secret was
    /// wrong, or that the store does not have.
    public private(set) var methodID: String?
    /// What the layer below said, when the failure came from it.
    public private(set) var underlying: Underlying?

    /// The cause below Keybay: a system call's `errno`, or a plugin's `keybay_status`.
    public enum Underlying: Sendable, Equatable {
        case errno(Int32)
        case pluginStatus(Int32)
    }

    public init(_ code: Code, _ message: String) {
        self.init(code, message, tookEffect: false)
    }

    init(_ code: Code, _ message: String, tookEffect: Bool) {
        self.code = code
        self.message = message
        self.tookEffect = tookEffect
    }

    /// This error with the fields given filled in; a field already set is kept (the innermost
    /// layer knows best).
    func with(path: String? = nil, pluginID: String? = nil, methodID: String? = nil, underlying: Underlying? = nil) -> KeybayError {
        var e = self
        e.path = e.path ?? path
        e.pluginID = e.pluginID ?? pluginID
        e.methodID = e.methodID ?? methodID
        e.underlying = e.underlying ?? underlying
        return e
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
    /// A failure after the rename (or link) that put a new store file in place: `what` took
    /// effect, but `cause` kept it from being confirmed durable.
    static func unconfirmed(_ what: String, cause: KeybayError) -> KeybayError {
        KeybayError(.io, "\(what) took effect but could not be confirmed durable (\(cause.message)): the new store is in place and opens, but a crash before the disk has it may still undo the change", tookEffect: true)
            .with(path: cause.path, underlying: cause.underlying)
    }

    /// The failure `errno` describes, for `what` was done to `path`: refused access is
    /// `.insecurePermissions`, anything else `.io`.
    static func posix(_ what: String, _ path: String) -> KeybayError {
        let code = errno
        let reason = String(cString: strerror(code))
        let kind: Code = code == EACCES || code == EPERM ? .insecurePermissions : .io
        return KeybayError(kind, "\(what) \(path): \(reason)").with(path: path, underlying: .errno(code))
    }
}
