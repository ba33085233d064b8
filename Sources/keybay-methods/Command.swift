// SPDX-License-Identifier: Apache-2.0
import Glibc
import Keybay
import KeybayConformance

enum Command {
    /// Runs the command; if another process rotated the store key (enrolled or removed a method)
    /// between our unlock and our write, unlocks again and retries, at most twice. `set` retries
    /// too when the store vanished meanwhile (a racing `reset`): it creates one when there is none.
    /// Standard input and the secret descriptors are read once, before the first attempt: a
    /// retry finds them at EOF.
    static func run(_ a: Arguments) throws -> Int32 {
        try a.secretFDs.checkOpen()
        let interaction = CommandInteraction(descriptors: a.secretFDs, noInput: a.noInput)
        // `change` asks for the old secret and a new one: they never come from the same input.
        interaction.newFromUnlockDescriptors = a.command != "change"
        let standardInput = a.command == "set" && a.flags.contains("--stdin") ? try readStandardInput(limit: KeybayRecordKey.maxValueBytes) : nil
        var attempt = 0, vanished = 0
        while true {
            do {
                return try runOnce(a, interaction: interaction, standardInput: standardInput)
            } catch let e as KeybayError where KeybayOpenPolicy.shouldOpenAgain(after: e, retriesSoFar: attempt)
                        || (attempt < KeybayOpenPolicy.keyChangeRetries && e.code == .authenticationRequired && e.methods == nil) {
                // `.authenticationRequired` with --method: the agent stopped serving the store
                // between the open and the operation (without --method, the store may also have
                // become protected meanwhile). The retry opens it as it would without the agent.
                attempt += 1
                // Said, because on a terminal the retry asks for the secret again.
                interaction.message("keybay-methods: " + (e.code == .keyChanged ? "another process changed the store's unlock methods"
                                                                               : "the store became protected, or its unlock in the agent ended,") + " meanwhile; trying again", level: .info)
            } catch let e as KeybayError where vanished < 50 && e.code == .storeNotFound && a.command == "set" && a.method == nil {
                // Each retry opens (or creates) the store afresh; only a reset looping faster
                // than we can write exhausts them.
                vanished += 1
            }
        }
    }

    /// One command, given the secrets read beforehand.
    struct Context {
        let a: Arguments
        let interaction: CommandInteraction
        let standardInput: [UInt8]?
    }

    static func runOnce(_ a: Arguments, interaction: CommandInteraction, standardInput: [UInt8]?) throws -> Int32 {
        if a.help, a.command == "enroll", let plugin = a.positionals.first { return try enrollHelp(a, plugin: plugin) }
        if a.version && !a.help {
            a.json ? Output.line(JSON.render(.object([("version", .string(KeybayVersion.release)), ("pluginABI", .number(KeybayVersion.pluginABI))])))
                   : Output.line("keybay-methods \(KeybayVersion.release) (plugin ABI \(KeybayVersion.pluginABI))")
            return Exit.success
        }
        guard let command = a.command, command != "help", !a.help else {
            Output.out(usage + "\n")
            return a.command == nil && !a.help ? Exit.usage : Exit.success
        }
        let c = Context(a: a, interaction: interaction, standardInput: standardInput)
        switch command {
        case "status": return try status(c)
        case "init": return try initialize(c)
        case "get": return try get(c)
        case "set": return try set(c)
        case "rm": return try remove(c)
        case "keys": return try keys(c)
        case "list": return try list(c)
        case "plugins": return try plugins(c)
        case "enroll": return try enroll(c)
        case "change": return try change(c)
        case "remove": return try removeMethod(c)
        case "verify": return try verify(c)
        case "benchmark": return try benchmark(c)
        case "plugin-check": return try pluginCheck(c)
        case "root": return try root(c)
        case "reset": return try reset(c)
        case "backup": return try backup(c)
        case "unlock": return try unlockStore(c)
        case "lock": return try lockStores(c)
        case "agent": return try runAgent(c)
        case "export": return try export(c)
        case "import": return try importRecords(c)
        default: throw Arguments.UsageError(message: "unknown command '\(command)'")
        }
    }

    static func status(_ c: Context) throws -> Int32 {
        try c.a.expect([])
        return try status(c.a, configuration(c.a))
    }

    static func initialize(_ c: Context) throws -> Int32 {
        let a = c.a
        try a.expect([])
        var config = try configuration(a)
        config.rootOptions = a.options
        config.excludeFromBackups = !a.flags.contains("--keep-in-backups")
        let unconfirmed = try tookEffect { try KeybayStore.initialize(config, interaction: c.interaction).close() }
        let root = try KeybayStore.status(config).rootPlugin
        let warnings = initWarnings(config)
        let object = JSON.render(.object([("initialized", .bool(true)), ("storePath", .string(config.storePath)),
                                          ("rootPlugin", .string(root))] + (warnings.isEmpty ? [] : [("warnings", .array(warnings))])))
        printInitialized(object, text: "initialized a platform-only store at \(config.storePath) on the root \(root)", c)
        return try succeeded(unless: unconfirmed)
    }

    /// Runs a change; one that took effect but could not be confirmed durable (the new store is
    /// in place) is returned instead of thrown, so that the command prints its result as for a
    /// success before it fails with that error: what a command prints is what is on disk.
    static func tookEffect(_ change: () throws -> Void) throws -> KeybayError? {
        do {
            try change()
            return nil
        } catch let e as KeybayError where e.tookEffect {
            return e
        }
    }

    /// Success, or the unconfirmed change's error once its result is printed.
    static func succeeded(unless unconfirmed: KeybayError?) throws -> Int32 {
        if let unconfirmed { throw unconfirmed }
        return Exit.success
    }

    /// `rm KEY`: the key, checked before the store is opened, and the open store (never created)
    /// for `body`.
    static func withExistingRecord(_ c: Context, _ body: (String, KeybaySession) throws -> Int32) throws -> Int32 {
        try c.a.expect(["KEY"])
        let key = c.a.positionals[0]
        try validateKey(key)
        let session = try unlock(c.a, c.interaction, createIfAbsent: false)
        defer { session.close() }
        return try body(key, session)
    }

    static func set(_ c: Context) throws -> Int32 {
        let a = c.a
        try a.expect(c.standardInput != nil ? ["KEY"] : ["KEY", "VALUE"], bytesAt: [1])
        let key = a.positionals[0]
        let value = c.standardInput ?? a.positionalBytes[1]
        guard value.count <= KeybayRecordKey.maxValueBytes else {
            throw KeybayError(.valueTooLarge, "the value for '\(key)' exceeds 1 MiB")
        }
        // Validate before anything touches the disk.
        try validateKey(key)
        let session = try unlock(a, c.interaction, createIfAbsent: true)
        defer { session.close() }
        let unconfirmed = try tookEffect { try session.set(key, bytes: value) }
        if a.json { Output.line(JSON.render(.object([("key", .string(key)), ("stored", .bool(true))]))) }
        return try succeeded(unless: unconfirmed)
    }

    static func remove(_ c: Context) throws -> Int32 {
        try withExistingRecord(c) { key, session in
            var found = false
            let unconfirmed = try tookEffect { found = try session.delete(key) }
            guard found || unconfirmed != nil else { return notFound([key], session, json: c.a.json) }
            if c.a.json { Output.line(JSON.render(.object([("key", .string(key)), ("removed", .bool(true))]))) }
            return try succeeded(unless: unconfirmed)
        }
    }

    static func keys(_ c: Context) throws -> Int32 {
        let a = c.a
        try a.expect([])
        let session = try unlock(a, c.interaction, createIfAbsent: false)
        defer { session.close() }
        let keys = try session.keys()
        a.json ? Output.line(JSON.render(.array(keys.map { .string($0) })))
               : Output.out(keys.map { $0 + "\n" }.joined())
        return Exit.success
    }

    /// `list [--describe]`: the enrolled methods, read with the root alone; `--describe` also
    /// loads each method's plugin for its one-line description.
    static func list(_ c: Context) throws -> Int32 {
        let a = c.a
        try a.expect([])
        let describing = a.flags.contains("--describe")
        let (s, described) = describing ? try KeybayStore.describeMethods(configuration(a)) : (try KeybayStore.status(configuration(a)), [])
        guard s.state == .protected || s.state == .platformOnly else {
            throw KeybayError(.storeNotFound, "no usable store at \(s.storePath) (state \(s.state.rawValue))")
        }
        if a.json {
            Output.line(JSON.render(.array(describing ? described.map(describedJSON) : s.methods.map(methodJSON))))
        } else if s.methods.isEmpty {
            Output.line("no unlock methods: the store is protected by its platform root only")
        } else if describing {
            for d in described {
                Output.line("\(d.method.id)  \(d.method.plugin)  \(d.method.label)")
                Output.line("    " + (d.description ?? "(unknown: \(d.failure?.description ?? "no description"))"))
            }
        } else {
            for m in s.methods { Output.line("\(m.id)  \(m.plugin)  \(m.label)") }
        }
        return Exit.success
    }

    static func describedJSON(_ d: KeybayMethodDescription) -> JSON.Value {
        let m = d.method
        var fields: [(String, JSON.Value)] = [("id", .string(m.id)), ("plugin", .string(m.plugin)), ("label", .string(m.label))]
        if let text = d.description { fields.append(("description", .string(text))) }
        if let failure = d.failure { fields.append(("descriptionError", .string(failure.description))) }
        return .object(fields)
    }

    static func plugins(_ c: Context) throws -> Int32 {
        let a = c.a
        try a.expect([])
        let plugins = try KeybayPlugins.list(search: search(a))
        if a.json {
            Output.line(JSON.render(.array(plugins.map { p in
                var fields: [(String, JSON.Value)] = [("id", .string(p.id)), ("kind", .string(p.kind ?? "refused")),
                                                     ("version", .string(p.version ?? "")), ("path", .string(p.path)),
                                                     ("available", .bool(p.available)), ("needsDevice", .bool(p.needsDevice))]
                if let reason = p.reason { fields.append(("reason", .string(reason))) }
                return .object(fields)
            })))
        } else {
            for p in plugins {
                let device = p.needsDevice ? "  needs a device" : ""
                Output.line("\(p.id)  \(p.kind ?? "refused")  \(p.version ?? "-")  \(p.available ? "available" : "not available")\(device)  \(p.path)")
                if let reason = p.reason { Output.line("    \(reason)") }
                for o in p.options { Output.line("    --opt \(o.name)=…  \(o.help)") }
            }
        }
        return Exit.success
    }

    /// `enroll PLUGIN`: adds a method to the store; with nothing on disk, creates the store and
    /// its first method in one write, after the ceremony (a failed one leaves nothing behind).
    static func enroll(_ c: Context) throws -> Int32 {
        let a = c.a
        try a.expect(["PLUGIN"])
        let plugin = a.positionals[0]
        // Invalid input is refused before anything is read or created.
        try KeybayPluginSearch.validatePluginID(plugin)
        if let label = a.label { try KeybayMethod.validateLabel(label) }
        c.interaction.enrolling = plugin
        let session: KeybaySession
        do {
            session = try unlock(a, c.interaction, createIfAbsent: false)
        } catch let e as KeybayError where e.code == .storeNotFound && a.method == nil {
            let prepared = try KeybayStore.prepare(configuration(a), enrolling: plugin, options: a.options, label: a.label,
                                                   interaction: c.interaction)
            try StoredEnrollment.commitAndPrint(c, prepared, enrolledAs: "created the store with", undone: "the store it created was removed again")
            return Exit.success
        }
        defer { session.close() }
        let prepared = try session.auth.prepare(plugin: plugin, options: a.options, label: a.label)
        try StoredEnrollment.commitAndPrint(c, prepared, enrolledAs: "enrolled",
                                            undone: "the \(prepared.method.plugin) method \(prepared.method.id) was removed again")
        return Exit.success
    }

    /// `enroll PLUGIN --help`: the enroll usage and the options that plugin declares (loading it,
    /// without a probe).
    static func enrollHelp(_ a: Arguments, plugin id: String) throws -> Int32 {
        try KeybayPluginSearch.validatePluginID(id)
        let plugin = try KeybayPlugins.load(id, search: search(a))
        guard plugin.kind == "method" else {
            throw KeybayError(.invalidArgument, "\(id) at \(plugin.path) is a \(plugin.kind ?? "refused") plugin, not an unlock method")
        }
        var text = "usage: keybay-methods enroll \(id) [--label L] [--opt NAME=VALUE ...]\n"
        text += "\(id): \(plugin.name ?? id) \(plugin.version ?? "") (\(plugin.path))\n"
        text += plugin.options.isEmpty ? "it takes no --opt options\n"
            : "options:\n" + plugin.options.map { "  --opt \($0.name)=…  \($0.help)\n" }.joined()
        Output.out(text)
        return Exit.success
    }

    /// `change METHOD-ID`: unlocks with the method (or `--method`), then replaces its credential
    /// with a new one in one rotation.
    static func change(_ c: Context) throws -> Int32 {
        let a = c.a
        try a.expect(["METHOD-ID"])
        let id = a.positionals[0]
        if let label = a.label { try KeybayMethod.validateLabel(label) }
        var withMethod = a
        if a.method == nil { withMethod.method = id }
        let session = try unlock(withMethod, c.interaction, createIfAbsent: false, requireMethod: true)
        defer { session.close() }
        // Its replacement, enrolled by the same plugin, is what the --new-*-fd answer.
        c.interaction.enrolling = try session.auth.list().first { $0.id == id }?.plugin
        let prepared = try session.auth.prepare(replacing: id, options: a.options, label: a.label)
        let method = prepared.method
        try StoredEnrollment.commitAndPrint(c, prepared, json: [("changed", .string(id)), ("method", methodJSON(method)), ("methodId", .string(method.id))],
                                            text: "changed \(method.plugin) method \(id) (\(method.label)): it is now \(method.id); the old secret no longer opens the store",
                                            undone: "the change was taken back: method \(id) opens the store as before")
        return Exit.success
    }

    static func removeMethod(_ c: Context) throws -> Int32 {
        let a = c.a
        try a.expect(["METHOD-ID"])
        let session = try unlock(a, c.interaction, createIfAbsent: false)
        defer { session.close() }
        let unconfirmed = try tookEffect { try session.auth.remove(a.positionals[0]) }
        let left = try session.auth.list()
        a.json ? Output.line(JSON.render(.object([("removed", .string(a.positionals[0])), ("methods", .array(left.map(methodJSON)))])))
               : Output.line("removed method \(a.positionals[0]); \(left.isEmpty ? "the store is platform-only again" : "\(left.count) method(s) left")")
        return try succeeded(unless: unconfirmed)
    }

    static func verify(_ c: Context) throws -> Int32 {
        let a = c.a
        try a.expect(["METHOD-ID"], optional: 1)
        var withMethod = a
        if let id = a.positionals.first { withMethod.method = id }
        let session = try unlock(withMethod, c.interaction, createIfAbsent: false, requireMethod: true)
        session.close()
        a.json ? Output.line(JSON.render(.object([("verified", .bool(true))]))) : Output.line("verified: the secret unlocks the store")
        return Exit.success
    }

    /// `benchmark [PLUGIN]`: a plugin that calibrates a cost (the passphrase's Argon2id by default).
    static func benchmark(_ c: Context) throws -> Int32 {
        let a = c.a
        try a.expect(["PLUGIN"], optional: 1)
        let plugin = a.positionals.first ?? "passphrase"
        let interaction = CommandInteraction(descriptors: SecretDescriptors(), noInput: true)
        let result = try KeybayPlugins.benchmark(plugin: plugin, options: a.options, search: search(a), interaction: interaction)
        let ms = Int(result.unlockSeconds * 1000)
        a.json ? Output.line(JSON.render(.object([("plugin", .string(plugin)), ("parameters", .string(result.parameters)),
                                                  ("unlockMilliseconds", .number(ms))])))
               : Output.line("\(plugin): \(result.parameters); one unlock takes \(ms) ms here")
        return Exit.success
    }

    static func pluginCheck(_ c: Context) throws -> Int32 {
        let a = c.a
        try a.expect(["PATH.so"])
        // A device fixes its PIN: the real one, from --pin-fd, answers where a scripted one would not do.
        let pin = try a.secretFDs.pin.map { try c.interaction.descriptorSecret($0, what: "PIN") }
        let results = PluginCheck.run(path: a.positionals[0], options: a.options, wrongOptions: a.wrongOptions,
                                      changeCredential: a.changeCredential, pin: pin)
        let count = { (o: CheckResult.Outcome) in results.filter { $0.outcome == o }.count }
        if a.json {
            Output.line(JSON.render(.array(results.map {
                .object([("check", .string($0.name)), ("result", .string($0.outcome.rawValue)), ("passed", .bool($0.passed)), ("detail", .string($0.detail))])
            })))
        } else {
            let tags: [CheckResult.Outcome: String] = [.pass: "PASS", .fail: "FAIL", .skip: "SKIP", .notRun: "NOT RUN"]
            for r in results { Output.line("\(tags[r.outcome]!)  \(r.name)\(r.detail.isEmpty ? "" : ": " + r.detail)") }
            Output.line("\(count(.pass)) passed, \(count(.fail)) failed, \(count(.skip)) skipped, \(count(.notRun)) not run")
        }
        return count(.fail) == 0 ? Exit.success : Exit.failure
    }

    /// `root move ROOT`: the store (unlocked with a method if it is protected) re-sealed under
    /// another root, then the old root removed.
    static func root(_ c: Context) throws -> Int32 {
        let a = c.a
        if a.positionals.first == "check" { return try rootCheck(c) }
        if a.positionals.first == "reseal" { return try rootReseal(c) }
        try a.expect(["move", "ROOT"])
        guard a.positionals[0] == "move" else { throw Arguments.UsageError(message: "unknown root command '\(a.positionals[0])' (root move ROOT, root check, root reseal)") }
        let target = a.positionals[1]
        guard target == KeybayConfiguration.automaticRoot || KeybayPluginSearch.isValidPluginID(target) else {
            throw Arguments.UsageError(message: "'\(target)' is not a root plugin id (file-root, secret-service, auto, ...)")
        }
        var moving = a
        moving.root = nil // the store opens with its own root; the target is the argument
        let session = try unlock(moving, c.interaction, createIfAbsent: false)
        let from = session.configuration
        var moved: KeybayRootMove?
        let unconfirmed = try tookEffect { moved = try session.moveRoot(to: target, options: a.options) }
        // A move that took effect unconfirmed is read back from the store itself.
        let readBack = try moved == nil ? KeybayStore.status(from) : nil
        let rootPlugin = moved?.rootPlugin ?? readBack!.rootPlugin, rootLocation = moved?.rootLocation ?? readBack!.rootLocation
        if let left = moved?.oldRootLeftAt { Output.error("warning: the store moved, but its old root at \(left) could not be removed; remove it by hand") }
        a.json ? Output.line(JSON.render(.object([("rootPlugin", .string(rootPlugin)), ("rootLocation", .string(rootLocation)),
                                                  ("oldRootRemoved", .bool(moved != nil && moved?.oldRootLeftAt == nil))])))
               : Output.line("moved \(from.storePath) to the root \(rootPlugin) at \(rootLocation)")
        return try succeeded(unless: unconfirmed)
    }

    static func reset(_ c: Context) throws -> Int32 {
        let a = c.a
        try a.expect([])
        guard a.flags.contains("--yes") else {
            throw Arguments.UsageError(message: "reset deletes the store and its platform root, losing every record; confirm with --yes")
        }
        let config = try configuration(a)
        try KeybayStore.reset(config, interaction: c.interaction)
        a.json ? Output.line(JSON.render(.object([("reset", .bool(true)), ("storePath", .string(config.storePath))])))
               : Output.line("removed the store and platform root of \(config.applicationID) (if there were any)")
        return Exit.success
    }

    static func search(_ a: Arguments) -> KeybayPluginSearch {
        KeybayPluginSearch(directories: a.pluginDirectories)
    }

    /// The command's configuration; only `agentCommands` may be served by the agent (`throughAgent`
    /// false: none is).
    static func configuration(_ a: Arguments, throughAgent: Bool? = nil) throws -> KeybayConfiguration {
        guard let app = a.app ?? getenv("KEYBAY_APP_ID").map({ String(cString: $0) }), !app.isEmpty else {
            throw Arguments.UsageError(message: "no application id: pass --app ID or set KEYBAY_APP_ID")
        }
        var config = try KeybayConfiguration(applicationID: app)
        config.pluginSearch = search(a)
        // $KEYBAY_ROOT is the configuration's own default; --root overrides it.
        if let root = a.root {
            guard root == KeybayConfiguration.automaticRoot || KeybayPluginSearch.isValidPluginID(root) else {
                throw Arguments.UsageError(message: "'\(root)' is not a root plugin id (file-root, secret-service, auto, ...)")
            }
            config.rootPlugin = root
        }
        // An explicit --root that disagrees with an existing store is refused; $KEYBAY_ROOT only
        // chooses the root of new stores.
        config.requireRootPlugin = a.root != nil
        if !(throughAgent ?? agentCommands.contains(a.command ?? "")) { config.agentSocket = nil }
        return config
    }

    /// Opens the store by the library's policy (`KeybayOpenPolicy`): `--method`, the store's only
    /// method, or one the user picks; never tries credentials in turn. A wrong secret typed into
    /// a pinentry is asked for again, with the error shown, up to three tries in all (gpg-agent's
    /// way); one from a descriptor or the terminal fails at once (`mayAskAgain`).
    static func unlock(_ a: Arguments, _ interaction: CommandInteraction, createIfAbsent: Bool,
                       requireMethod: Bool = false, throughAgent: Bool? = nil) throws -> KeybaySession {
        let config = try configuration(a, throughAgent: throughAgent)
        // The unlock descriptors are the named method's, before its ceremony asks.
        if let method = a.method { interaction.unlocks(with: method) }
        let session = try KeybayStore.open(config, policy: KeybayOpenPolicy(method: a.method, createIfAbsent: createIfAbsent, tries: 3),
                                           interaction: interaction)
        if requireMethod && !session.isProtected {
            session.close()
            throw KeybayError(.protectionMismatch, "\(config.storePath) has no unlock methods to verify")
        }
        return session
    }

    static func methodJSON(_ m: KeybayMethod) -> JSON.Value { m.jsonValue }

    static func status(_ a: Arguments, _ config: KeybayConfiguration) throws -> Int32 {
        let s = try KeybayStore.status(config)
        let policy = statusPolicy(config, s)
        if a.json {
            guard case .object(let fields) = s.jsonValue else { return Exit.failure }
            Output.line(JSON.render(.object(fields + (policy.map { [("rootPolicy", $0.json)] } ?? []))))
        } else {
            let methods = s.methods.isEmpty ? "none" : s.methods.map { "\($0.id) \($0.plugin) (\($0.label))" }.joined(separator: "\n            ")
            Output.out("""
                state:      \(s.state.rawValue)
                store:      \(s.storePath)
                root:       \(s.rootPlugin) at \(s.rootLocation)
                methods:    \(methods)
                note:       \(s.rootProtection)\(policy.map { "\npolicy:     " + $0.text } ?? "")
                backups:    \(backupText(s.backupExclusion))\(s.state == .protected ? "\nunlocked:   " + (s.unlocked.map { untilText($0.until) } ?? "no") : "")

                """)
            for leftover in s.leftoverRoots {
                Output.line("leftover:   \(leftover.plugin) at \(leftover.location) (an interrupted root move left it; reset removes it)")
            }
        }
        return Exit.success
    }

    static func validateKey(_ key: String) throws {
        // The session validates too; doing it first keeps invalid input from creating a store.
        if !KeybayRecordKey.isValid(key) {
            throw KeybayError(.invalidKey, "invalid record key: use 1–120 bytes of [A-Za-z0-9._-] segments joined by '/', each starting with a letter or digit")
        }
    }

    /// Exit 3 for `keys` that have no record, named on standard error (and, with `--json`, in
    /// the error object on standard output, with `missing` listing them).
    static func notFound(_ keys: [String], _ session: KeybaySession, json: Bool) -> Int32 {
        let message = "no record\(keys.count > 1 ? "s" : "") \(keys.map { "'\($0)'" }.joined(separator: ", ")) in \(session.storePath)"
        Output.error(message + " [not-found]")
        if json { Output.jsonError(code: "not-found", message: message, fields: [("missing", .array(keys.map { .string($0) }))]) }
        return Exit.notFound
    }

    /// Reads standard input to EOF, at most `limit + 1` bytes (so an oversized value is detected, not truncated).
    static func readStandardInput(limit: Int) throws -> [UInt8] {
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65536)
        while bytes.count <= limit {
            let n = chunk.withUnsafeMutableBytes { read(0, $0.baseAddress!, $0.count) }
            if n < 0 { if errno == EINTR { continue }; throw KeybayError(.io, "cannot read standard input: \(String(cString: strerror(errno)))") }
            if n == 0 { break }
            bytes.append(contentsOf: chunk[0..<n])
        }
        return bytes
    }
}
