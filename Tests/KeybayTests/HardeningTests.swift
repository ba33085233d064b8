import Foundation
import Glibc
import Testing
@testable import Keybay

/// What a hostile environment does to the CLI: output that cannot be written, arguments that are
/// not text, a file-size limit. Each ends in a typed failure, never exit 0 with half a result.
@Suite struct HardeningTests {
    /// Runs `script` under /bin/sh with the CLI as "$0".
    static func shell(_ box: Sandbox, _ script: String) throws -> RunResult {
        try run("/bin/sh", ["-c", script, cliPath], environment: box.environment)
    }

    @Test func aFailedWriteToStandardOutputIsAnIOFailure() throws {
        let box = Sandbox()
        #expect(try box.cli("set", "a", "value").status == 0)
        for command in ["get a", "keys", "status --json", "list", "get a --json"] {
            let full = try Self.shell(box, "exec \"$0\" \(command) > /dev/full")
            #expect(full.status == 1 && full.stderr.contains("cannot write standard output") && full.stderr.contains("[io]"), "\(command): \(full.status) \(full.stderr)")
            let closed = try Self.shell(box, "exec \"$0\" \(command) >&-")
            #expect(closed.status == 1 && closed.stderr.contains("[io]"), "\(command) with stdout closed: \(closed.status) \(closed.stderr)")
        }
        #expect(try box.cli("get", "a").out == "value", "nothing changed")
    }

    @Test func aValueArgumentIsStoredByteForByte() throws {
        let box = Sandbox()
        let set = try Self.shell(box, "exec \"$0\" set k \"$(printf 'caf\\351')\"")
        #expect(set.status == 0, "\(set.stderr)")
        #expect(try box.cli("get", "k").stdout == [0x63, 0x61, 0x66, 0xe9])
        #expect(try box.cli("get", "k", "--json").out.contains("\"valueHex\":\"636166e9\""))
    }

    @Test(arguments: ["get \"$(printf '\\377')\"", "set \"$(printf 'k\\377')\" v", "enroll test-counting --label \"$(printf '\\377')\"",
                      "enroll test-counting --label=\"$(printf '\\377')\"", "--app \"$(printf 'a\\377')\" status"])
    func textThatIsNotUTF8IsRefusedBeforeAnythingIsTouched(_ command: String) throws {
        let box = Sandbox()
        let r = try Self.shell(box, "exec \"$0\" \(command)")
        #expect(r.status == 2 && r.stderr.contains("not UTF-8"), "\(command): \(r.status) \(r.stderr)")
        #expect(!exists(box.storePath) && !exists(box.rootPath), "nothing was created")
    }

    @Test func aFileSizeLimitIsAnIOFailureAndLeavesNoStagingFile() throws {
        let box = Sandbox()
        #expect(try box.cli("set", "small", "v").status == 0)
        let big = box.root + "/big"
        writeBytes(big, [UInt8](repeating: 0x61, count: 200_000))
        let before = readBytes(box.storePath)
        let r = try Self.shell(box, "ulimit -f 100; exec \"$0\" set big --stdin < \"\(big)\"")
        #expect(r.status == 1 && !r.signalled && r.stderr.contains("[io]"), "\(r.status) \(r.stderr)")
        #expect(!exists(box.stagingPath), "the staging file was removed")
        let unchanged = readBytes(box.storePath) == before
        #expect(unchanged)
    }

    /// `set` creates the store when nothing is there, so a `reset --yes` racing with it (the
    /// store removed between the open and the write) is no reason to fail.
    @Test func setRacingResetAlwaysLands() throws {
        let box = Sandbox()
        let errors = box.root + "/errors"
        let r = try Self.shell(box, """
            ( i=0; while [ $i -lt 200 ]; do "$0" reset --yes >/dev/null || exit 1; i=$((i+1)); done ) & resetter=$!
            status=0; i=0
            while [ $i -lt 200 ]; do "$0" set k v$i 2>>"\(errors)" || status=1; i=$((i+1)); done
            wait $resetter || status=2
            exit $status
            """)
        let failures = readBytes(errors).map { String(decoding: $0, as: UTF8.self) } ?? ""
        #expect(failures.isEmpty, "\(failures)")
        #expect(r.status == 0)
    }
}
