// SPDX-License-Identifier: Apache-2.0
import Foundation
import Glibc
import Testing
@testable import Keybay

/// The stable command-line interface (what scripts outside the code base rely on), exercised as a real process.
@Suite struct CLITests {
    @Test func walkthrough() throws {
        let box = Sandbox()
        #expect(try box.cli("status", "--json").out.contains("\"state\":\"absent\""))
        #expect(try box.cli("init").status == 0)
        #expect(try box.cli("set", "service/token", "correct horse").status == 0)
        let got = try box.cli("get", "service/token")
        #expect(got.status == 0 && got.stdout == Array("correct horse".utf8))
        #expect(try box.cli("keys").out == "service/token\n")
        let status = try box.cli("status", "--json").out
        for field in ["\"state\":\"platform-only\"", "\"storePath\":\"\(box.storePath)\"", "\"rootPlugin\":\"file-root\"",
                      "\"rootLocation\":\"\(box.rootPath)\"", "\"methods\":[]"] {
            #expect(status.contains(field), "status --json lacks \(field): \(status)")
        }
        #expect(try box.cli("rm", "service/token").status == 0)
        #expect(try box.cli("get", "service/token").status == 3)
        #expect(try box.cli("rm", "service/token").status == 3)
        #expect(try box.cli("keys", "--json").out == "[]\n")
    }

    @Test func globalOptionsBeforeOrAfterTheCommand() throws {
        let box = Sandbox()
        var env = box.environment
        env["KEYBAY_APP_ID"] = nil
        #expect(try run(cliPath, ["--app", box.app, "set", "k", "v"], environment: env).status == 0)
        let after = try run(cliPath, ["get", "k", "--app", box.app, "--json"], environment: env)
        #expect(after.status == 0 && after.out == "{\"key\":\"k\",\"value\":\"v\"}\n")
        #expect(try run(cliPath, ["get", "k", "--app=\(box.app)"], environment: env).out == "v")
        let noApp = try run(cliPath, ["get", "k"], environment: env)
        #expect(noApp.status == 2 && noApp.stderr.contains("--app"))
    }

    @Test func stdinValuesAreStoredByteForByte() throws {
        let box = Sandbox()
        let value: [UInt8] = (0..<70_000).map { UInt8(truncatingIfNeeded: $0 &* 31) } + [0x0a]
        #expect(try box.cli("set", "bin", "--stdin", stdin: value).status == 0)
        #expect(try box.cli("get", "bin").stdout == value)
        let json = try box.cli("get", "bin", "--json").out
        #expect(json.hasPrefix("{\"key\":\"bin\",\"valueHex\":\"00"))
    }

    @Test func usageErrorsExitTwoAndTouchNothing() throws {
        let box = Sandbox()
        for args in [["frobnicate"], ["get"], ["set", "k"], ["rm", "k", "extra"], ["status", "--bogus"],
                     ["get", "k", "--yes"], ["reset"], ["set", "bad key", "v"], ["set", "/k", "v"], ["--app"],
                     ["--app", "bad/app", "status"], []] {
            let r = try run(cliPath, args, environment: box.environment)
            #expect(r.status == 2, "\(args) exited \(r.status)")
            #expect(r.stderr.split(separator: "\n").count == 1 || args.isEmpty, "one-line reason for \(args): \(r.stderr)")
            #expect(!exists(box.storePath) && !exists(box.rootPath), "\(args) created state")
        }
        let big = [UInt8](repeating: 0x41, count: 1024 * 1024 + 1)
        #expect(try box.cli("set", "k", "--stdin", stdin: big).status == 2)
        #expect(!exists(box.storePath))

        #expect(try box.cli("set", "k", "v").status == 0)
        let before = readBytes(box.storePath)
        #expect(try box.cli("set", "k", "--stdin", stdin: big).status == 2)
        #expect(try box.cli("set", "k/", "x").status == 2)
        #expect(readBytes(box.storePath) == before)
        #expect(try box.cli("set", "k", "--stdin", stdin: [UInt8](repeating: 0x41, count: 1024 * 1024)).status == 0)
    }

    @Test func deletedRootInvalidatesThePlatformKey() throws {
        let box = Sandbox()
        #expect(try box.cli("set", "k", "v").status == 0)
        let before = readBytes(box.storePath)
        unlink(box.rootPath)
        let r = try box.cli("get", "k", "--json")
        #expect(r.status == 1 && r.error?.code == "platform-key-invalidated" && r.error?.reason == "root-missing" && r.error?.path == box.rootPath,
                "\(r.out)")
        #expect(try box.cli("set", "k", "w").status == 1)
        #expect(readBytes(box.storePath) == before)
        #expect(try box.cli("status", "--json").out.contains("\"state\":\"store-only\""))
    }

    @Test func rootOnlyRefusesInitUntilReset() throws {
        let box = Sandbox()
        #expect(try box.cli("init").status == 0)
        unlink(box.storePath)
        #expect(try box.cli("status", "--json").out.contains("\"state\":\"root-only\""))
        let refused = try box.cli("init", "--json")
        #expect(refused.status == 1 && refused.error?.code == "state-conflict", "\(refused.out)")
        #expect(try box.cli("set", "k", "v").status == 1)
        #expect(try box.cli("reset", "--yes").status == 0)
        #expect(try box.cli("reset", "--yes").status == 0)
        #expect(try box.cli("status", "--json").out.contains("\"state\":\"absent\""))
        #expect(try box.cli("init").status == 0)
        #expect(try box.cli("status", "--json").out.contains("\"state\":\"platform-only\""))
    }

    /// Options a root does not take are refused (exit 2) before anything is made: no store, no
    /// root, not even the store's directory or its lock file.
    @Test func rootOptionsRefusedCreateNothing() throws {
        let box = Sandbox()
        for opt in ["pcrs=7", "nonsense=1"] {
            let r = try box.cli("init", "--opt", opt, "--json")
            #expect(r.status == 2 && r.error?.code == "invalid-argument" && r.error?.reason == "no-root-options" && r.error?.pluginID == "file-root",
                    "\(opt): \(r.out)")
        }
        #expect(!exists(box.dataHome + "/keybay") && !exists(box.stateHome + "/keybay"), "a refused init left directories")
        #expect(try box.cli("init").status == 0)
    }

    @Test func readCommandsOnNothingCreateNothing() throws {
        let box = Sandbox()
        for args in [["get", "k"], ["keys"], ["rm", "k"]] {
            let r = try run(cliPath, args + ["--json"], environment: box.environment)
            #expect(r.status == 1 && r.error?.code == "store-not-found" && r.error?.path == box.storePath, "\(args): \(r.status) \(r.out)")
        }
        #expect(!exists(box.rootPath))
    }

    @Test func aSecondProcessSeesTheFirstProcessWrites() async throws {
        let box = Sandbox()
        let session = try await KeybayStore.open(box.configuration())
        try session.set("from-test", string: "1")
        #expect(try box.cli("get", "from-test").out == "1")
        #expect(try box.cli("set", "from-cli", "2").status == 0)
        #expect(try session.getString("from-cli") == "2", "an open session notices another process's write")
    }

    @Test func independentReaderOpensACLIStore() throws {
        let box = Sandbox()
        #expect(try box.cli("set", "service/token", "correct horse").status == 0)
        #expect(try box.cli("set", "bin/blob", "--stdin", stdin: [0, 1, 2, 0xff]).status == 0)
        #expect(try box.cli("set", "a", "").status == 0)
        let r = try IndependentReaderTests.read(box)
        #expect(r.status == 0, "reader failed: \(r.stderr)")
        #expect(r.out.contains("\"service/token\": \"\(hexString(Array("correct horse".utf8)))\""), "\(r.out)")
        #expect(r.out.contains("\"bin/blob\": \"000102ff\""))
        #expect(r.out.contains("\"a\": \"\""))
        // The reader is strict too: a flipped byte fails it.
        var bytes = readBytes(box.storePath)!
        bytes[bytes.count - 10] ^= 1
        writeBytes(box.storePath, bytes)
        let bad = try IndependentReaderTests.read(box)
        #expect(bad.status == 1)
    }
}

extension CLITests {
    /// The independent reader also opens the worked example of docs/format.md §9.2.
    @Test func independentReaderOpensTheWorkedExample() throws {
        let box = Sandbox(app: FileRootVectorTests.V.app)
        for path in [box.rootPath, box.storePath] {
            try FileManager.default.createDirectory(atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        }
        writeBytes(box.rootPath, Array("KBFR".utf8) + [0, 1] + FileRootVectorTests.V.root)
        writeBytes(box.storePath, hex(FileRootVectorTests.V.file))
        let r = try IndependentReaderTests.read(box)
        #expect(r.status == 0 && r.out.trimmingCharacters(in: .whitespacesAndNewlines) == "{}", "\(r.stderr)")
    }
}
