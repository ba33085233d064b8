// SPDX-License-Identifier: Apache-2.0
import Foundation
import Glibc
import Testing
@testable import Keybay
@testable import KeybayPrompt

/// `KeybayPinentry` in this process, against Tests/pinentry/scripted_pinentry.py: the answer's
/// data lines (%-escaped, split over several lines) decoded byte for byte into the buffer, an
/// answer longer than the buffer refused, `CONFIRM` for a yes/no question, and what is sent
/// %-escaped so a line break in a label cannot start a command of its own.
@Suite struct PinentryInteractionTests {
    static func request(label: String = "laptop", isNew: Bool = false, confirmation: Bool = false) -> KeybaySecretRequest {
        KeybaySecretRequest(kind: .passphrase, prompt: "", retriesLeft: 2, isNew: isNew, isConfirmation: confirmation,
                            application: "com.example.test", label: label, pluginID: "passphrase", isRetry: false, methodID: nil)
    }

    @Test func theAnswerIsDecodedIntoTheBufferByteForByte() throws {
        let box = Sandbox()
        let answer = "a%b\\c\rd ü and more than seven bytes%0A"
        let pinentry = try ScriptedPinentry(box, answers: [answer, "0123456789"])
        let asker = KeybayPinentry(program: pinentry.program, timeoutSeconds: 30)
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 64, alignment: 1)
        defer { buffer.deallocate() }
        let n = try asker.askSecret(Self.request(), into: buffer)
        #expect(Array(buffer[0..<n]) == Array(answer.utf8))
        // Longer than the buffer: refused, nothing kept.
        let small = UnsafeMutableRawBufferPointer(rebasing: buffer[0..<4])
        #expect(keybayCode { _ = try asker.askSecret(Self.request(), into: small) } == .invalidArgument)
        #expect(Array(small) == [0, 0, 0, 0], "the part that fitted was left in the buffer")
        let lines = try #require(pinentry.runs.first?.lines)
        #expect(lines.contains("SETTIMEOUT 30"), "\(lines)")
        #expect(ScriptedPinentry.argument("SETDESC", in: lines)?.contains("2 tries left") == true, "\(lines)")
    }

    @Test func aLineBreakInALabelIsEscaped() throws {
        let box = Sandbox()
        let pinentry = try ScriptedPinentry(box, answers: ["x"])
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 16, alignment: 1)
        defer { buffer.deallocate() }
        _ = try KeybayPinentry(program: pinentry.program).askSecret(Self.request(label: "evil\nGETPIN%"), into: buffer)
        let lines = try #require(pinentry.runs.first?.lines)
        #expect(lines.filter { $0 == "GETPIN" }.count == 1 && !lines.contains { $0.hasPrefix("GETPIN%") }, "\(lines)")
        #expect(ScriptedPinentry.argument("SETDESC", in: lines)?.contains("evil\\u{a}GETPIN%") == true, "\(lines)")
    }

    @Test(arguments: [("answer", true), ("no", false), ("cancel", false)])
    func aQuestionIsConfirm(_ mode: String, _ answer: Bool) throws {
        let box = Sandbox()
        let pinentry = try ScriptedPinentry(box, mode: mode)
        #expect(try KeybayPinentry(program: pinentry.program).confirm("Unlock the keyring?") == answer)
        let lines = try #require(pinentry.runs.first?.lines)
        #expect(lines.contains("CONFIRM") && ScriptedPinentry.argument("SETDESC", in: lines)?.contains("Unlock the keyring?") == true, "\(lines)")
    }

    @Test func theConfirmingEntryOfANewSecretSaysSo() throws {
        let box = Sandbox()
        let pinentry = try ScriptedPinentry(box, answers: ["x"])
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 16, alignment: 1)
        defer { buffer.deallocate() }
        _ = try KeybayPinentry(program: pinentry.program).askSecret(Self.request(isNew: true, confirmation: true), into: buffer)
        let lines = try #require(pinentry.runs.first?.lines)
        #expect(ScriptedPinentry.argument("SETPROMPT", in: lines) == "Repeat:", "\(lines)")
    }
}
