// SPDX-License-Identifier: Apache-2.0
import CSodium
import Glibc
import Keybay

/// `export --to RECIPIENT... [--to-file FILE] [--allow-agent] [KEY...]`: the records as an age
/// file on standard output (docs/format.md §13), never in plaintext. The store opens with its
/// unlock method as `get` would, but not through the agent unless `--allow-agent`: a store left
/// unlocked must not hand itself out whole without being asked.
extension Command {
    static func export(_ c: Context) throws -> Int32 {
        let a = c.a
        try a.expect(Array(repeating: "KEY", count: a.positionals.count))
        for key in a.positionals { try validateKey(key) }
        var recipients = try (a.commandValues["--to"] ?? []).map(KeybayAge.validRecipient)
        for file in a.commandValues["--to-file"] ?? [] {
            let bytes = try readWholeFile(file, what: "recipients file")
            recipients += try KeybayAge.recipients(fromFile: String(decoding: bytes, as: UTF8.self))
        }
        guard !recipients.isEmpty else { throw Arguments.UsageError(message: "'export' needs --to RECIPIENT or --to-file FILE") }
        // An age file is binary: it goes to a file or a pipe (age refuses a terminal too).
        guard isatty(1) == 0 else { throw Arguments.UsageError(message: "standard output is a terminal: redirect the export to a file or a pipe") }
        let allowAgent = a.flags.contains("--allow-agent")
        let session = try unlock(a, c.interaction, createIfAbsent: false, throughAgent: allowAgent)
        defer { session.close() }
        let file = try session.export(to: recipients, keys: a.positionals, allowAgent: allowAgent)
        Output.write(1, file)
        return Exit.success
    }

    /// The bytes of a file the user named (an identity, recipients or age file), at most
    /// `KeybayAge.maxFileBytes`; `-` is standard input.
    static func readWholeFile(_ path: String, what: String) throws -> [UInt8] {
        if path == "-" { return try readStandardInput(limit: KeybayAge.maxFileBytes) }
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw KeybayError(.invalidArgument, "cannot open the \(what) \(path): \(String(cString: strerror(errno)))") }
        defer { close(fd) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65536)
        defer { wipe(&chunk) }
        while bytes.count <= KeybayAge.maxFileBytes {
            let n = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress!, $0.count) }
            if n < 0 { if errno == EINTR { continue }; throw KeybayError(.io, "cannot read the \(what) \(path): \(String(cString: strerror(errno)))") }
            if n == 0 { return bytes }
            bytes.append(contentsOf: chunk[0..<n])
        }
        throw KeybayError(.invalidArgument, "the \(what) \(path) is larger than \(KeybayAge.maxFileBytes) bytes")
    }

    /// Zeroes a copy of secret bytes (an identity file, imported values) before it is dropped.
    static func wipe(_ bytes: inout [UInt8]) {
        bytes.withUnsafeMutableBytes { if let base = $0.baseAddress { sodium_memzero(base, $0.count) } }
    }
}
