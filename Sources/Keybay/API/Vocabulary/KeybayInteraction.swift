// SPDX-License-Identifier: Apache-2.0
/// What a plugin may ask of the user, supplied by the host application: the host services of
/// the plugin ABI (a secret, a message, a confirmation, cancellation, a log).
/// Every member may refuse: a non-interactive host throws `.interactionRequired`.
///
/// Only `askSecret(_:into:)` must be written; every other member has a default (see each).
/// ``NonInteractive`` is the interaction of a host that can ask nobody, and the default of every
/// entry point that takes one.
///
/// What a member throws reaches the plugin as a status (`.interactionRequired` as "interaction
/// unavailable", any other error as "cancelled"); when the plugin passes that status on, the
/// Keybay call that ran it throws the member's own error, its code and message unchanged, with
/// the plugin's id and status added (an error that is not a ``KeybayError`` becomes `.cancelled`).
///
/// ## Concurrency
///
/// The protocol is `Sendable`: a member is called on whichever thread runs the plugin call, which
/// is the calling thread for the synchronous entry points (the main thread, if that is where you
/// call them) and a thread of Keybay's own for the `async` ones (the ceremony's thread), so
/// members run outside any actor's isolation. A session keeps its interaction
/// for later method operations, so one value may be called from several threads over its life;
/// calls into one plugin are serialised, calls into different plugins are not. Members block
/// their thread for as long as the user takes; that thread is never a cooperative one when the
/// `async` entry points are used.
///
/// The article <doc:ImplementingKeybayInteraction> says which plugin asks which member, and when.
public protocol KeybayInteraction: Sendable {
    /// Writes the secret's bytes into `buffer` (guarded memory owned by the caller, wiped after
    /// use) and returns how many were written. Throw `.interactionRequired` when nobody can be
    /// asked, `.cancelled` when the user declines.
    ///
    /// A new secret (`request.isNew`, an enrollment) is asked twice: first with
    /// `isConfirmation == false`, then with `isConfirmation == true` into a second guarded
    /// buffer; the two must be equal byte for byte, or the plugin is told the entries differ
    /// (`.wrongSecret`) and the enrollment fails. Both buffers are wiped.
    ///
    /// - Parameters:
    ///   - request: What is asked for, for whom, and whether it is the confirming entry.
    ///   - buffer: Where to write the secret; its `count` is the most the plugin accepts. Write
    ///     no copy of the secret anywhere else (no `String`).
    /// - Returns: The number of bytes written, from 0 to `buffer.count`; any other number
    ///   fails the plugin's call.
    /// - Throws: `KeybayError(.interactionRequired)` when nobody can be asked,
    ///   `KeybayError(.cancelled)` when the user declines; the buffer is wiped then.
    func askSecret(_ request: KeybaySecretRequest, into buffer: UnsafeMutableRawBufferPointer) throws -> Int
    /// Tells the user something: "touch your security key", calibration progress; Keybay itself
    /// sends `.warning` lines about what did not fail the operation. Nothing is answered.
    ///
    /// Default: the message is dropped.
    /// - Parameters:
    ///   - text: One line, never a secret.
    ///   - level: How to show it.
    func message(_ text: String, level: KeybayMessageLevel)
    /// A yes/no question the user answers before a plugin goes on.
    ///
    /// The first-party plugin that asks is the `secret-service` root: when the desktop keyring
    /// (the collection or the item that holds the store's root key) is locked, it asks
    /// "… is locked; unlock it with the desktop keyring's own prompt?", and only after `true`
    /// does the keyring show its own unlock prompt. Every operation on such a root asks it while
    /// the keyring is locked: opening, creating, re-sealing (a change of methods, a root move)
    /// and `reset`.
    ///
    /// Default: throws `.interactionRequired`, so a host that does not implement it cannot open
    /// a store on a locked keyring (the error names the question).
    /// - Parameter question: One line to show, ending in a question mark.
    /// - Returns: `true` to go on, `false` to decline (the plugin then fails with `.cancelled`).
    /// - Throws: `KeybayError(.interactionRequired)` when nobody can be asked.
    func confirm(_ question: String) throws -> Bool
    /// Shows the user a secret to keep (a recovery key), once its enrollment is stored. Throw
    /// `.interactionRequired` when nobody can be shown it, or any error when showing it failed:
    /// the enrollment is then taken back.
    ///
    /// The one-phase enrollments (`auth.add`, `auth.replace`, `KeybayStore.initialize(_:enrolling:)`)
    /// call this after the commit (``PreparedEnrollment/commit(showingSecretWith:)``); its bytes
    /// are in guarded memory and wiped when the last reference goes. The two-phase ones (`prepare`) never call this: the secret is in
    /// ``PreparedEnrollment/shownSecret``, to hand over after ``PreparedEnrollment/commit()``.
    ///
    /// Default: throws `.interactionRequired`.
    /// - Parameter secret: The secret's kind, its text and, when the plugin draws one, a picture.
    /// - Throws: `KeybayError(.interactionRequired)` when nobody can be shown it.
    func showSecret(_ secret: KeybayShownSecret) throws
    /// Picks the method that opens a store with several, for `KeybayStore.open(_:policy:interaction:)`
    /// when the host named none (see ``KeybayOpenPolicy``). It may ask the user; it is asked at
    /// most once per open.
    ///
    /// Default: throws `.authenticationRequired` with the methods in ``KeybayError/methods``:
    /// this host cannot choose, so it must name a method.
    /// - Parameter methods: The store's methods, at least two, in the store's order, each with
    ///   ``KeybayMethod/needsDevice`` filled in where its plugin could be read.
    /// - Returns: The ``KeybayMethod/id`` of one of them.
    /// - Throws: `.authenticationRequired` (the default), `.cancelled` when the user declines,
    ///   `.interactionRequired` when nobody can be asked.
    func chooseMethod(_ methods: [KeybayMethod]) throws -> String
    /// Whether a secret the method refused as wrong may be asked for again, when the open's
    /// ``KeybayOpenPolicy/tries`` allow another ask. Answer false when the next answer would be
    /// the same (a secret read once from a file or a descriptor).
    ///
    /// Default: `true`.
    /// - Parameter failure: The `.wrongSecret` error, with the method's id and, from a device,
    ///   ``KeybayError/triesLeft``.
    /// - Returns: True to ask again.
    func mayAskAgain(after failure: KeybayError) -> Bool
    /// Polled by long operations (a calibration between trials, a wait for a touch); `true` ends
    /// them with `.cancelled`. With the `async` entry points, cancelling the calling task also
    /// reads as cancelled here, without the host doing anything.
    ///
    /// Default: `false`.
    var isCancelled: Bool { get }
    /// The least severe log level this host wants; plugins' lines below it are dropped.
    ///
    /// Default: `.info`.
    var logLevel: KeybayLogLevel { get }
    /// Diagnostics at `level` (never below `logLevel`); never contains secrets.
    ///
    /// Default: calls `log(_:)`.
    /// - Parameters:
    ///   - text: One line from a plugin.
    ///   - level: Its level (a level a plugin mislabels counts as `.error`).
    func log(_ text: String, level: KeybayLogLevel)
    /// Diagnostics; never contains secrets. What `log(_:level:)` calls unless a host replaces it.
    ///
    /// Default: the line is dropped.
    /// - Parameter text: One line from a plugin.
    func log(_ text: String)
}

/// How much a plugin's diagnostic line matters, least first.
public enum KeybayLogLevel: Int, Sendable, Comparable {
    /// `debug` (1), `info` (2), `error` (3): the ABI's `KEYBAY_LOG_*` values.
    case debug = 1, info = 2, error = 3

    /// Orders levels by severity: `.debug < .info < .error`.
    public static func < (a: KeybayLogLevel, b: KeybayLogLevel) -> Bool { a.rawValue < b.rawValue }
}

/// One question for a secret, as ``KeybayInteraction/askSecret(_:into:)`` gets it.
public struct KeybaySecretRequest: Sendable {
    /// What kind of secret is asked for; the raw value is how it is named in text.
    public enum Kind: String, Sendable {
        /// `passphrase`: a passphrase (the passphrase plugin); `pin`: a security key's PIN (fido2).
        case passphrase, pin
        /// A recovery key (the recovery plugin), typed back as its groups of characters.
        case recoveryKey = "recovery key"
    }
    /// What kind of secret is asked for.
    public let kind: Kind
    /// One line to show: the plugin's own prompt, which may be empty (then name the kind and
    /// whose it is: `application`, `label`).
    public let prompt: String
    /// Retries left before a lock-out, when the plugin knows.
    public let retriesLeft: Int?
    /// A new secret is being chosen (the host's bridge asks twice and compares): the plugin is
    /// enrolling (`auth.add`, `auth.replace`, `KeybayStore.initialize(_:enrolling:)`). False when
    /// the secret unlocks an enrolled method.
    public let isNew: Bool
    /// True on the second, confirming ask of a new secret ("Repeat the new passphrase"); only
    /// ever true when `isNew` is. The entry must equal the first one; the host does not compare
    /// them, Keybay does.
    public let isConfirmation: Bool
    /// The application whose store the secret opens (nil outside a store: plugin-check).
    public let application: String?
    /// The method's label: the enrolled one when unlocking, the one being given when enrolling.
    public let label: String?
    /// The id of the plugin that asks (`passphrase`, `fido2`, a root's id); nil for a request
    /// made outside a plugin call. A host that keeps secrets it was given beforehand (the CLI's
    /// descriptors) hands each only to the method it was given for, never to another plugin.
    public let pluginID: String?
    /// True when the secret is asked for again because the last answer was wrong (an open whose
    /// ``KeybayOpenPolicy/tries`` allow another ask): say so to the user.
    public let isRetry: Bool
    /// The enrolled method the secret unlocks (its ``KeybayMethod/id``) when a plugin unlocks or
    /// verifies it; nil when a method is being enrolled (`isNew` or not: a device's existing PIN),
    /// for a root, and outside a store.
    public let methodID: String?
}

/// A secret a plugin hands the user to keep, e.g. a recovery key: the text to type back, and a
/// drawing of it for a terminal (a QR code) when the plugin makes one. Both live in guarded memory.
public struct KeybayShownSecret: Sendable {
    /// What kind of secret it is (`.recoveryKey` for the recovery plugin).
    public let kind: KeybaySecretRequest.Kind
    /// The text the user types back, as UTF-8 bytes (not NUL-terminated).
    public let text: SecureBytes
    /// A drawing of the text for a terminal (the recovery plugin's QR code, in UTF-8 block
    /// characters), or nil when the plugin made none.
    public let picture: SecureBytes?
}

/// How a ``KeybayInteraction/message(_:level:)`` line is meant.
public enum KeybayMessageLevel: Sendable {
    /// A fact or an instruction ("Touch your security key", the parameters chosen).
    case info
    /// A step of a long operation (calibration).
    case progress
    /// Something the user should know that did not fail the operation.
    case warning
}

extension KeybayInteraction {
    /// Drops the message.
    public func message(_ text: String, level: KeybayMessageLevel) {}
    /// Throws `KeybayError(.interactionRequired)` naming `question`: this host cannot ask.
    public func confirm(_ question: String) throws -> Bool {
        throw KeybayError(.interactionRequired, "confirmation needed but this host cannot ask: \(question)")
    }
    /// Throws `KeybayError(.interactionRequired)`: this host cannot show a secret, so an
    /// enrollment that shows one fails.
    public func showSecret(_ secret: KeybayShownSecret) throws {
        throw KeybayError(.interactionRequired, "a \(secret.kind.rawValue) must be shown to the user but this host cannot show one")
    }
    /// Throws `.authenticationRequired`, listing `methods` in ``KeybayError/methods``: this host
    /// names the method it opens with.
    public func chooseMethod(_ methods: [KeybayMethod]) throws -> String {
        throw KeybayError.methodChoiceRequired(methods)
    }
    /// `true`: the open's policy alone decides.
    public func mayAskAgain(after failure: KeybayError) -> Bool { true }
    /// `false`: only the task's cancellation (with the `async` entry points) cancels.
    public var isCancelled: Bool { false }
    /// `.info`.
    public var logLevel: KeybayLogLevel { .info }
    /// Calls `log(_:)`.
    public func log(_ text: String, level: KeybayLogLevel) { log(text) }
    /// Drops the line.
    public func log(_ text: String) {}
}

/// The interaction of a host that can ask nobody (scripts, services, record operations).
/// Every question is refused with `.interactionRequired`; messages and log lines are dropped.
public struct NonInteractive: KeybayInteraction {
    /// The interaction that asks nobody.
    public init() {}
    /// Throws `KeybayError(.interactionRequired)` naming the kind of secret.
    public func askSecret(_ request: KeybaySecretRequest, into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
        throw KeybayError(.interactionRequired, "a \(request.kind.displayName) is needed but this host cannot ask for one")
    }
}

extension KeybaySecretRequest {
    /// A request made outside a plugin call, for a host that asks through an interaction
    /// itself (the C API's default interaction asked directly, the CLI asking for a root
    /// recovery key): a first ask, naming no method, plugin or application.
    ///
    /// - Parameters:
    ///   - kind: What is asked for.
    ///   - prompt: The text to show.
    ///   - isConfirmation: Whether it is the second entry of a new secret.
    public init(kind: Kind, prompt: String, isConfirmation: Bool) {
        self.init(kind: kind, prompt: prompt, retriesLeft: nil, isNew: isConfirmation, isConfirmation: isConfirmation, application: nil, label: nil,
                  pluginID: nil, isRetry: false, methodID: nil)
    }

    /// What a host shows with a retry ("Wrong passphrase (2 tries left)"); nil for a first ask.
    public var retryText: String? {
        guard isRetry else { return nil }
        return "Wrong \(kind.displayName)" + (retriesLeft.map { " (\($0) \($0 == 1 ? "try" : "tries") left)" } ?? "")
    }

    /// This request as asked after `failures` wrong answers of `tries` in all: after one, a
    /// retry with the asks left as `retriesLeft` unless the plugin gave a count.
    func retrying(failures: Int, tries: Int) -> KeybaySecretRequest {
        KeybaySecretRequest(kind: kind, prompt: prompt, retriesLeft: retriesLeft ?? (failures > 0 ? tries - failures : nil), isNew: isNew, isConfirmation: isConfirmation,
                            application: application, label: label, pluginID: pluginID, isRetry: failures > 0, methodID: methodID)
    }
}

extension KeybaySecretRequest.Kind {
    /// How messages name the kind: "passphrase", "PIN", "recovery key".
    public var displayName: String { self == .pin ? "PIN" : rawValue }
}
