// SPDX-License-Identifier: Apache-2.0
import Glibc
import Keybay

/// `set KEY VALUE`, `set KEY --stdin`: a value stored byte for byte (the store created if there
/// is nothing yet).
extension Command {
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
