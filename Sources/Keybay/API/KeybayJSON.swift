// SPDX-License-Identifier: Apache-2.0
/// A minimal JSON writer (no Foundation): what `keybay-methods --json` prints and the C API's
/// `keybay_status_json` returns. Text that could move a terminal's cursor or reorder a line is
/// escaped as `\u` and four hex digits, so printed JSON is as safe to show as the CLI's text output.
public enum KeybayJSON {
    /// A JSON value; an object keeps its fields in the order given.
    public indirect enum Value: Sendable {
        /// A string.
        case string(String)
        /// `true` or `false`.
        case bool(Bool)
        /// An integer.
        case number(Int)
        /// An array.
        case array([Value])
        /// An object, its fields in order.
        case object([(String, Value)])
    }

    /// `v` as one line of JSON.
    ///
    /// - Parameter v: The value.
    /// - Returns: Its JSON text, without a trailing newline.
    public static func render(_ v: Value) -> String {
        switch v {
        case .string(let s): return quote(s)
        case .bool(let b): return b ? "true" : "false"
        case .number(let n): return String(n)
        case .array(let items): return "[" + items.map(render).joined(separator: ",") + "]"
        case .object(let fields): return "{" + fields.map { quote($0.0) + ":" + render($0.1) }.joined(separator: ",") + "}"
        }
    }

    /// `s` as a JSON string literal, quotes included.
    ///
    /// - Parameter s: The text.
    /// - Returns: The literal.
    public static func quote(_ s: String) -> String {
        var out = "\""
        for u in s.unicodeScalars {
            switch u {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case _ where MethodNames.misleadsWhenShown(u):
                let hex = String(u.value, radix: 16)
                out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            default: out.unicodeScalars.append(u)
            }
        }
        return out + "\""
    }
}
