// SPDX-License-Identifier: Apache-2.0
import Glibc
import Keybay

/// Where the user can be asked right now, as the CLI and ``KeybayDefaultInteraction`` decide it:
///
/// 1. `KEYBAY_PINENTRY=PROGRAM`: through that pinentry program (a name looked up on `PATH`, or an
///    absolute path), terminal or not;
/// 2. else on the controlling terminal, when the process has one;
/// 3. else through `pinentry` on `PATH` (Debian's alternative for pinentry-gnome3, -gtk, -qt,
///    -curses or -tty), unless `KEYBAY_PINENTRY=none`;
/// 4. else nowhere.
///
/// `KEYBAY_PINENTRY_TIMEOUT` (seconds, 1 to 3600) is the user's time for one pinentry question;
/// unset, ``KeybayPinentry/defaultTimeoutSeconds``. An empty variable counts as unset. Nothing is
/// read, looked up or started before a question needs it.
public enum KeybayAsker: Sendable {
    /// The controlling terminal.
    case terminal(KeybayTerminalInteraction)
    /// A pinentry program.
    case pinentry(KeybayPinentry)

    /// Who asks, as a `KeybayInteraction`.
    public var interaction: any KeybayInteraction {
        switch self {
        case .terminal(let terminal): terminal
        case .pinentry(let pinentry): pinentry
        }
    }

    /// Where a question would be asked now, or nil when nowhere (no terminal and no pinentry).
    ///
    /// - Returns: The terminal or the pinentry, or nil.
    /// - Throws: `.invalidArgument` for a `KEYBAY_PINENTRY` that is neither a name nor an absolute
    ///   path, or a `KEYBAY_PINENTRY_TIMEOUT` that is not 1–3600; `.interactionRequired` for a
    ///   `KEYBAY_PINENTRY` that names no executable file.
    public static func current() throws -> KeybayAsker? {
        let named = variable("KEYBAY_PINENTRY")
        if let named, named != "none" {
            return .pinentry(KeybayPinentry(program: try program(named), timeoutSeconds: try timeout()))
        }
        if KeybayTerminalInteraction.isAvailable { return .terminal(KeybayTerminalInteraction()) }
        guard named == nil, let found = onPath("pinentry") else { return nil }
        return .pinentry(KeybayPinentry(program: found, timeoutSeconds: try timeout()))
    }

    /// `KEYBAY_PINENTRY`'s program: an absolute path as it is, a name from `PATH`.
    static func program(_ named: String) throws -> String {
        if named.hasPrefix("/") {
            guard isExecutableFile(named) else {
                throw KeybayError(.interactionRequired, "KEYBAY_PINENTRY names \(named), which is not an executable file")
            }
            return named
        }
        guard !named.contains("/") else {
            throw KeybayError(.invalidArgument, "KEYBAY_PINENTRY must be a program's name or an absolute path, not \(named)")
        }
        guard let found = onPath(named) else {
            throw KeybayError(.interactionRequired, "KEYBAY_PINENTRY names \(named), which is not on PATH")
        }
        return found
    }

    /// The first executable `name` in `PATH`'s absolute directories.
    static func onPath(_ name: String) -> String? {
        guard let path = variable("PATH") else { return nil }
        for directory in path.split(separator: ":") where directory.hasPrefix("/") {
            let candidate = String(directory) + "/" + name
            if isExecutableFile(candidate) { return candidate }
        }
        return nil
    }

    private static func isExecutableFile(_ path: String) -> Bool {
        var info = stat()
        return stat(path, &info) == 0 && (info.st_mode & S_IFMT) == S_IFREG && access(path, X_OK) == 0
    }

    private static func timeout() throws -> Int {
        guard let text = variable("KEYBAY_PINENTRY_TIMEOUT") else { return KeybayPinentry.defaultTimeoutSeconds }
        guard let seconds = Int(text), (1...3600).contains(seconds) else {
            throw KeybayError(.invalidArgument, "KEYBAY_PINENTRY_TIMEOUT must be a number of seconds from 1 to 3600, not \(text)")
        }
        return seconds
    }

    private static func variable(_ name: String) -> String? {
        guard let value = getenv(name).map({ String(cString: $0) }), !value.isEmpty else { return nil }
        return value
    }
}

/// The interaction of a host that asks the user wherever the user is: each question goes where
/// ``KeybayAsker/current()`` says at that moment (a pinentry named by `KEYBAY_PINENTRY`, the
/// controlling terminal, or `pinentry` on `PATH`). Messages go to standard error. What a
/// terminal or pinentry cannot do (show a recovery key) it refuses, as Keybay's `NonInteractive` does.
///
/// The C API's `keybay_default_interaction()` is this interaction.
public struct KeybayDefaultInteraction: KeybayInteraction {
    /// The interaction that asks where the user is.
    public init() {}

    /// Whether a question could be asked now: ``KeybayAsker/current()`` finds a terminal or a
    /// pinentry (a misconfigured `KEYBAY_PINENTRY` counts as none).
    public static var canAsk: Bool { ((try? KeybayAsker.current()) ?? nil) != nil }

    /// Asks on the terminal or through the pinentry.
    ///
    /// - Parameters:
    ///   - request: What is asked for.
    ///   - buffer: The plugin's buffer.
    /// - Returns: The number of bytes entered.
    /// - Throws: `.interactionRequired` when there is nowhere to ask, and what the terminal or
    ///   pinentry throws.
    public func askSecret(_ request: KeybaySecretRequest, into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
        guard let asker = try KeybayAsker.current() else {
            throw KeybayError(.interactionRequired, "a \(request.kind.displayName) is needed but there is no terminal and no pinentry program")
        }
        return try asker.interaction.askSecret(request, into: buffer)
    }

    /// Asks on the terminal or through the pinentry.
    ///
    /// - Parameter question: One line, ending in a question mark.
    /// - Returns: The user's answer.
    /// - Throws: `.interactionRequired` when there is nowhere to ask, and what the terminal or
    ///   pinentry throws.
    public func confirm(_ question: String) throws -> Bool {
        guard let asker = try KeybayAsker.current() else {
            throw KeybayError(.interactionRequired, "a confirmation is needed (\(question)) but there is no terminal and no pinentry program")
        }
        return try asker.interaction.confirm(question)
    }

    /// Asks the user to pick a method on the terminal (a pinentry offers no list); without a
    /// terminal, the protocol's default: `.authenticationRequired` listing the methods.
    ///
    /// - Parameter methods: The store's methods.
    /// - Returns: The id of the method picked.
    /// - Throws: `.authenticationRequired` without a terminal, `.cancelled` for an answer that is
    ///   not a listed number.
    public func chooseMethod(_ methods: [KeybayMethod]) throws -> String {
        guard KeybayTerminalInteraction.isAvailable else { throw KeybayError.methodChoiceRequired(methods) }
        return try KeybayTerminalInteraction().choose(methods).id
    }

    /// A wrong secret is asked for again (within the open's tries) when a pinentry asks, with
    /// the error shown (gpg-agent's way); one typed on the terminal fails at once, as the CLI's.
    ///
    /// - Parameter failure: The `.wrongSecret` error.
    /// - Returns: True when the next question goes to a pinentry.
    public func mayAskAgain(after failure: KeybayError) -> Bool {
        if case .pinentry? = try? KeybayAsker.current() { return true }
        return false
    }

    /// Writes the line to standard error, as ``KeybayTerminalInteraction/message(_:level:)``.
    ///
    /// - Parameters:
    ///   - text: One line, never a secret.
    ///   - level: How it is meant.
    public func message(_ text: String, level: KeybayMessageLevel) {
        KeybayTerminalInteraction().message(text, level: level)
    }
}
