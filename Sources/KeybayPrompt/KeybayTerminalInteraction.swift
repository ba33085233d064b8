// SPDX-License-Identifier: Apache-2.0
import Glibc
import Keybay

/// Asks on the process's controlling terminal (`/dev/tty`): a secret with echo off, read byte by
/// byte straight into the plugin's buffer (no stdio copy, no `String`), a confirmation as
/// `[y/N]`, a choice among methods as a numbered list. Messages go to standard error. Without a
/// controlling terminal every question throws `.interactionRequired`.
///
/// While a secret is read, SIGINT, SIGTERM, SIGHUP and SIGQUIT get a handler that turns echo back
/// on and then dies of the same signal (a signal the process ignores stays ignored); the
/// previous handlers are put back when the read ends.
///
/// Everything written to the terminal passes ``displayable(_:)``: prompts carry plugins' text
/// and stored labels. ``KeybayDefaultInteraction`` uses this when the process has a terminal.
public struct KeybayTerminalInteraction: KeybayInteraction {
    /// The interaction that asks on the controlling terminal.
    public init() {}

    /// Whether the process has a controlling terminal it can open (`/dev/tty`).
    public static var isAvailable: Bool {
        let tty = open("/dev/tty", O_RDWR | O_NOCTTY | O_CLOEXEC)
        guard tty >= 0 else { return false }
        close(tty)
        return true
    }

    /// Writes the prompt (``prompt(for:)``, after `(N tries left) ` when the plugin knows), reads
    /// one line with echo off into `buffer`, then ends the line.
    ///
    /// - Parameters:
    ///   - request: What is asked for.
    ///   - buffer: The plugin's buffer; the entry goes nowhere else.
    /// - Returns: The number of bytes entered.
    /// - Throws: `.interactionRequired` without a terminal, `.cancelled` for an empty line,
    ///   `.invalidArgument` for an entry longer than `buffer`, `.io` when the terminal cannot be read.
    public func askSecret(_ request: KeybaySecretRequest, into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
        let what = (request.isNew ? "new " : "") + request.kind.displayName
        let tty = try Self.terminal("a \(what) is needed but there is no terminal")
        defer { close(tty) }
        var prompt = Self.prompt(for: request)
        if let retries = request.retriesLeft { prompt = "(\(retries) tries left) " + prompt }
        if let retry = request.retryText { prompt = retry + "\n" + prompt }
        Self.write(tty, prompt)
        defer { Self.write(tty, "\n") }
        let n = try EchoGuard.withEchoOff(tty) { () throws -> Int in
            var n = 0
            var byte: UInt8 = 0
            defer { byte = 0 }
            while true {
                let r = read(tty, &byte, 1)
                if r < 0 { if errno == EINTR { continue }; throw KeybayError(.io, "cannot read from the terminal") }
                if r == 0 || byte == 0x0a { break }
                guard n < buffer.count else { throw KeybayError(.invalidArgument, "the \(what) is longer than \(buffer.count) bytes") }
                buffer[n] = byte
                n += 1
            }
            return n
        }
        if n == 0 { throw KeybayError(.cancelled, "no \(what) was entered") }
        return n
    }

    /// The plugin's prompt (else the kind), then whose secret it is: "Passphrase for <app>
    /// (<label>): " — as cryptsetup names the device and ssh the key file. The second entry of a
    /// new secret: "Repeat the new passphrase: ".
    ///
    /// - Parameter request: What is asked for.
    /// - Returns: The prompt, ending in ": ".
    public static func prompt(for request: KeybaySecretRequest) -> String {
        let kind = request.kind.displayName
        if request.isConfirmation { return "Repeat the new \(kind): " }
        let what = request.prompt.isEmpty ? (request.isNew ? "New " + kind : kind.prefix(1).uppercased() + kind.dropFirst()) : request.prompt
        var whose = ""
        if let app = request.application { whose += " for \(app)" }
        if let label = request.label { whose += " (\(label))" }
        return what + whose + ": "
    }

    /// Asks `question [y/N] ` and reads the answer, echoed as typed.
    ///
    /// - Parameter question: One line, ending in a question mark.
    /// - Returns: `true` for `y` or `yes`, `false` for anything else.
    /// - Throws: `.interactionRequired` without a terminal (the error names the question).
    public func confirm(_ question: String) throws -> Bool {
        let tty = try Self.terminal("a confirmation is needed (\(question)) but there is no terminal")
        defer { close(tty) }
        Self.write(tty, question + " [y/N] ")
        let answer = Self.answerLine(tty)
        return answer == [0x79] || answer == Array("yes".utf8)
    }

    /// Asks the user to pick one of several methods: a numbered list, then `Unlock with which
    /// method? `.
    ///
    /// - Parameter methods: The methods to choose from (at least one).
    /// - Returns: The method picked.
    /// - Throws: `.interactionRequired` without a terminal, `.cancelled` for an answer that is
    ///   not a listed number.
    public func choose(_ methods: [KeybayMethod]) throws -> KeybayMethod {
        let tty = try Self.terminal("the store has several methods and there is no terminal to choose one on")
        defer { close(tty) }
        for (i, m) in methods.enumerated() { Self.write(tty, "  \(i + 1)) \(m.label) (\(m.plugin), \(m.id))\n") }
        Self.write(tty, "Unlock with which method? ")
        guard let n = Int(String(decoding: Self.answerLine(tty), as: UTF8.self)), (1...methods.count).contains(n) else {
            throw KeybayError(.cancelled, "no method was chosen")
        }
        return methods[n - 1]
    }

    /// Writes the line to standard error (progress lines indented by two spaces).
    ///
    /// - Parameters:
    ///   - text: One line, never a secret.
    ///   - level: How it is meant.
    public func message(_ text: String, level: KeybayMessageLevel) {
        Self.write(2, (level == .progress ? "  " : "") + text + "\n")
    }

    /// Text as it may reach a terminal: control characters other than newline and tab (C0, DEL,
    /// C1), the bidirectional marks, overrides and isolates and the line and paragraph
    /// separators are shown as `\u{XX}`, so no stored text (a label, a plugin's message) can move
    /// the cursor, recolour the screen, reorder or break the line it is on.
    ///
    /// - Parameter text: Text to show.
    /// - Returns: The text with those characters spelled out.
    public static func displayable(_ text: String) -> String {
        spellingOut(text, where: isUnsafeOnTerminal)
    }

    /// `text` with each character `unsafe` names spelled out as `\u{XX}`.
    static func spellingOut(_ text: String, where unsafe: (Unicode.Scalar) -> Bool) -> String {
        guard text.unicodeScalars.contains(where: unsafe) else { return text }
        var out = ""
        for u in text.unicodeScalars {
            if unsafe(u) { out += "\\u{" + String(u.value, radix: 16) + "}" } else { out.unicodeScalars.append(u) }
        }
        return out
    }

    /// Whether ``displayable(_:)`` spells `scalar` out: Keybay's `KeybayMethod.misleadsWhenShown(_:)`
    /// save newline and tab.
    ///
    /// - Parameter scalar: One character of text to show.
    /// - Returns: `true` when it must not reach a terminal as it is.
    public static func isUnsafeOnTerminal(_ scalar: Unicode.Scalar) -> Bool {
        scalar != "\n" && scalar != "\t" && KeybayMethod.misleadsWhenShown(scalar)
    }

    /// The controlling terminal, or `.interactionRequired` saying `missing`.
    private static func terminal(_ missing: String) throws -> Int32 {
        let tty = open("/dev/tty", O_RDWR | O_NOCTTY | O_CLOEXEC)
        guard tty >= 0 else { throw KeybayError(.interactionRequired, missing) }
        return tty
    }

    /// One line of a non-secret answer, echoed as typed.
    private static func answerLine(_ tty: Int32) -> [UInt8] {
        var answer: [UInt8] = []
        var byte: UInt8 = 0
        while read(tty, &byte, 1) == 1, byte != 0x0a { answer.append(byte) }
        return answer
    }

    /// Writes all of `text` (made displayable); a failing terminal or standard error is ignored.
    private static func write(_ fd: Int32, _ text: String) {
        let bytes = Array(displayable(text).utf8)
        var done = 0
        while done < bytes.count {
            let n = bytes.withUnsafeBytes { Glibc.write(fd, $0.baseAddress! + done, bytes.count - done) }
            if n < 0 && errno == EINTR { continue }
            if n <= 0 { return }
            done += n
        }
    }
}
