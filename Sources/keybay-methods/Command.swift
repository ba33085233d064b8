import Glibc
import Keybay

enum Command {
    static func run(_ a: Arguments) async throws -> Int32 {
        guard let command = a.command, command != "help" else {
            Output.out(usage + "\n")
            return a.command == nil ? Exit.usage : Exit.success
        }
        switch command {
        case "status":
            try a.expect([])
            return try status(a, configuration(a))
        case "init":
            try a.expect([])
            let config = try configuration(a)
            let session = try await KeybayStore.initialize(config)
            session.close()
            a.json ? Output.line(JSON.render(.object([("initialized", .bool(true)), ("storePath", .string(config.storePath))])))
                   : Output.line("initialized a platform-only store at \(config.storePath)")
            return Exit.success
        case "get":
            try a.expect(["KEY"])
            let key = a.positionals[0]
            let session = try await KeybayStore.open(try configuration(a), createIfAbsent: false)
            defer { session.close() }
            guard let value = try session.get(key) else { return notFound(key, session) }
            if a.json {
                let field: (String, JSON.Value) = String(validating: value, as: UTF8.self).map { ("value", .string($0)) }
                    ?? ("valueHex", .string(value.map { String($0, radix: 16).count == 1 ? "0" + String($0, radix: 16) : String($0, radix: 16) }.joined()))
                Output.line(JSON.render(.object([("key", .string(key)), field])))
            } else {
                Output.write(1, value)
                if isatty(1) == 1, value.last != 0x0a { Output.out("\n") }
            }
            return Exit.success
        case "set":
            let fromStdin = a.flags.contains("--stdin")
            try a.expect(fromStdin ? ["KEY"] : ["KEY", "VALUE"])
            let key = a.positionals[0]
            let value = fromStdin ? try readStandardInput(limit: 1024 * 1024) : Array(a.positionals[1].utf8)
            guard value.count <= 1024 * 1024 else {
                throw KeybayError(.valueTooLarge, "the value for '\(key)' exceeds 1 MiB")
            }
            let config = try configuration(a)
            // Validate before anything touches the disk.
            try validateKey(key)
            let session = try await KeybayStore.open(config)
            defer { session.close() }
            try session.set(key, bytes: value)
            if a.json { Output.line(JSON.render(.object([("key", .string(key)), ("stored", .bool(true))]))) }
            return Exit.success
        case "rm":
            try a.expect(["KEY"])
            let key = a.positionals[0]
            try validateKey(key)
            let session = try await KeybayStore.open(try configuration(a), createIfAbsent: false)
            defer { session.close() }
            guard try session.delete(key) else { return notFound(key, session) }
            if a.json { Output.line(JSON.render(.object([("key", .string(key)), ("removed", .bool(true))]))) }
            return Exit.success
        case "keys":
            try a.expect([])
            let session = try await KeybayStore.open(try configuration(a), createIfAbsent: false)
            defer { session.close() }
            let keys = try session.keys()
            a.json ? Output.line(JSON.render(.array(keys.map { .string($0) })))
                   : Output.out(keys.map { $0 + "\n" }.joined())
            return Exit.success
        case "reset":
            try a.expect([])
            guard a.flags.contains("--yes") else {
                throw Arguments.UsageError(message: "reset deletes the store and its platform root, losing every record; confirm with --yes")
            }
            let config = try configuration(a)
            try KeybayStore.reset(config)
            a.json ? Output.line(JSON.render(.object([("reset", .bool(true)), ("storePath", .string(config.storePath))])))
                   : Output.line("removed the store and platform root of \(config.applicationID) (if there were any)")
            return Exit.success
        default:
            throw Arguments.UsageError(message: "unknown command '\(command)'")
        }
    }

    static func configuration(_ a: Arguments) throws -> KeybayConfiguration {
        guard let app = a.app ?? getenv("KEYBAY_APP_ID").map({ String(cString: $0) }), !app.isEmpty else {
            throw Arguments.UsageError(message: "no application id: pass --app ID or set KEYBAY_APP_ID")
        }
        return try KeybayConfiguration(applicationID: app)
    }

    static func status(_ a: Arguments, _ config: KeybayConfiguration) throws -> Int32 {
        let s = try KeybayStore.status(config)
        if a.json {
            Output.line(JSON.render(.object([
                ("state", .string(s.state.rawValue)),
                ("storePath", .string(s.storePath)),
                ("rootPlugin", .string(s.rootPlugin)),
                ("rootLocation", .string(s.rootLocation)),
                ("methods", .array([])),
                ("protection", .string(s.rootProtection)),
            ])))
        } else {
            Output.out("""
                state:      \(s.state.rawValue)
                store:      \(s.storePath)
                root:       \(s.rootPlugin) at \(s.rootLocation)
                methods:    none
                note:       \(s.rootProtection)

                """)
        }
        return Exit.success
    }

    static func validateKey(_ key: String) throws {
        // The session validates too; doing it first keeps invalid input from creating a store.
        if !KeybayRecordKey.isValid(key) {
            throw KeybayError(.invalidKey, "invalid record key: use 1–120 bytes of [A-Za-z0-9._-] segments joined by '/', each starting with a letter or digit")
        }
    }

    static func notFound(_ key: String, _ session: KeybaySession) -> Int32 {
        Output.error("no record '\(key)' in \(session.storePath) [not-found]")
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
