// SPDX-License-Identifier: Apache-2.0
import Glibc
import Keybay
import Synchronization

/// Asks through a pinentry program (GnuPG's: pinentry-gnome3, -gtk, -qt, -curses, -tty), as
/// gpg-agent does: one run of the program per question, spoken to in the Assuan protocol on its
/// standard input and output.
///
/// For a secret it sends `OPTION ttyname`/`ttytype` when there is a terminal to name (`GPG_TTY`,
/// else the first of standard input, output and error that is one, with `TERM`), `SETTIMEOUT`,
/// `SETTITLE`, `SETDESC` (which program asks, for which application's store, which method and
/// kind of secret), `SETPROMPT`, `SETERROR` when ``showError(_:)`` gave one, then `GETPIN`, and
/// `BYE`. The answer's data lines are decoded from guarded memory into the plugin's buffer; the
/// secret is never in an argument, the environment or a `String`. A confirmation is `CONFIRM`.
///
/// The program gets the process's environment (a graphical pinentry needs `DISPLAY` or
/// `WAYLAND_DISPLAY` and the session bus), no arguments, standard error on /dev/null and no other
/// descriptor. Every answer has a bound: 10 s for the greeting and each setting, and
/// `timeoutSeconds` (sent as `SETTIMEOUT`) plus 5 s for the user's; a program that has not
/// answered by then is killed (`.timedOut`), one that ends without answering is
/// `.interactionRequired`.
public final class KeybayPinentry: KeybayInteraction, Sendable {
    /// The program run for each question: an absolute path.
    public let program: String
    /// How long the user has for one question (pinentry's own timeout), in seconds.
    public let timeoutSeconds: Int
    private let pendingError = Mutex<String?>(nil)

    /// The user's time for one question when `KEYBAY_PINENTRY_TIMEOUT` does not set it: 300 s.
    public static let defaultTimeoutSeconds = 300
    /// The bound of the greeting and of each setting, which need no user.
    static let handshakeSeconds = 10

    /// A pinentry that runs `program`.
    ///
    /// - Parameters:
    ///   - program: The pinentry program's absolute path.
    ///   - timeoutSeconds: The user's time for one question, 1 to 3600 s (clamped).
    public init(program: String, timeoutSeconds: Int = KeybayPinentry.defaultTimeoutSeconds) {
        self.program = program
        self.timeoutSeconds = min(max(timeoutSeconds, 1), 3600)
    }

    /// Shows `text` as the error (`SETERROR`) with the next question, once: a retry after a
    /// wrong secret.
    ///
    /// - Parameter text: One line, never a secret.
    public func showError(_ text: String) {
        pendingError.withLock { $0 = text }
    }

    /// Asks for the secret (`GETPIN`) into `buffer`.
    ///
    /// - Parameters:
    ///   - request: What is asked for; it makes the description and the prompt.
    ///   - buffer: The plugin's buffer; the answer goes nowhere else.
    /// - Returns: The number of bytes entered.
    /// - Throws: `.cancelled` when the user cancels or enters nothing, `.timedOut` when the
    ///   bound passes, `.invalidArgument` for an entry longer than `buffer`,
    ///   `.interactionRequired` when the program cannot be started, cannot ask (no display, no
    ///   terminal) or ends without answering.
    public func askSecret(_ request: KeybaySecretRequest, into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
        let channel = try start()
        defer { channel.end() }
        try set(channel, "SETDESC", Self.description(for: request, asker: Self.processName()))
        try set(channel, "SETPROMPT", request.isConfirmation ? "Repeat:" : Self.capitalized(request.kind.displayName) + ":")
        // A retry after a wrong secret says so (gpg-agent's way), unless showError gave a text.
        if let error = pendingError.withLock({ e -> String? in defer { e = nil }; return e }) ?? request.retryText {
            try set(channel, "SETERROR", Self.oneLine(error))
        }
        let (reply, count) = try channel.transact("GETPIN", within: timeoutSeconds + 5, data: buffer)
        if case .err(let code, let text) = reply { throw failure(code, text) }
        guard count > 0 else { throw KeybayError(.cancelled, "no \(request.kind.displayName) was entered in the pinentry program \(program)") }
        return count
    }

    /// Asks `question` (`CONFIRM`, with the buttons Yes and No).
    ///
    /// - Parameter question: One line, ending in a question mark.
    /// - Returns: `true` for Yes, `false` for No or a cancel.
    /// - Throws: `.timedOut` and `.interactionRequired` as ``askSecret(_:into:)`` does.
    public func confirm(_ question: String) throws -> Bool {
        let channel = try start()
        defer { channel.end() }
        try set(channel, "SETDESC", Self.processName() + " asks:\n" + Self.oneLine(question))
        try set(channel, "SETOK", "_Yes")
        try set(channel, "SETCANCEL", "_No")
        let (reply, _) = try channel.transact("CONFIRM", within: timeoutSeconds + 5)
        guard case .err(let code, let text) = reply else { return true }
        // 99 cancelled, 114 not confirmed, 198 fully cancelled: the user said no.
        if [99, 114, 198].contains(code & 0xffff) { return false }
        throw failure(code, text)
    }

    /// The program started, greeted, and told the terminal, the time limit and the title.
    private func start() throws -> AssuanChannel {
        let channel = try AssuanChannel(program: program)
        try channel.greeting(within: Self.handshakeSeconds)
        if let tty = Self.terminalName() {
            // A pinentry that knows no such option says so; it asks all the same.
            _ = try channel.transact("OPTION", "ttyname=" + tty, within: Self.handshakeSeconds)
            if let type = getenv("TERM").map({ String(cString: $0) }), !type.isEmpty {
                _ = try channel.transact("OPTION", "ttytype=" + type, within: Self.handshakeSeconds)
            }
        }
        try set(channel, "SETTIMEOUT", String(timeoutSeconds))
        try set(channel, "SETTITLE", "Keybay")
        return channel
    }

    private func set(_ channel: AssuanChannel, _ command: String, _ argument: String) throws {
        if case .err(let code, let text) = try channel.transact(command, argument, within: Self.handshakeSeconds).reply {
            throw failure(code, text)
        }
    }

    /// An `ERR` answer as a `KeybayError`: libgpg-error's code is its low 16 bits.
    private func failure(_ code: UInt32, _ text: String) -> KeybayError {
        switch code & 0xffff {
        case 99, 198: KeybayError(.cancelled, "the request was cancelled in the pinentry program \(program)")
        case 62: KeybayError(.timedOut, "nobody answered the pinentry program \(program) within \(timeoutSeconds) s")
        default: KeybayError(.interactionRequired, "the pinentry program \(program) could not ask: \(text) (\(code))")
        }
    }

    /// What the dialog says: who asks, for which method and kind of secret, what it unlocks,
    /// the plugin's own prompt and the tries left.
    static func description(for r: KeybaySecretRequest, asker: String) -> String {
        let kind = r.kind.displayName
        // The label, and for an enrolled method the start of its id (as `list` shows it).
        let label = r.label.map { "the method “\(oneLine($0))”" + (r.methodID.map { " (\($0.prefix(8)))" } ?? "") }
        var lines: [String]
        if r.isConfirmation {
            lines = ["\(asker) asks for the new \(kind)\(label.map { " for " + $0 } ?? "") once more, to confirm it."]
        } else {
            lines = [r.isNew ? "\(asker) asks for a new \(kind)\(label.map { " for " + $0 } ?? "")."
                             : "\(asker) asks for the \(kind)\(label.map { " of " + $0 } ?? "")."]
            // The plugin's own prompt, unless it only names the kind again ("New passphrase").
            if !r.prompt.isEmpty, ![kind, "new " + kind].contains(r.prompt.lowercased()) { lines.append(oneLine(r.prompt)) }
        }
        if let app = r.application { lines.append("It \(r.isNew ? "will unlock" : "unlocks") the Keybay store of \(oneLine(app)).") }
        if let retries = r.retriesLeft { lines.append("\(retries) tries left.") }
        return lines.joined(separator: "\n")
    }

    /// Text from a plugin or the store as one line of the dialog: every character
    /// ``KeybayTerminalInteraction/displayable(_:)`` spells out, and newline and tab too.
    static func oneLine(_ text: String) -> String {
        KeybayTerminalInteraction.spellingOut(text, where: KeybayMethod.misleadsWhenShown)
    }

    private static func capitalized(_ text: String) -> String { text.prefix(1).uppercased() + text.dropFirst() }

    /// This process's program name (`/proc/self/exe`'s last component), for the description.
    static func processName() -> String {
        var path = [CChar](repeating: 0, count: 4096)
        let n = readlink("/proc/self/exe", &path, path.count - 1)
        guard n > 0 else { return "A program" }
        let full = String(decoding: path[0..<n].map { UInt8(bitPattern: $0) }, as: UTF8.self)
        return full.split(separator: "/").last.map(String.init) ?? full
    }

    /// The terminal a text-mode pinentry should use: `GPG_TTY` (gpg-agent's convention), else
    /// the first of descriptors 0, 1 and 2 that is a terminal.
    static func terminalName() -> String? {
        if let named = getenv("GPG_TTY").map({ String(cString: $0) }), named.hasPrefix("/") { return named }
        for fd: Int32 in 0...2 where isatty(fd) == 1 {
            var name = [CChar](repeating: 0, count: 256)
            if ttyname_r(fd, &name, name.count) == 0 { return String(cString: name) }
        }
        return nil
    }
}
