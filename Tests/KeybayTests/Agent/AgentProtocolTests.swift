// SPDX-License-Identifier: Apache-2.0
import Foundation
import Glibc
import Testing
@testable import Keybay

/// The agent's messages as docs/agent.md gives them: the worked exchange byte for byte, every
/// request and reply through encode and decode, and strict decoding (another version, a
/// truncated or overlong body, an unknown type, a length past the limit).
@Suite struct AgentProtocolTests {
    static let store = AgentStoreRef(applicationID: "a", dataHome: "/d", stateHome: "/s")

    @Test func theDocumentedExchangeIsByteForByte() throws {
        #expect(AgentRequest.record(Self.store, .get(key: "k")).frame == hex("00000018" + "0105" + "0000000161" + "000000022f64" + "000000022f73" + "000000016b"))
        #expect(AgentReply.answer(.value(Array("val".utf8))).frame == hex("0000000a" + "0184" + "01" + "00000003" + "76616c"))
        #expect(AgentReply.notHeld.frame == hex("00000002" + "0190"))
        let doc = try String(contentsOfFile: packageDirectory + "/docs/agent.md", encoding: .utf8)
        #expect(doc.contains("request  00 00 00 18  01 05  00 00 00 01 61  00 00 00 02 2f 64  00 00 00 02 2f 73  00 00 00 01 6b"))
        #expect(doc.contains("reply    00 00 00 0a  01 84  01 00 00 00 03 76 61 6c"))
    }

    @Test func everyRequestAndReplyRoundTrips() throws {
        let identity = FileIdentity({ var st = stat(); st.st_dev = 7; st.st_ino = 9; st.st_size = 1234; st.st_mtim.tv_nsec = 5; st.st_ctim.tv_sec = 6; return st }())
        let keys = StoreKeys(suite: .methods, storeId: [UInt8](repeating: 3, count: 16), epoch: 4, storeKey: SecureBytes(copying: [UInt8](repeating: 8, count: 32)))
        let handoff = AgentHandoff(store: Self.store, seconds: 90, identity: identity, rootID: "file-root", domain: [UInt8](repeating: 1, count: 32), keys: keys)
        let requests: [AgentRequest] = [.hold(handoff), .forget(Self.store), .forgetAll, .query(Self.store), .record(Self.store, .get(key: "a/b")),
                                        .record(Self.store, .getMany(keys: ["a", "b"])), .record(Self.store, .keys), .record(Self.store, .contains(key: "x")),
                                        .record(Self.store, .set(key: "x", value: [0, 1, 2])), .record(Self.store, .delete(key: "x")),
                                        .record(Self.store, .clearAll)]
        for request in requests {
            let frame = request.frame
            #expect(Int(frame[0..<4].reduce(0) { $0 << 8 | UInt32($1) }) == frame.count - 4)
            let decoded = try AgentRequest.decode(Array(frame.dropFirst(4)))
            #expect(decoded.frame == frame, "\(request.type)")
        }
        guard case .hold(let back) = try AgentRequest.decode(Array(AgentRequest.hold(handoff).frame.dropFirst(4))) else { Issue.record("not a hold"); return }
        #expect(back.identity == identity && back.keys.storeKey.equals(keys.storeKey) && back.keys.epoch == 4 && back.seconds == 90)
        let replies: [AgentReply] = [.answer(.done), .held(until: 1_800_000_000), .forgotten(count: 2), .holding(until: 0, rootID: "tpm2"),
                                     .answer(.value(nil)), .answer(.value([9])), .answer(.values([nil, [1], []])), .answer(.keyList(["a", "b/c"])),
                                     .answer(.bool(true)), .notHeld,
                                     .failed(KeybayError(.io, "it failed", tookEffect: true)), .refused("why")]
        for reply in replies {
            let frame = reply.frame
            #expect(try AgentReply.decode(Array(frame.dropFirst(4))).frame == frame, "\(reply.type)")
        }
        guard case .failed(let e) = try AgentReply.decode(Array(replies[10].frame.dropFirst(4))) else { Issue.record("not failed"); return }
        #expect(e.code == .io && e.tookEffect && e.message == "it failed")
    }

    @Test func decodingIsStrict() throws {
        let good = Array(AgentRequest.record(Self.store, .get(key: "k")).frame.dropFirst(4))
        var otherVersion = good
        otherVersion[0] = 2
        #expect(keybayError { _ = try AgentRequest.decode(otherVersion) }?.code == .unsupported)
        #expect(keybayError { _ = try AgentRequest.decode(Array(good.dropLast())) }?.code == .malformed)
        #expect(keybayError { _ = try AgentRequest.decode(good + [0]) }?.code == .malformed)
        var unknown = good
        unknown[1] = 0x7f
        #expect(keybayError { _ = try AgentRequest.decode(unknown) }?.code == .malformed)
        #expect(keybayError { _ = try AgentReply.decode([1, 0x84, 2]) }?.code == .malformed)
        #expect(keybayError { _ = try AgentReply.decode([1, 0x91] + [0, 0, 0, 2] + Array("no".utf8) + [0, 0, 0, 0, 0]) }?.code == .malformed)
        // A count larger than what is left is refused before anything is allocated for it.
        #expect(keybayError { _ = try AgentReply.decode([1, 0x86, 0xff, 0xff, 0xff, 0xff]) }?.code == .malformed)
    }

    /// A declared length of 0 or past the limit is not read at all: `receive` gives nothing.
    @Test func aLengthPastTheLimitIsNotRead() throws {
        for length in [0, AgentFrame.maxLength + 1] {
            var fds: [Int32] = [0, 0]
            #expect(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &fds) == 0)
            defer { close(fds[0]); close(fds[1]) }
            let header = [UInt8(length >> 24 & 0xff), UInt8(length >> 16 & 0xff), UInt8(length >> 8 & 0xff), UInt8(length & 0xff)]
            #expect(AgentSocket.send(fds[0], header + [1, 0x80], before: AgentSocket.monotonicNow() + 1))
            #expect(AgentSocket.receive(fds[1], before: AgentSocket.monotonicNow() + 1) == nil)
        }
    }
}
