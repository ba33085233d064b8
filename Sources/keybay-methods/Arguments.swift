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
    /// The command options each command accepts (globals are accepted everywhere): the table's.
    static let commandOptions = [String: Set<String>](uniqueKeysWithValues: CommandTable.all.map { ($0.name, $0.options) })

    /// The value options that belong to commands (the rest are global).
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
