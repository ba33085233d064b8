// SPDX-License-Identifier: Apache-2.0
/// Manifest plaintext: `count:u32 | { LP(key) | frameLength:u32 | SHA-256(frame) } ...`,
/// keys unique and strictly ascending by bytes.
struct ManifestEntry: Equatable {
    let key: [UInt8]
    let frameLength: Int
    let digest: [UInt8]
}

enum Manifest {
    static func encode(_ entries: [ManifestEntry]) -> [UInt8] {
        var w = ByteWriter(capacity: 4 + entries.reduce(0) { $0 + 40 + $1.key.count })
        w.u32(UInt32(entries.count))
        for e in entries {
            w.lengthPrefixed(e.key)
            w.u32(UInt32(e.frameLength))
            w.raw(e.digest)
        }
        return w.bytes
    }

    static func decode(_ plaintext: [UInt8], context: String) throws -> [ManifestEntry] {
        var r = ByteReader(plaintext, context: "\(context): manifest")
        let count = Int(try r.u32("record count"))
        guard count <= Suite1.maxRecords else { throw r.malformed("\(count) records, limit \(Suite1.maxRecords)") }
        // Each entry takes at least 4 + 1 + 4 + 32 bytes: reject impossible counts before allocating.
        guard count <= r.remaining / 41 else { throw r.malformed("record count \(count) exceeds the manifest size") }
        var entries: [ManifestEntry] = []
        entries.reserveCapacity(count)
        for i in 0..<count {
            let key = try r.lengthPrefixed("key of record \(i)", maxLength: Suite1.maxKeyBytes)
            guard RecordKey.isValid(key) else { throw r.malformed("record \(i) has an invalid key") }
            if let previous = entries.last, !previous.key.lexicographicallyPrecedes(key) {
                throw r.malformed("record keys are not unique and ascending at record \(i)")
            }
            let length = Int(try r.u32("frame length of record \(i)"))
            guard length >= Suite1.minFrameBytes, length <= Suite1.maxFrameBytes else {
                throw r.malformed("frame length \(length) of record \(i) out of range")
            }
            let digest = try r.take(SHA256.byteCount, "digest of record \(i)")
            entries.append(ManifestEntry(key: Array(key), frameLength: length, digest: Array(digest)))
        }
        try r.finish()
        return entries
    }
}
