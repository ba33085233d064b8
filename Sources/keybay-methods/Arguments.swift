// SPDX-License-Identifier: Apache-2.0
/// Command-line parsing. Global options may stand before or after the command; `--` ends options.
struct Arguments {
    var app: String?
    var json = false
    var noInput = false
    var pluginDirectories: [String] = []
    var method: String?
    /// Secret descriptors: `--passphrase-fd`, `--pin-fd`, `--recovery-key-fd` answer the method
    /// that unlocks, `--new-passphrase-fd`, `--new-pin-fd` the new secret of the method `change`
    /// or `enroll` makes (`CommandInteraction.descriptor(for:)`).
    var secretFDs = SecretDescriptors()
    /// `--root ID|auto`: the root for a new store; an existing store on another root is refused.
    var root: String?
    var command: String?
    var positionals: [String] = []
    /// The positionals as given (bytes); `set KEY VALUE` stores the value from here.
    var positionalBytes: [[UInt8]] = []
    /// Positionals that are not UTF-8: refused unless the command takes bytes there.
    var nonUTF8Positionals: Set<Int> = []
    /// Command options seen (`--stdin`, `--yes`), checked against the command later.
    var flags: Set<String> = []
    var label: String?
    var options: [(String, String)] = []
    /// `plugin-check --wrong-opt NAME=VALUE`: a second credential, laid over `options`.
    var wrongOptions: [(String, String)] = []
    /// `plugin-check --change-credential CMD`: run by /bin/sh -c between enroll and the last unwrap.
    var changeCredential: String?
    /// `unlock --for DURATION`: how long the agent holds the store (AgentDuration).
    var duration: String?
    /// The value options of `export` and `import` (`--to`, `--to-file`, `--identity`, `--attr`,
    /// `--key-from`, `--prefix`), each in the order given; the commands check how many they take.
    var commandValues: [String: [String]] = [:]
    /// `--help` anywhere prints the usage and does nothing else.
    var help = false
    /// `--version` anywhere prints the version and does nothing else (`--help` wins).
    var version = false

    struct UsageError: Error { let message: String }

    /// Options that take a value, global or per command.
    static let valueOptions = Set(["--app", "--plugin-dir", "--method", "--root", "--label", "--opt", "--wrong-opt", "--change-credential", "--for",
                                        "--to", "--to-file", "--identity", "--attr", "--key-from", "--prefix"]).union(SecretDescriptors.options)
    static let flagOptions: Set<String> = ["--json", "--no-input", "--stdin", "--yes", "--describe", "--help", "-h", "--version", "--keep-in-backups", "--all",
                                                  "--allow-agent", "--replace", "--dry-run", "--remove-source"]
    /// The command options each command accepts (globals are accepted everywhere).
    static let commandOptions: [String: Set<String>] = [
        "status": [], "init": ["--opt", "--keep-in-backups"], "backup": [], "get": [], "set": ["--stdin"], "rm": [], "keys": [], "reset": ["--yes"], "help": [],
        "list": ["--describe"], "plugins": [], "enroll": ["--label", "--opt"], "change": ["--label", "--opt"], "remove": [], "verify": [], "benchmark": ["--opt"],
        "plugin-check": ["--opt", "--wrong-opt", "--change-credential"], "root": ["--opt"],
        "unlock": ["--for"], "lock": ["--all"], "agent": [],
        "export": ["--to", "--to-file", "--allow-agent"],
        "import": ["--identity", "--replace", "--dry-run", "--allow-agent", "--attr", "--key-from", "--prefix", "--remove-source"],
    ]

    /// The value options that belong to commands (the rest are global), from the table above.
    static let commandValueOptions = Set(commandOptions.values.joined()).intersection(valueOptions)

    /// Parses arguments given as bytes. An option, its value, the command or a positional that
    /// is not UTF-8 is refused (exit 2), except a positional a command takes as bytes (`set`'s
    /// VALUE), which is kept as given.
    init(bytes argv: [[UInt8]]) throws {
        var strings: [String] = []
        var invalid: Set<Int> = []
        for (i, bytes) in argv.enumerated() {
            if let text = String(validating: bytes, as: UTF8.self) { strings.append(text) } else {
                invalid.insert(i)
                strings.append(String(decoding: bytes, as: UTF8.self))
            }
        }
        try self.init(strings, raw: argv, nonUTF8: invalid)
    }

    init(_ argv: [String], raw: [[UInt8]]? = nil, nonUTF8: Set<Int> = []) throws {
        var i = 0
        var optionsEnded = false
        var commandOptionsSeen: Set<String> = []
        while i < argv.count {
            let arg = argv[i]
            let index = i
            i += 1
            if optionsEnded || !arg.hasPrefix("-") || arg == "-" {
                if command == nil {
                    guard !nonUTF8.contains(index) else { throw UsageError(message: "the command is not UTF-8 text") }
                    command = arg
                } else {
                    if nonUTF8.contains(index) { nonUTF8Positionals.insert(positionals.count) }
                    positionals.append(arg)
                    positionalBytes.append(raw?[index] ?? Array(arg.utf8))
                }
                continue
            }
            guard !nonUTF8.contains(index) && !(i < argv.count && nonUTF8.contains(i) && Self.valueOptions.contains(arg)) else {
                throw UsageError(message: "option \(arg.prefix(40)) or its value is not UTF-8 text")
            }
            if arg == "--" { optionsEnded = true; continue }
            var name = arg
            var inlineValue: String?
            if let eq = arg.firstIndex(of: "=") {
                name = String(arg[..<eq])
                inlineValue = String(arg[arg.index(after: eq)...])
            }
            if Self.valueOptions.contains(name) {
                let value: String
                if let inlineValue { value = inlineValue } else {
                    guard i < argv.count else { throw UsageError(message: "option \(name) needs a value") }
                    value = argv[i]
                    i += 1
                }
                try take(name, value)
                if Self.commandValueOptions.contains(name) { commandOptionsSeen.insert(name) }
            } else if inlineValue == nil, Self.flagOptions.contains(name) {
                switch name {
                case "--json": json = true
                case "--no-input": noInput = true
                case "--help", "-h": help = true
                case "--version": version = true
                default: flags.insert(name); commandOptionsSeen.insert(name)
                }
            } else {
                throw UsageError(message: "unknown option \(name)")
            }
        }
        if let command {
            guard let allowed = Self.commandOptions[command] else { throw UsageError(message: "unknown command '\(command)'") }
            if let stray = commandOptionsSeen.subtracting(allowed).sorted().first {
                throw UsageError(message: "option \(stray) does not apply to '\(command)'")
            }
        }
    }

    private mutating func take(_ name: String, _ value: String) throws {
        switch name {
        case "--app": app = value
        case "--plugin-dir": pluginDirectories.append(value)
        case "--method": method = value
        case "--root": root = value
        case _ where SecretDescriptors.options.contains(name):
            guard let fd = Int32(value), fd >= 0 else { throw UsageError(message: "\(name) takes a file descriptor number") }
            secretFDs.set(name, fd)
        case "--label": label = value
        case "--for":
            guard duration == nil else { throw UsageError(message: "--for given twice") }
            duration = value
        case "--change-credential":
            guard changeCredential == nil else { throw UsageError(message: "--change-credential given twice") }
            guard !value.isEmpty else { throw UsageError(message: "--change-credential takes a shell command") }
            changeCredential = value
        case "--opt", "--wrong-opt":
            guard let eq = value.firstIndex(of: "="), eq != value.startIndex else {
                throw UsageError(message: "\(name) takes name=value")
            }
            let key = String(value[..<eq])
            let given = name == "--opt" ? options : wrongOptions
            guard !given.contains(where: { $0.0 == key }) else { throw UsageError(message: "option \(key) given twice") }
            if name == "--opt" { options.append((key, String(value[value.index(after: eq)...]))) }
            else { wrongOptions.append((key, String(value[value.index(after: eq)...]))) }
        default: commandValues[name, default: []].append(value)
        }
    }

    /// Exactly the positionals named, the last `optional` of them optional.
    /// `expect`, refusing any positional that is not UTF-8 except those at `bytes`.
    func expect(_ names: [String], optional: Int = 0, bytesAt: Set<Int> = []) throws {
        try expectCount(names, optional: optional)
        if let bad = nonUTF8Positionals.subtracting(bytesAt).min() {
            throw UsageError(message: "\(names[min(bad, names.count - 1)]) is not UTF-8 text")
        }
    }

    private func expectCount(_ names: [String], optional: Int) throws {
        if positionals.count < names.count - optional {
            throw UsageError(message: "'\(command!)' needs \(names[positionals.count])")
        }
        if positionals.count > names.count {
            throw UsageError(message: "'\(command!)' takes \(names.isEmpty ? "no arguments" : names.joined(separator: " ")), got an extra argument")
        }
    }
}

let usage = """
usage: keybay-methods [global options] COMMAND [ARGS]

commands:
  status              show what is on disk (state, paths, root, methods)
  init [--opt NAME=VALUE ...] [--keep-in-backups]
                      create a new platform-only store (refuses if anything exists);
                      --opt goes to the root ($KEYBAY_ROOT), e.g. tpm2's pcrs=7 and
                      recovery=yes (a root recovery key, printed once); the store's
                      and the root's directories are marked as excluded from backups
                      (.deja-dup-ignore, user.xdg.robots.backup, nodump) unless --keep-in-backups
  get KEY...          print the value of each KEY, all from one unlock (exit 3, printing
                      nothing, if any has none; --json: {"KEY": "value" | {"valueHex": ...}, ...}
                      for two or more keys, {"key", "value"} for one)
  set KEY VALUE       store VALUE under KEY (creates the store if there is nothing yet)
  set KEY --stdin     store standard input, byte for byte, under KEY
  rm KEY              remove KEY (exit 3 if there is none)
  keys                list the keys
  list [--describe]   list the enrolled unlock methods (--describe: with each plugin's
                      description of its parameters; this loads the plugins)
  plugins             list the plugins found, whether each is usable here and needs a device
  enroll PLUGIN [--label L] [--opt NAME=VALUE ...]
                      add an unlock method (e.g. passphrase; --opt memory-kib=N
                      --opt iterations=N --opt lanes=N, else it calibrates; recovery:
                      a recovery key, shown once); on a fresh home it creates the store;
                      enroll PLUGIN --help lists the options that plugin takes
  change METHOD-ID [--label L] [--opt NAME=VALUE ...]
                      replace a method's secret in one step (unlocks with it unless
                      --method names another; the new secret is asked twice)
  remove METHOD-ID    remove an unlock method (the store returns to platform-only after the last)
  verify [METHOD-ID]  check a method's secret without changing anything
  benchmark [PLUGIN] [--opt target-ms=N]
                      calibrate a plugin that tunes its cost to this machine (default:
                      passphrase, Argon2id) and show what it picks
  plugin-check PATH.so [--opt NAME=VALUE ...] [--wrong-opt NAME=VALUE ...] [--change-credential CMD] [--pin-fd N]
                      conformance run for a plugin: descriptor, probe, enroll/unwrap round
                      trip, wrong and missing secrets, malformed parameters, buffers;
                      --wrong-opt enrolls a second credential (a method that asks for none);
                      --change-credential runs CMD with /bin/sh -c after the other checks
                      (e.g. 'cp b.key a.key'): unwrap must then give another M;
                      --pin-fd N: the device's real PIN answers its PIN requests (pkcs11)
  root move ROOT [--opt NAME=VALUE ...]
                      move the store to another platform root (file-root, secret-service, auto):
                      one atomic re-seal, then the old root is removed
  root check          exit 0 if the store's root would open now, 1 with pcr-mismatch naming
                      the PCRs that changed (tpm2; nothing is unsealed)
  root reseal [--recovery-key-fd N]
                      seal the tpm2 root again to the PCRs now in effect with the root
                      recovery key that init --opt recovery=yes printed
  unlock [--for DURATION]
                      open a protected store once (asking as get would) and hand it to the
                      keybay agent for DURATION (90s, 15m, 2h, or seconds; default 15m; 0:
                      until lock or logout): get, set, rm and keys then ask nothing
  lock [--all]        make the agent forget this store (--all: every store)
  agent               run the agent (unlock starts it; or systemd's keybay-agent.socket)
  backup exclude|include
                      mark the store's and the root's directories as excluded from backups,
                      or remove the markers (the store is then kept in backups)
  reset --yes         remove the store and its platform root, losing every record
  export --to RECIPIENT... [--to-file FILE] [--allow-agent] [KEY...]
                      write the records (or those KEYs) to standard output as an age file
                      encrypted to each age1... RECIPIENT (and those in FILE), never plaintext;
                      the store opens with its unlock method, not through the agent unless
                      --allow-agent
  import age --identity FILE [--replace] [--dry-run] [--allow-agent] [AGEFILE]
                      import an export (AGEFILE, or standard input) with the age identities in
                      FILE: new keys are imported, equal ones left, different ones are
                      conflicts (kept, named, exit 1) unless --replace; --dry-run writes nothing
  import secret-service --attr NAME=VALUE... --key-from ATTR [--prefix P] [--replace]
         [--dry-run] [--remove-source]
                      import the Secret Service items whose attributes match, each under the
                      key mapped from its ATTR value (docs/cli.md); --remove-source deletes each
                      item once its record reads back

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
