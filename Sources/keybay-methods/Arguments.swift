/// Command-line parsing. Global options may stand before or after the command; `--` ends options.
struct Arguments {
    var app: String?
    var json = false
    var command: String?
    var positionals: [String] = []
    /// Command options seen (`--stdin`, `--yes`), checked against the command later.
    var flags: Set<String> = []

    struct UsageError: Error { let message: String }

    static let globalsWithValue: Set<String> = ["--app"]
    static let commandFlags: [String: Set<String>] = [
        "status": [], "init": [], "get": [], "set": ["--stdin"], "rm": [], "keys": [], "reset": ["--yes"], "help": [],
    ]

    init(_ argv: [String]) throws {
        var i = 0
        var optionsEnded = false
        while i < argv.count {
            let arg = argv[i]
            i += 1
            if optionsEnded || !arg.hasPrefix("-") || arg == "-" {
                if command == nil { command = arg } else { positionals.append(arg) }
                continue
            }
            if arg == "--" { optionsEnded = true; continue }
            var name = arg
            var inlineValue: String?
            if let eq = arg.firstIndex(of: "=") {
                name = String(arg[..<eq])
                inlineValue = String(arg[arg.index(after: eq)...])
            }
            if Self.globalsWithValue.contains(name) {
                let value: String
                if let inlineValue { value = inlineValue } else {
                    guard i < argv.count else { throw UsageError(message: "option \(name) needs a value") }
                    value = argv[i]
                    i += 1
                }
                app = value
            } else if inlineValue == nil, ["--json", "--stdin", "--yes", "--help", "-h"].contains(name) {
                switch name {
                case "--json": json = true
                case "--help", "-h": command = command ?? "help"
                default: flags.insert(name)
                }
            } else {
                throw UsageError(message: "unknown option \(name)")
            }
        }
        if let command {
            guard let allowed = Self.commandFlags[command] else { throw UsageError(message: "unknown command '\(command)'") }
            if let stray = flags.subtracting(allowed).sorted().first {
                throw UsageError(message: "option \(stray) does not apply to '\(command)'")
            }
        }
    }

    /// Exactly `count` positionals, or a usage error naming what is missing or extra.
    func expect(_ names: [String], optional: Int = 0) throws {
        if positionals.count < names.count - optional {
            throw UsageError(message: "'\(command!)' needs \(names[positionals.count])")
        }
        if positionals.count > names.count {
            throw UsageError(message: "'\(command!)' takes \(names.isEmpty ? "no arguments" : names.joined(separator: " ")), got an extra argument")
        }
    }
}

let usage = """
usage: keybay-methods [--app ID] [--json] COMMAND [ARGS]

commands:
  status              show what is on disk (state, paths, root)
  init                create a new platform-only store (refuses if anything exists)
  get KEY             print the value of KEY (exit 3 if there is none)
  set KEY VALUE       store VALUE under KEY (creates the store if there is nothing yet)
  set KEY --stdin     store standard input, byte for byte, under KEY
  rm KEY              remove KEY (exit 3 if there is none)
  keys                list the keys
  reset --yes         remove the store and its platform root, losing every record

global options (before or after the command):
  --app ID            application id (default: $KEYBAY_APP_ID)
  --json              machine-readable output

exit codes: 0 success; 1 authentication, integrity, state or I/O failure;
            2 usage or invalid input; 3 record not found; 4 interaction needed but not allowed
"""
