/// What a plugin may ask of the user, supplied by the host application: the host services of
/// the plugin ABI (a secret, a message, a confirmation, cancellation, a log).
/// Every member may refuse: a non-interactive host throws `.interactionRequired`.
public protocol KeybayInteraction: Sendable {
    /// Writes the secret's bytes into `buffer` (guarded memory owned by the caller, wiped after
    /// use) and returns how many were written. Throw `.interactionRequired` when nobody can be
    /// asked, `.cancelled` when the user declines.
    func askSecret(_ request: KeybaySecretRequest, into buffer: UnsafeMutableRawBufferPointer) throws -> Int
    /// Tells the user something: "touch your security key", calibration progress.
    func message(_ text: String, level: KeybayMessageLevel)
    /// A yes/no question.
    func confirm(_ question: String) throws -> Bool
    /// Shows the user a secret to keep (a recovery key), during enrollment. Show it only once the
    /// enrollment is stored (`auth.add` or `auth.replace` returned): until then it opens nothing.
    /// Throw `.interactionRequired` when nobody can be shown it: the enrollment then fails.
    func showSecret(_ secret: KeybayShownSecret) throws
    /// Polled by long operations.
    var isCancelled: Bool { get }
    /// The least severe log level this host wants; plugins' lines below it are dropped.
    var logLevel: KeybayLogLevel { get }
    /// Diagnostics at `level` (never below `logLevel`); never contains secrets.
    func log(_ text: String, level: KeybayLogLevel)
    /// Diagnostics; never contains secrets. What `log(_:level:)` calls unless a host replaces it.
    func log(_ text: String)
}

/// How much a plugin's diagnostic line matters, least first.
public enum KeybayLogLevel: Int, Sendable, Comparable {
    case debug = 1, info = 2, error = 3

    public static func < (a: KeybayLogLevel, b: KeybayLogLevel) -> Bool { a.rawValue < b.rawValue }
}

public struct KeybaySecretRequest: Sendable {
    public enum Kind: String, Sendable {
        case passphrase, pin
        case recoveryKey = "recovery key"
    }
    public let kind: Kind
    /// One line to show.
    public let prompt: String
    /// Retries left before a lock-out, when the plugin knows.
    public let retriesLeft: Int?
    /// A new secret is being chosen (the host's bridge asks twice and compares).
    public let isNew: Bool
    /// True on the second, confirming ask of a new secret.
    public let isConfirmation: Bool
    /// The application whose store the secret opens (nil outside a store: plugin-check).
    public let application: String?
    /// The method's label: the enrolled one when unlocking, the one being given when enrolling.
    public let label: String?
}

/// A secret a plugin hands the user to keep, e.g. a recovery key: the text to type back, and a
/// drawing of it for a terminal (a QR code) when the plugin makes one. Both live in guarded memory.
public struct KeybayShownSecret: Sendable {
    public let kind: KeybaySecretRequest.Kind
    public let text: SecureBytes
    public let picture: SecureBytes?
}

public enum KeybayMessageLevel: Sendable { case info, progress, warning }

extension KeybayInteraction {
    public func message(_ text: String, level: KeybayMessageLevel) {}
    public func confirm(_ question: String) throws -> Bool {
        throw KeybayError(.interactionRequired, "confirmation needed but this host cannot ask: \(question)")
    }
    public func showSecret(_ secret: KeybayShownSecret) throws {
        throw KeybayError(.interactionRequired, "a \(secret.kind.rawValue) must be shown to the user but this host cannot show one")
    }
    public var isCancelled: Bool { false }
    public var logLevel: KeybayLogLevel { .info }
    public func log(_ text: String, level: KeybayLogLevel) { log(text) }
    public func log(_ text: String) {}
}

/// The interaction of a host that can ask nobody (scripts, services, record operations).
public struct NonInteractive: KeybayInteraction {
    public init() {}
    public func askSecret(_ request: KeybaySecretRequest, into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
        throw KeybayError(.interactionRequired, "a \(request.kind.displayName) is needed but this host cannot ask for one")
    }
}

extension KeybaySecretRequest.Kind {
    /// How messages name the kind: "passphrase", "PIN", "recovery key".
    public var displayName: String { self == .pin ? "PIN" : rawValue }
}
