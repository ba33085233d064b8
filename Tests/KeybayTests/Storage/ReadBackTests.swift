// SPDX-License-Identifier: Apache-2.0
import Glibc
import Testing
@testable import Keybay

/// The read-back check after every durable write compares the file with what was encoded chunk
/// by chunk: any differing byte, in any chunk, or a different size is a mismatch.
@Suite struct ReadBackTests {
    @Test func everyDifferenceIsAMismatch() throws {
        let box = Sandbox()
        let dir = try #require(try PrivateDirectory.open(base: box.dataHome, components: ["keybay"], create: true))
        let expected = Sodium.randomBytes(600 * 1024 + 7) // three chunks, the last one short
        writeBytes(dir.pathOf("f"), expected)
        let identity = try #require(try dir.readBack("f", equals: expected))
        #expect(identity == dir.identity(of: "f"))
        for at in [0, 256 * 1024 - 1, 256 * 1024, 400 * 1024, expected.count - 1] {
            var changed = expected
            changed[at] ^= 0x01
            #expect(try dir.readBack("f", equals: changed) == nil, "byte \(at)")
        }
        #expect(try dir.readBack("f", equals: Array(expected.dropLast())) == nil)
        #expect(try dir.readBack("f", equals: expected + [0]) == nil)
        #expect(try dir.readBack("missing", equals: expected) == nil)
        writeBytes(dir.pathOf("empty"), [])
        #expect(try dir.readBack("empty", equals: []) != nil)
    }
}
