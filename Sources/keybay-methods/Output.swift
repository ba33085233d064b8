// SPDX-License-Identifier: Apache-2.0
import Glibc
import Keybay
import KeybayPrompt

/// Raw, unbuffered output: the CLI writes little, and values must reach stdout byte for byte.
/// A write to standard output that fails or falls short (a full disk, a closed descriptor, a
/// reader gone) is remembered: the command then fails with `io` (exit 1), never exit 0 with
/// half a value. Failures on standard error cannot be reported anywhere and are dropped.
enum Output {
    /// Why standard output failed, if it did (the first failure).
    nonisolated(unsafe) static var standardOutputFailure: String?

    static func write(_ fd: Int32, _ bytes: [UInt8]) {
        bytes.withUnsafeBytes { write(fd, raw: $0) }
    }

    /// Writes straight from `buf` (guarded memory, for a secret the user must see: no copy).
    static func write(_ fd: Int32, raw buf: UnsafeRawBufferPointer) {
        var done = 0
        while done < buf.count {
            let n = Glibc.write(fd, buf.baseAddress! + done, buf.count - done)
            if n < 0 && errno == EINTR { continue }
            if n <= 0 {
                if fd == 1, standardOutputFailure == nil {
                    standardOutputFailure = n < 0 ? String(cString: strerror(errno)) : "nothing was written"
                }
                return
            }
            done += n
        }
    }

    /// Closes standard output, so a failure the kernel reports only then (a full NFS disk) is seen.
    /// Descriptor 1 is never free meanwhile (another thread, GDBus's, may open files): a copy of
    /// it is taken, /dev/null opened for reading is put in its place (a file opened later never
    /// takes it, and a late write fails instead of landing there), and the copy is closed.
    static func closeStandardOutput() {
        let copy = fcntl(1, F_DUPFD_CLOEXEC, 3)
        let null = open("/dev/null", O_RDONLY | O_CLOEXEC)
        if null >= 0 {
            dup2(null, 1)
            close(null)
        }
        if copy >= 0, close(copy) != 0, errno != EBADF, standardOutputFailure == nil {
            standardOutputFailure = String(cString: strerror(errno))
        }
    }

    /// Text output (never a record's value, which `get` writes as raw bytes).
    static func out(_ text: String) { write(1, Array(displayable(text).utf8)) }
    static func line(_ text: String) { out(text + "\n") }
    static func error(_ text: String) { write(2, Array(displayable("keybay-methods: " + text + "\n").utf8)) }

    /// With `--json`, an error as one line on standard output: `{"error": {"code", "message", …}}`
    /// (`fields` after those two); standard error says it too, as for every error.
    static func jsonError(code: String, message: String, fields: [(String, JSON.Value)] = []) {
        line(JSON.render(.object([("error", .object([("code", .string(code)), ("message", .string(message))] + fields))])))
    }

    /// The error's fields for a program, after `code` and `message`, each only when set:
    /// `reason`, `triesLeft`, `pcrs`, `path`, `pluginId`, `methodId`, `methods` (an open that must
    /// choose among them and could not).
    static func errorFields(_ e: KeybayError) -> [(String, JSON.Value)] {
        var fields: [(String, JSON.Value)] = []
        if let reason = e.reason { fields.append(("reason", .string(reason))) }
        if let triesLeft = e.triesLeft { fields.append(("triesLeft", .number(triesLeft))) }
        if let pcrs = e.pcrs { fields.append(("pcrs", .array(pcrs.map { .number($0) }))) }
        if let path = e.path { fields.append(("path", .string(path))) }
        if let plugin = e.pluginID { fields.append(("pluginId", .string(plugin))) }
        if let method = e.methodID { fields.append(("methodId", .string(method))) }
        if let methods = e.methods { fields.append(("methods", .array(methods.map(\.jsonValue)))) }
        return fields
    }

    /// Text as it may reach a terminal (the library's rule: `KeybayTerminalInteraction.displayable`).
    static func displayable(_ text: String) -> String { KeybayTerminalInteraction.displayable(text) }

    static func isUnsafeOnTerminal(_ u: Unicode.Scalar) -> Bool { KeybayTerminalInteraction.isUnsafeOnTerminal(u) }
}

/// The CLI's `--json` output is the library's JSON writer (also the C API's `keybay_status_json`).
typealias JSON = KeybayJSON
