// SPDX-License-Identifier: Apache-2.0
import Foundation
import Glibc
import Testing

/// `root move` cut short, and `root move` racing an unlock: a move killed at any step leaves the
/// root the store does not use on record (`status` shows it, one `reset` removes both roots),
/// and an unlock with a named method whose store moves meanwhile opens it all the same.
@Suite struct RootMoveTests {
    /// Where a move from file-root to tpm2 is killed (SIGKILL as the call begins, by strace), as
    /// the call and what names the step in its arguments: before the store's rename (the new root
    /// is the leftover), and before the old root's file is removed (the old one is).
    static let killPoints = [("renameat", "\"keybay.v2.store\"", "tpm2"), ("unlinkat", "\"file-root.key\"", "file-root")]

    @Test(arguments: killPoints.indices)
    func aMoveCutShortLeavesItsOtherRootOnRecordAndResetRemovesBoth(_ index: Int) throws {
        let (call, argument, leftover) = Self.killPoints[index]
        let tpm = try SoftwareTPM(), box = Sandbox()
        let env = box.environment.merging(["KEYBAY_TPM2_TCTI": tpm.tcti]) { $1 }
        #expect(try run(cliPath, ["set", "a", "1"], environment: env).status == 0)
        // Which call of its kind the step is, in an undisturbed move of a copy.
        let copy = try FaultInjectionTests.copy(box)
        let trace = copy.root + "/trace"
        let moved = try run("/usr/bin/strace", ["-f", "-qq", "-o", trace, "-e", "trace=\(call)", cliPath, "root", "move", "tpm2"],
                            environment: copy.environment.merging(["KEYBAY_TPM2_TCTI": tpm.tcti]) { $1 })
        #expect(moved.status == 0, "\(moved.stderr)")
        let calls = String(decoding: readBytes(trace) ?? [], as: UTF8.self).split(separator: "\n").filter { $0.contains(call + "(") }
        let n = try #require(calls.firstIndex { $0.contains(argument) }, "no \(call) of \(argument) in \(calls)") + 1
        #expect(try run(cliPath, ["reset", "--yes"], environment: copy.environment.merging(["KEYBAY_TPM2_TCTI": tpm.tcti]) { $1 }).status == 0)

        let killed = try run("/usr/bin/strace", ["-f", "-qq", "-o", "/dev/null", "-e", "trace=\(call)", "-e", "inject=\(call):signal=KILL:when=\(n)",
                                                 cliPath, "root", "move", "tpm2"], environment: env)
        #expect(killed.status != 0, "the move was not cut short")
        let status = try run(cliPath, ["status", "--json"], environment: env)
        let object = try #require(FaultInjectionTests.printedObject(status), "\(status.stderr)")
        let leftovers = (object["leftoverRoots"] as? [[String: Any]])?.compactMap { $0["plugin"] as? String }
        #expect(leftovers == [leftover], "\(status.out)")
        #expect(object["state"] as? String == "platform-only", "\(status.out)")
        #expect(try run(cliPath, ["get", "a"], environment: env).out == "1")

        let reset = try run(cliPath, ["reset", "--yes"], environment: env)
        #expect(reset.status == 0, "\(reset.stderr)")
        let after = FaultInjectionTests.printedObject(try run(cliPath, ["status", "--json"], environment: env))
        #expect(after?["state"] as? String == "absent")
        #expect(!exists(box.rootPath), "file-root's key stayed")
        #expect(try tpm.handles("handles-nv-index").isEmpty, "the TPM's counter stayed")
        #expect(try tpm.handles("handles-persistent").isEmpty)
    }

    /// A get with `--method` whose root is still opening the key package it read while another
    /// process moves the store to another root and back: that package no longer opens, so the get
    /// opens the store again with the same method (it used to fail, asking for a method although
    /// one was named). `test-floor-crash` (file-root underneath) holds the open.
    @Test func aNamedMethodIsHonouredWhileTheStoreMoves() throws {
        let tpm = try SoftwareTPM(), box = Sandbox()
        var env = box.environment.merging(["KEYBAY_TPM2_TCTI": tpm.tcti, "KEYBAY_ROOT": "test-floor-crash",
                                           "KEYBAY_TEST_WRAPPED_ROOT": pluginDirectory + "/libkeybay-file-root.so"]) { $1 }
        #expect(try run(cliPath, ["set", "a", "1"], environment: env).status == 0)
        #expect(try run(cliPath, ["enroll", "test-counting", "--pin-fd", "0"], environment: env, stdin: Array("1".utf8)).status == 0)
        let id = try #require(try methodIDs(box, environment: env).first)

        let hold = box.root + "/hold"
        writeBytes(hold, [])
        var held = env
        held["KEYBAY_TEST_HOLD_AT_OPEN"] = hold
        var output = [Int32](repeating: -1, count: 2)
        #expect(closeOnExecPipe(&output))
        writeBytes(box.root + "/pin", Array("1".utf8))
        let getting = spawnChild(cliPath, ["get", "a", "--method", id, "--pin-fd", "0"], environment: held, stdinPath: box.root + "/pin",
                                 stdout: output[1])
        close(output[1])
        for _ in 0..<60_000 where !exists(hold + ".waiting") { usleep(1000) }
        #expect(exists(hold + ".waiting"), "the get never opened the key package")
        // There and back: the store is on its first root again, under a new root key.
        for target in ["tpm2", "test-floor-crash"] {
            let moved = try run(cliPath, ["root", "move", target, "--method", id, "--pin-fd", "0"], environment: env, stdin: Array("1".utf8))
            #expect(moved.status == 0, "\(moved.stderr)")
        }
        env["KEYBAY_TEST_HOLD_AT_OPEN"] = nil
        unlink(hold)
        var value: [UInt8] = []
        var byte: UInt8 = 0
        while read(output[0], &byte, 1) == 1 { value.append(byte) }
        close(output[0])
        #expect(waitChild(getting).succeeded)
        #expect(value == Array("1".utf8))
    }
}
