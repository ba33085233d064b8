// SPDX-License-Identifier: Apache-2.0
import Testing
@testable import Keybay

/// How a store's bootstrap names its root (docs/format.md §4).
@Suite struct RootTagTests {
    @Test func fileRootStatesAreBareAndEveryOtherRootIsTagged() throws {
        let state = [UInt8](repeating: 0xab, count: 32)
        #expect(try RootTag.encode(root: "file-root", state: state) == state)
        #expect(try RootTag.decode(state, context: "t") == ("file-root", state))
        let tagged = try RootTag.encode(root: "secret-service", state: state)
        #expect(tagged == [14] + Array("secret-service".utf8) + [32] + state)
        #expect(try RootTag.decode(tagged, context: "t") == ("secret-service", state))
    }

    @Test func aTaggedStateOfThirtyTwoBytesIsPadded() throws {
        // 1 + 4 + 1 + 26 = 32 bytes would read as file-root's: one 0x00 byte follows.
        let state = [UInt8](repeating: 1, count: 26)
        let tagged = try RootTag.encode(root: "tpm2", state: state)
        try #require(tagged.count == 33 && tagged.last == 0)
        #expect(try RootTag.decode(tagged, context: "t") == ("tpm2", state))
        var unpadded = tagged
        unpadded[32] = 1
        #expect(keybayCode { _ = try RootTag.decode(unpadded, context: "t") } == .malformed)
    }

    /// A bootstrap that names no root opens nothing, but reset still clears it (with the
    /// configured root, as before roots could be chosen).
    @Test func aStoreWhoseBootstrapNamesNoRootIsStillReset() throws {
        let box = Sandbox()
        #expect(try box.cli("set", "k", "v").status == 0)
        var bytes = try #require(readBytes(box.storePath))
        bytes[9] = 4 // providerStateLength 32 -> 4: "deadbeef"-like, names no root
        writeBytes(box.storePath, bytes)
        let got = try box.cli("get", "k")
        #expect(got.status == 1 && got.stderr.contains("[malformed]"), "\(got.stderr)")
        let reset = try box.cli("reset", "--yes")
        #expect(reset.status == 0, "\(reset.stderr)")
        #expect(!exists(box.storePath) && !exists(box.rootPath))
    }

    @Test func statesThatNameNoRootAreMalformed() throws {
        let bad: [[UInt8]] = [[], [0xde, 0xad, 0xbe, 0xef], [9] + Array("file-root".utf8) + [1, 0],
                              [3] + Array("Abc".utf8) + [0], [4] + Array("tpm2".utf8) + [2, 1], [4] + Array("tpm2".utf8) + [1, 1, 0]]
        for state in bad {
            #expect(keybayCode { _ = try RootTag.decode(state, context: "t") } == .malformed, "\(state)")
        }
        #expect(keybayCode { _ = try RootTag.encode(root: "secret-service", state: [UInt8](repeating: 0, count: 49)) } == .pluginFailed)
        #expect(keybayCode { _ = try RootTag.encode(root: "file-root", state: [1]) } == .pluginFailed)
    }
}
