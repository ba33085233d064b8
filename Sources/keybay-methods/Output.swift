import Glibc

/// Raw, unbuffered output: the CLI writes little, and values must reach stdout byte for byte.
/// A write to standard output that fails or falls short (a full disk, a closed descriptor, a
/// reader gone) is remembered: the command then fails with `io` (exit 1), never exit 0 with
/// half a value. Failures on standard error cannot be reported anywhere and are dropped.
enum Output {
    /// Why standard output failed, if it did (the first failure).
    nonisolated(unsafe) static var standardOutputFailure: String?

    static func write(_ fd: Int32, _ bytes: [UInt8]) {
        bytes.withUnsafeBytes { buf in
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
    }

    /// Closes standard output, so a failure the kernel reports only then (a full NFS disk) is seen.
    static func closeStandardOutput() {
        if close(1) != 0, errno != EBADF, standardOutputFailure == nil {
            standardOutputFailure = String(cString: strerror(errno))
        }
    }

    static func out(_ text: String) { write(1, Array(text.utf8)) }
    static func line(_ text: String) { out(text + "\n") }
    static func error(_ text: String) { write(2, Array(("keybay-methods: " + text + "\n").utf8)) }
}

/// A minimal JSON writer for the CLI's `--json` output (no Foundation on the CLI's path).
enum JSON {
    indirect enum Value {
        case string(String)
        case bool(Bool)
        case number(Int)
        case array([Value])
        case object([(String, Value)])
    }

    static func render(_ v: Value) -> String {
        switch v {
        case .string(let s): return quote(s)
        case .bool(let b): return b ? "true" : "false"
        case .number(let n): return String(n)
        case .array(let items): return "[" + items.map(render).joined(separator: ",") + "]"
        case .object(let fields): return "{" + fields.map { quote($0.0) + ":" + render($0.1) }.joined(separator: ",") + "}"
        }
    }

    static func quote(_ s: String) -> String {
        var out = "\""
        for u in s.unicodeScalars {
            switch u {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case _ where u.value < 0x20:
                let hex = String(u.value, radix: 16)
                out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            default: out.unicodeScalars.append(u)
            }
        }
        return out + "\""
    }
}
