// SPDX-License-Identifier: Apache-2.0
import Glibc

/// The one error type Keybay throws. `code` is stable (scripts and hosts match on it);
/// `message` names the cause and, where there is one, the file, never a secret or a value.
public struct KeybayError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What kind of failure it is: stable names (the raw values) that scripts and hosts match on;
    /// the CLI prints them in brackets and maps them to its exit codes.
    public enum Code: String, Sendable, CaseIterable {
        // Caller input (CLI exit 2).
        /// Something the caller passed in is refused: an id, a label, an option, a path.
        case invalidArgument = "invalid-argument"
        /// A record key outside 1–120 bytes of `[A-Za-z0-9._-]` segments joined by `/`.
        case invalidKey = "invalid-key"
        /// A record value over the format's limit (1 MiB).
        case valueTooLarge = "value-too-large"
        /// The store would pass its size limit, or has reached its last epoch.
        case storeFull = "store-full"
        // State of the store and its root (CLI exit 1).
        /// There is no store (and nothing was created): `path` names where it was looked for.
        case storeNotFound = "store-not-found"
        /// `initialize` found a store already there; nothing is created over it.
        case alreadyInitialized = "already-initialized"
        /// A partial state (a root without its store), or the store's methods changed under a
        /// prepared change: only `reset` (or preparing again) gets out.
        case stateConflict = "state-conflict"
        /// The store's root is gone or is another one: the store cannot be opened.
        case platformKeyInvalidated = "platform-key-invalidated"
        /// The root cannot be reached (no device, no permission to it, no service on the bus).
        case rootUnavailable = "root-unavailable"
        /// The store is older than its root's rollback floor: an older copy was put back.
        case rolledBack = "rolled-back"
        /// A method was named for a store that has none (it is platform-only).
        case protectionMismatch = "protection-mismatch"
        /// The store is protected and no method was named: open it with one of its methods. Also
        /// a session that reads through the keybay agent once the agent no longer serves the store
        /// (its unlock ended): open it again.
        case authenticationRequired = "authentication-required"
        /// Another process added or removed a method (a new store key) since this session
        /// unlocked the store: open it again.
        case keyChanged = "key-changed"
        // The bytes on disk (CLI exit 1).
        /// The bytes on disk are not a valid file of their kind (or a plugin's parameters are not).
        case malformed = "malformed"
        /// The bytes on disk failed authentication: the file was changed.
        case integrity = "integrity"
        /// A file of a later version, or a request a plugin does not support.
        case unsupported = "unsupported"
        // The file system (CLI exit 1).
        /// A file or directory is open to others, owned by someone else, or a symbolic link; it is
        /// left as it is for the user to fix.
        case insecurePermissions = "insecure-permissions"
        /// A system call failed (`underlying` has its errno). With `tookEffect`, the change it
        /// reports was made all the same.
        case io = "io"
        // Unlock methods and plugins (CLI exit 1 unless noted).
        /// The store has no method with that id (`methodID`).
        case methodNotFound = "method-not-found"
        /// The method's secret did not open the store (`methodID`, `pluginID`).
        case wrongSecret = "wrong-secret"
        /// The method's device or credential is locked (too many wrong tries).
        case locked = "locked"
        /// The user or the calling task cancelled; nothing was written.
        case cancelled = "cancelled"
        /// The method waited too long (for a touch, a device).
        case timedOut = "timed-out"
        /// The method cannot work here (no device, a library missing): its probe said so.
        case methodUnavailable = "method-unavailable"
        /// The method's device needs a PIN that was not given.
        case pinRequired = "pin-required"
        /// A secret or confirmation is needed but the host cannot ask (CLI exit 4).
        case interactionRequired = "interaction-required"
        /// No plugin file with that id on the search path (`pluginID`).
        case pluginNotFound = "plugin-not-found"
        /// A plugin file was found but refused (its permissions, ABI, id or kind); `path` names it.
        case pluginRefused = "plugin-refused"
        /// A plugin broke its contract or failed in a way it did not name.
        case pluginFailed = "plugin-failed"
        // A session used after close (exit 1).
        /// The session (or the prepared enrollment) was closed or discarded before this call.
        case closed = "closed"
    }

    /// The stable kind of failure.
    public let code: Code
    /// One line for people: the cause and, where there is one, the file; never a secret or a value.
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
    /// Which cause of several under one `code` this is, as a stable token of 1–40 characters of
    /// `[a-z0-9-]` a program may match on (the message is for people): a plugin's own (each
    /// plugin documents its reasons, e.g. fido2's `pin-blocked`) or the core's (`not-owner`,
    /// `symbolic-link`, `mode` for `.insecurePermissions`; docs/plugins.md lists the loader's).
    /// `nil` when no one named the cause.
    public private(set) var reason: String?
    /// The PIN or retry attempts the device says are left, when it said (a wrong PIN, a locked
    /// device with 0).
    public private(set) var triesLeft: Int?
    /// With reason `pcr-mismatch`: the TPM PCRs (0–23, ascending) whose values now differ from
    /// the ones the secret was sealed to, as the plugin named them.
    public private(set) var pcrs: [Int]?

    /// The store's methods, when the failure is that one must be chosen
    /// (`.authenticationRequired` from an open that named none and could not choose).
    public private(set) var methods: [KeybayMethod]?

    /// The cause below Keybay: a system call's `errno`, or a plugin's `keybay_status`.
    public enum Underlying: Sendable, Equatable {
        /// The `errno` a system call set.
        case errno(Int32)
        /// The `keybay_status` a plugin returned (docs/plugins.md lists them).
        case pluginStatus(Int32)
    }

    /// An error of `code` saying `message`, with no fields set (a host's own interaction, for
    /// example, throws these).
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
    func with(path: String? = nil, pluginID: String? = nil, methodID: String? = nil, underlying: Underlying? = nil,
              reason: String? = nil, triesLeft: Int? = nil, pcrs: [Int]? = nil) -> KeybayError {
        var e = self
        e.path = e.path ?? path
        e.pluginID = e.pluginID ?? pluginID
        e.methodID = e.methodID ?? methodID
        e.underlying = e.underlying ?? underlying
        e.reason = e.reason ?? reason.flatMap { Self.isReasonToken($0) ? $0 : nil }
        e.triesLeft = e.triesLeft ?? triesLeft.flatMap { $0 >= 0 ? $0 : nil }
        e.pcrs = e.pcrs ?? pcrs.flatMap { $0.isEmpty ? nil : $0 }
        return e
    }

    /// The failure of an open that must choose among `methods` and cannot:
    /// `.authenticationRequired`, listing them in ``methods`` and in its message. What
    /// ``KeybayInteraction/chooseMethod(_:)`` throws by default; a host's own chooser that
    /// cannot ask throws it too.
    /// - Parameter methods: The store's methods.
    /// - Returns: The error.
    public static func methodChoiceRequired(_ methods: [KeybayMethod]) -> KeybayError {
        KeybayError(.authenticationRequired, "the store has \(methods.count) unlock methods and none was named: \(methods.map { "\($0.id) (\($0.plugin), \($0.label))" }.joined(separator: "; "))")
            .listing(methods)
    }

    /// This error with `methods` in ``methods`` (unless it lists some already): what a host's
    /// chooser throws when it cannot ask (`.interactionRequired`), so a program sees them.
    /// - Parameter methods: The store's methods.
    /// - Returns: The error.
    public func listing(_ methods: [KeybayMethod]) -> KeybayError {
        var e = self
        e.methods = e.methods ?? methods
        return e
    }

    /// A reason is 1–40 characters of `[a-z0-9-]`: anything else (from a plugin) is dropped.
    static func isReasonToken(_ token: String) -> Bool {
        let bytes = token.utf8
        return (1...40).contains(bytes.count) && bytes.allSatisfy { (0x61...0x7A).contains($0) || (0x30...0x39).contains($0) || $0 == 0x2D }
    }

    /// The message followed by the code in brackets, as the CLI prints it.
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
            .with(path: cause.path, underlying: cause.underlying, reason: cause.reason)
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
