// SPDX-License-Identifier: Apache-2.0
/// The text `--help` prints: each command's entries from the table (a synopsis up to 18
/// characters shares its line with the first line of what it does, a longer one stands alone),
/// then the global options and the exit codes.
enum Usage {
    static var text: String {
        "usage: keybay-methods [global options] COMMAND [ARGS]\n\ncommands:\n"
            + CommandTable.all.flatMap(\.usage).map(entry).joined() + "\n" + globalOptions
    }

    private static let summaryIndent = String(repeating: " ", count: 22)

    private static func entry(_ synopsis: String, _ summary: String) -> String {
        let synopsisLines = synopsis.split(separator: "\n")
        var summaryLines = summary.split(separator: "\n")[...]
        // A second synopsis line stands under the first one's arguments (`import secret-service ...`).
        let continuation = String(repeating: " ", count: 3 + synopsisLines[0].prefix { $0 != " " }.count)
        var text = "  " + synopsisLines[0]
        if synopsisLines.count == 1 && synopsis.count <= 18 {
            text += String(repeating: " ", count: 20 - synopsis.count) + summaryLines.removeFirst()
        }
        text += "\n" + synopsisLines.dropFirst().map { continuation + $0 + "\n" }.joined()
        return text + summaryLines.map { summaryIndent + $0 + "\n" }.joined()
    }

    private static let globalOptions = """
global options (before or after the command):
  --app ID            application id (default: $KEYBAY_APP_ID)
  --json              machine-readable output
  --method ID         which unlock method to use for a protected store
  --passphrase-fd N   read the passphrase from descriptor N (to EOF, one trailing newline removed),
                      for the method that unlocks only
  --pin-fd N          read its PIN the same way
  --recovery-key-fd N read its recovery key the same way
  --new-passphrase-fd N, --new-pin-fd N
                      the new secret of the method change (or enroll) makes, from descriptor N
  --no-input          never prompt (a needed secret gives exit 4)
                      (without a terminal, or with KEYBAY_PINENTRY=PROGRAM, secrets are asked
                      through a pinentry program: PROGRAM, else pinentry on PATH)
  --plugin-dir DIR    look for plugins in DIR first (repeatable)
  --root ID|auto      the platform root of a new store (default: $KEYBAY_ROOT, else file-root;
                      auto: inside a Flatpak or snap sandbox portal, else secret-service when a
                      Secret Service answers, else file-root); an
                      existing store always opens with its own root, and a different --root is
                      refused (exit 2)
  --version           print the version and the plugin ABI, and do nothing else

with --json an error is also printed on standard output: {"error": {"code", "message"}}
exit codes: 0 success; 1 authentication, integrity, state or I/O failure;
            2 usage or invalid input; 3 record not found; 4 interaction needed but not allowed
"""
}
