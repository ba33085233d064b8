// SPDX-License-Identifier: Apache-2.0
import Glibc
import Keybay
import KeybayPrompt

/// Prints the secret a plugin showed during `enroll` or `change` (a recovery key), once the
/// enrollment is stored, straight from guarded memory: no String or array holds a copy. Text output gives the
/// line to write down, and the plugin's drawing of it (a QR code) when standard output is a
/// terminal; `--json` adds it to the method's object as `recoveryKey`.
enum ShownSecretOutput {
    /// The JSON field a shown secret of `kind` goes into.
    static func field(_ kind: KeybaySecretRequest.Kind) -> String {
        switch kind {
        case .recoveryKey: "recoveryKey"
        case .passphrase: "passphrase"
        case .pin: "pin"
        }
    }

    /// Refuses a secret that could not be printed as it is: checked when the plugin shows it, so
    /// a method whose secret the user would never see is not enrolled.
    static func check(_ secret: KeybayShownSecret) throws {
        try checkPlain(secret.text, newlines: false)
        if let picture = secret.picture { try checkPlain(picture, newlines: true) }
    }

    /// Prints `object` (a rendered JSON object) with the secret as its last field.
    static func printJSON(_ object: String, adding secret: KeybayShownSecret) {
        Output.write(1, Array(object.utf8.dropLast()) + Array((",\"" + field(secret.kind) + "\":\"").utf8))
        secret.text.withUnsafeBytes { Output.write(1, raw: $0) }
        Output.write(1, Array("\"}\n".utf8))
    }

    /// Prints the line to write down, and the picture when standard output is a terminal.
    static func printText(_ secret: KeybayShownSecret) {
        Output.write(1, Array("\(secret.kind.displayName) (shown only this once; write it down and keep it apart from this computer):\n    ".utf8))
        secret.text.withUnsafeBytes { Output.write(1, raw: $0) }
        Output.write(1, [0x0a])
        if let picture = secret.picture, isatty(1) == 1 {
            picture.withUnsafeBytes { raw in
                Output.write(1, raw: raw)
                if raw.last != 0x0a { Output.write(1, [0x0a]) }
            }
        }
    }

    /// The plugin's text must be UTF-8 that cannot steer a terminal or break out of a JSON
    /// string: no control character (C0, DEL, C1; newlines only in a picture), no quote or
    /// backslash, no bidirectional override.
    private static func checkPlain(_ secret: SecureBytes, newlines: Bool) throws {
        // Decoded scalar by scalar from guarded memory, without making a String of it.
        let plain = secret.withUnsafeBytes { raw -> Bool in
            var bytes = raw.bindMemory(to: UInt8.self).makeIterator()
            var decoder = UTF8()
            while true {
                switch decoder.decode(&bytes) {
                case .scalarValue(let u):
                    if newlines && u == "\n" { continue }
                    if Output.isUnsafeOnTerminal(u) || u == "\"" || u == "\\" || u == "\n" || u == "\t" { return false }
                case .emptyInput: return true
                case .error: return false
                }
            }
        }
        guard plain else { throw KeybayError(.pluginFailed, "the plugin's secret to show is not plain text; refusing to print it") }
    }
}
