// SPDX-License-Identifier: Apache-2.0

/// One command of the CLI, as the table below lists it.
struct CommandSpec: Sendable {
    let name: String
    /// The command options it accepts (the global ones are accepted by every command).
    let options: Set<String>
    /// Whether the keybay agent may serve its store (docs/agent.md). Every other command reads
    /// the store itself: rotations never go through the agent.
    let servedByAgent: Bool
    let run: @Sendable (Command.Context) throws -> Int32
    /// Its entries in the usage: a synopsis (continued on a second line after a newline) and
    /// what it does, one line or several. None: the usage does not list it.
    let usage: [(synopsis: String, summary: String)]

    init(_ name: String, options: Set<String> = [], servedByAgent: Bool = false, run: @escaping @Sendable (Command.Context) throws -> Int32,
         usage: [(synopsis: String, summary: String)]) {
        (self.name, self.options, self.servedByAgent, self.run, self.usage) = (name, options, servedByAgent, run, usage)
    }
}

/// The CLI's commands, in the order the usage lists them: the one list the dispatch
/// (`Command.runOnce`), the options each accepts (`Arguments`), the agent's reach
/// (`Command.configuration`) and the usage text (`Usage`) come from. CommandTableTests reads the
/// names here and fails when the usage, the man page, docs/cli.md or the bash completion
/// disagree on the commands and their subcommands.
enum CommandTable {
    static func named(_ name: String) -> CommandSpec? { all.first { $0.name == name } }

    static let all: [CommandSpec] = [
        CommandSpec("status", servedByAgent: true, run: { try Command.status($0) }, usage: [
            ("status", "show what is on disk (state, paths, root, methods)")]),
        CommandSpec("init", options: ["--opt", "--keep-in-backups"], run: { try Command.initialize($0) }, usage: [
            ("init [--opt NAME=VALUE ...] [--keep-in-backups]", """
                create a new platform-only store (refuses if anything exists);
                --opt goes to the root ($KEYBAY_ROOT), e.g. tpm2's pcrs=7 and
                recovery=yes (a root recovery key, printed once); the store's
                and the root's directories are marked as excluded from backups
                (.deja-dup-ignore, user.xdg.robots.backup, nodump) unless --keep-in-backups
                """)]),
        CommandSpec("get", servedByAgent: true, run: { try Command.get($0) }, usage: [
            ("get KEY...", """
                print the value of each KEY, all from one unlock (exit 3, printing
                nothing, if any has none; --json: {"KEY": "value" | {"valueHex": ...}, ...}
                for two or more keys, {"key", "value"} for one)
                """)]),
        CommandSpec("set", options: ["--stdin"], servedByAgent: true, run: { try Command.set($0) }, usage: [
            ("set KEY VALUE", "store VALUE under KEY (creates the store if there is nothing yet)"),
            ("set KEY --stdin", "store standard input, byte for byte, under KEY")]),
        CommandSpec("rm", servedByAgent: true, run: { try Command.remove($0) }, usage: [
            ("rm KEY", "remove KEY (exit 3 if there is none)")]),
        CommandSpec("keys", servedByAgent: true, run: { try Command.keys($0) }, usage: [
            ("keys", "list the keys")]),
        CommandSpec("list", options: ["--describe"], run: { try Command.list($0) }, usage: [
            ("list [--describe]", """
                list the enrolled unlock methods (--describe: with each plugin's
                description of its parameters; this loads the plugins)
                """)]),
        CommandSpec("plugins", run: { try Command.plugins($0) }, usage: [
            ("plugins", "list the plugins found, whether each is usable here and needs a device")]),
        CommandSpec("enroll", options: ["--label", "--opt"], run: { try Command.enroll($0) }, usage: [
            ("enroll PLUGIN [--label L] [--opt NAME=VALUE ...]", """
                add an unlock method (e.g. passphrase; --opt memory-kib=N
                --opt iterations=N --opt lanes=N, else it calibrates; recovery:
                a recovery key, shown once); on a fresh home it creates the store;
                enroll PLUGIN --help lists the options that plugin takes
                """)]),
        CommandSpec("change", options: ["--label", "--opt"], run: { try Command.change($0) }, usage: [
            ("change METHOD-ID [--label L] [--opt NAME=VALUE ...]", """
                replace a method's secret in one step (unlocks with it unless
                --method names another; the new secret is asked twice)
                """)]),
        CommandSpec("remove", run: { try Command.removeMethod($0) }, usage: [
            ("remove METHOD-ID", "remove an unlock method (the store returns to platform-only after the last)")]),
        CommandSpec("verify", run: { try Command.verify($0) }, usage: [
            ("verify [METHOD-ID]", "check a method's secret without changing anything")]),
        CommandSpec("benchmark", options: ["--opt"], run: { try Command.benchmark($0) }, usage: [
            ("benchmark [PLUGIN] [--opt target-ms=N]", """
                calibrate a plugin that tunes its cost to this machine (default:
                passphrase, Argon2id) and show what it picks
                """)]),
        CommandSpec("plugin-check", options: ["--opt", "--wrong-opt", "--change-credential"], run: { try Command.pluginCheck($0) }, usage: [
            ("plugin-check PATH.so [--opt NAME=VALUE ...] [--wrong-opt NAME=VALUE ...] [--change-credential CMD] [--pin-fd N]", """
                conformance run for a plugin: descriptor, probe, enroll/unwrap round
                trip, wrong and missing secrets, malformed parameters, buffers;
                --wrong-opt enrolls a second credential (a method that asks for none);
                --change-credential runs CMD with /bin/sh -c after the other checks
                (e.g. 'cp b.key a.key'): unwrap must then give another M;
                --pin-fd N: the device's real PIN answers its PIN requests (pkcs11)
                """)]),
        CommandSpec("root", options: ["--opt"], run: { try Command.root($0) }, usage: [
            ("root move ROOT [--opt NAME=VALUE ...]", """
                move the store to another platform root (file-root, secret-service, auto):
                one atomic re-seal, then the old root is removed
                """),
            ("root check", """
                exit 0 if the store's root would open now, 1 with pcr-mismatch naming
                the PCRs that changed (tpm2; nothing is unsealed)
                """),
            ("root reseal [--recovery-key-fd N]", """
                seal the tpm2 root again to the PCRs now in effect with the root
                recovery key that init --opt recovery=yes printed
                """)]),
        CommandSpec("unlock", options: ["--for"], servedByAgent: true, run: { try Command.unlockStore($0) }, usage: [
            ("unlock [--for DURATION]", """
                open a protected store once (asking as get would) and hand it to the
                keybay agent for DURATION (90s, 15m, 2h, or seconds; default 15m; 0:
                until lock or logout): get, set, rm and keys then ask nothing
                """)]),
        CommandSpec("lock", options: ["--all"], servedByAgent: true, run: { try Command.lockStores($0) }, usage: [
            ("lock [--all]", "make the agent forget this store (--all: every store)")]),
        CommandSpec("agent", run: { try Command.runAgent($0) }, usage: [
            ("agent", "run the agent (unlock starts it; or systemd's keybay-agent.socket)")]),
        CommandSpec("backup", run: { try Command.backup($0) }, usage: [
            ("backup exclude|include", """
                mark the store's and the root's directories as excluded from backups,
                or remove the markers (the store is then kept in backups)
                """)]),
        CommandSpec("reset", options: ["--yes"], run: { try Command.reset($0) }, usage: [
            ("reset --yes", "remove the store and its platform root, losing every record")]),
        CommandSpec("export", options: ["--to", "--to-file", "--allow-agent"], run: { try Command.export($0) }, usage: [
            ("export --to RECIPIENT... [--to-file FILE] [--allow-agent] [KEY...]", """
                write the records (or those KEYs) to standard output as an age file
                encrypted to each age1... RECIPIENT (and those in FILE), never plaintext;
                the store opens with its unlock method, not through the agent unless
                --allow-agent
                """)]),
        CommandSpec("import", options: ["--identity", "--replace", "--dry-run", "--allow-agent", "--attr", "--key-from", "--prefix", "--remove-source"], run: { try Command.importRecords($0) }, usage: [
            ("import age --identity FILE [--replace] [--dry-run] [--allow-agent] [AGEFILE]", """
                import an export (AGEFILE, or standard input) with the age identities in
                FILE: new keys are imported, equal ones left, different ones are
                conflicts (kept, named, exit 1) unless --replace; --dry-run writes nothing
                """),
            ("import secret-service --attr NAME=VALUE... --key-from ATTR [--prefix P] [--replace]\n[--dry-run] [--remove-source]", """
                import the Secret Service items whose attributes match, each under the
                key mapped from its ATTR value (docs/cli.md); --remove-source deletes each
                item once its record reads back
                """)]),
        // `help` prints the usage, which does not list it.
        CommandSpec("help", run: { try Command.help($0) }, usage: []),
    ]
}
