// SPDX-License-Identifier: Apache-2.0
import CSodium
import Glibc
import Keybay

/// Secrets for the CLI: from the secret descriptors (read once, to EOF, one trailing newline
/// removed), else from /dev/tty with echo off; never from an argument. `--no-input` or the lack
/// of a terminal turns every question into `.interactionRequired` (exit 4). A secret a plugin
/// shows (a recovery key) never comes here: the command prepares the enrollment, and prints the
/// prepared enrollment's `shownSecret` once it is stored (`StoredEnrollment`).
final class TerminalInteraction: KeybayInteraction, @unchecked Sendable {
    let descriptors: SecretDescriptors
    let noInput: Bool
    /// Whether a new secret may come from the unlock descriptor of its kind (`enroll`: yes).
    var newFromUnlockDescriptors = true
    private var fromDescriptor: [Int32: SecureBytes] = [:]

    init(descriptors: SecretDescriptors, noInput: Bool) {
        self.descriptors = descriptors
        self.noInput = noInput
    }

    func askSecret(_ request: KeybaySecretRequest, into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
        let what = (request.isNew ? "new " : "") + request.kind.displayName
        if let fd = descriptors.descriptor(for: request, newFromUnlock: newFromUnlockDescriptors) {
            let secret = try descriptorSecret(fd, what: what)
            guard secret.count <= buffer.count else {
                throw KeybayError(.invalidArgument, "the \(what) read from descriptor \(fd) is longer than \(buffer.count) bytes")
            }
            secret.withUnsafeBytes { buffer.copyMemory(from: $0) }
            return secret.count
        }
        guard !noInput else { throw KeybayError(.interactionRequired, "a \(what) is needed but --no-input was given (\(SecretDescriptors.option(for: request)) N gives it from a descriptor)") }
        let tty = try terminal("a \(what) is needed but there is no terminal (use \(SecretDescriptors.option(for: request)))")
        defer { close(tty) }
        var prompt = Self.prompt(for: request)
        if let retries = request.retriesLeft { prompt = "(\(retries) tries left) " + prompt }
        writeAll(tty, prompt)
        defer { writeAll(tty, "\n") }
        // Byte by byte straight into the caller's guarded buffer: no stdio copies of the secret.
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
    static func prompt(for request: KeybaySecretRequest) -> String {
        let kind = request.kind.displayName
        if request.isConfirmation { return "Repeat the new \(kind): " }
        let what = request.prompt.isEmpty ? (request.isNew ? "New " + kind : kind.prefix(1).uppercased() + kind.dropFirst()) : request.prompt
        var whose = ""
        if let app = request.application { whose += " for \(app)" }
        if let label = request.label { whose += " (\(label))" }
        return what + whose + ": "
    }


    /// Plugins' diagnostic lines: errors by default; `KEYBAY_LOG=debug|info|error` sets the least
    /// level shown (read when a plugin first logs, not at start-up).
    var logLevel: KeybayLogLevel {
        switch getenv("KEYBAY_LOG").map({ String(cString: $0) }) {
        case "debug": .debug
        case "info": .info
        default: .error
        }
    }

    func log(_ text: String, level: KeybayLogLevel) {
        Output.error("\(level == .error ? "error" : level == .info ? "info" : "debug"): \(text)")
    }

    func message(_ text: String, level: KeybayMessageLevel) {
        writeAll(2, (level == .progress ? "  " : "") + text + "\n")
    }

    func confirm(_ question: String) throws -> Bool {
        // The question names what needs the user (a locked keyring): say it in the error too.
        guard !noInput else { throw KeybayError(.interactionRequired, "a confirmation is needed (\(question)) but --no-input was given") }
        let tty = try terminal("a confirmation is needed (\(question)) but there is no terminal")
        defer { close(tty) }
        writeAll(tty, question + " [y/N] ")
        let answer = answerLine(tty)
        return answer == [0x79] || answer == Array("yes".utf8)
    }

    /// Asks the user to pick one of several methods on the terminal.
    func choose(_ methods: [KeybayMethod]) throws -> KeybayMethod {
        guard !noInput else {
            throw KeybayError(.interactionRequired, "the store has several methods; choose one with --method (\(methods.map { "\($0.id) \($0.plugin) \($0.label)" }.joined(separator: "; ")))")
        }
        let tty = try terminal("the store has several methods and there is no terminal; choose one with --method")
        defer { close(tty) }
        for (i, m) in methods.enumerated() { writeAll(tty, "  \(i + 1)) \(m.label) (\(m.plugin), \(m.id))\n") }
        writeAll(tty, "Unlock with which method? ")
        guard let n = Int(String(decoding: answerLine(tty), as: UTF8.self)), (1...methods.count).contains(n) else {
            throw KeybayError(.cancelled, "no method was chosen")
        }
        return methods[n - 1]
    }

    /// The controlling terminal, or `.interactionRequired` saying `missing`.
    private func terminal(_ missing: String) throws -> Int32 {
        let tty = open("/dev/tty", O_RDWR | O_NOCTTY | O_CLOEXEC)
        guard tty >= 0 else { throw KeybayError(.interactionRequired, missing) }
        return tty
    }

    /// One line of a non-secret answer, echoed as typed.
    private func answerLine(_ tty: Int32) -> [UInt8] {
        var answer: [UInt8] = []
        var byte: UInt8 = 0
        while read(tty, &byte, 1) == 1, byte != 0x0a { answer.append(byte) }
        return answer
    }

    /// The secret on descriptor `fd` (read once, to EOF, one trailing newline removed).
    func descriptorSecret(_ fd: Int32, what: String) throws -> SecureBytes {
        if let cached = fromDescriptor[fd] { return cached }
        let capacity = 64 * 1024
        // plugin-check reads --pin-fd before anything else has started libsodium.
        guard sodium_init() >= 0, let raw = sodium_malloc(capacity) else { throw KeybayError(.io, "out of memory") }
        defer { sodium_free(raw) }
        var n = 0
        while n < capacity {
            let r = read(fd, raw + n, capacity - n)
            if r < 0 { if errno == EINTR { continue }; throw KeybayError(.invalidArgument, "cannot read the \(what) from descriptor \(fd): \(String(cString: strerror(errno)))") }
            if r == 0 { break }
            n += r
        }
        let bytes = raw.assumingMemoryBound(to: UInt8.self)
        if n > 0 && bytes[n - 1] == 0x0a { n -= 1 }
        guard n > 0 else { throw KeybayError(.invalidArgument, "descriptor \(fd) gave an empty \(what)") }
        let secret = SecureBytes(copying: UnsafeRawBufferPointer(start: raw, count: n))
        fromDescriptor[fd] = secret
        return secret
    }

    /// Everything shown on the terminal passes `Output.displayable`: prompts and messages carry
    /// plugins' text and stored labels.
    private func writeAll(_ fd: Int32, _ text: String) {
        Output.write(fd, Array(Output.displayable(text).utf8))
    }
}
