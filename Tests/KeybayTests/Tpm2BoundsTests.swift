import Foundation
import Glibc
import Testing
@testable import Keybay

/// The tpm2 root reaches only the TPM it is told to (docs/security.md, "The tpm2 root").
extension Tpm2Tests {
    /// 127.0.0.1:2321 and 2322 are where tpm2-tss's default order looks for a simulator. A test
    /// that starts one there, or that runs the default TCTI, holds this lock (a file in /tmp, so
    /// that other test processes on this machine wait too): they never overlap.
    static func holdingTheSimulatorPorts<R>(_ body: () throws -> R) throws -> R {
        let fd = open("/tmp/keybay-test-tpm2-port-2321.lock", O_RDONLY | O_CREAT | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw KeybayTestFailure("cannot open /tmp/keybay-test-tpm2-port-2321.lock: errno \(errno)") }
        defer { close(fd) }
        while flock(fd, LOCK_EX) != 0 {
            guard errno == EINTR else { throw KeybayTestFailure("cannot lock /tmp/keybay-test-tpm2-port-2321.lock: errno \(errno)") }
        }
        return try body()
    }

    /// `run`, with a child still running after `limit` seconds killed (SIGKILL, then `signalled`):
    /// a hang fails the test instead of hanging the run. Also returns how long it ran.
    static func runWithin(_ limit: Double, _ executable: String, _ arguments: [String],
                          environment: [String: String]) throws -> (result: RunResult, seconds: Double) {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: executable)
        p.arguments = arguments
        p.environment = environment
        let out = Pipe(), err = Pipe()
        p.standardOutput = out
        p.standardError = err
        p.standardInput = FileHandle.nullDevice
        let start = Date()
        try p.run()
        while p.isRunning && Date().timeIntervalSince(start) < limit { usleep(5_000) }
        let seconds = Date().timeIntervalSince(start)
        if p.isRunning { kill(p.processIdentifier, SIGKILL) }
        p.waitUntilExit()
        let outData = out.fileHandleForReading.readDataToEndOfFile(), errData = err.fileHandleForReading.readDataToEndOfFile()
        return (RunResult(status: p.terminationStatus, signalled: p.terminationReason == .uncaughtSignal, stdout: [UInt8](outData),
                          stderr: String(decoding: errData, as: UTF8.self)), seconds)
    }

    /// With KEYBAY_TPM2_TCTI unset the root uses the TPM device alone (/dev/tpmrm0, else
    /// /dev/tpm0), never tss2's default order, which ends with a simulator on 127.0.0.1:2321: a
    /// swtpm listening there is never reached (no NV index, no object), and `init` is
    /// root-unavailable. Named in the variable, the same simulator is used.
    @Test(.enabled(if: !exists("/dev/tpmrm0") && !exists("/dev/tpm0"), "this machine has a TPM device, which the default uses"))
    func theDefaultIsTheDeviceAloneNeverASimulatorOnTheDefaultPort() throws {
        try Self.holdingTheSimulatorPorts {
            let tpm = try SoftwareTPM(port: 2321), box = Sandbox()
            var env = box.environment
            #expect(env["KEYBAY_TPM2_TCTI"] == nil)
            let r = try Self.runWithin(60, cliPath, ["init", "--root", "tpm2"], environment: env).result
            #expect(r.status == 1 && r.stderr.contains("[root-unavailable]") && r.stderr.contains("/dev/tpmrm0"), "\(r.status): \(r.stderr)")
            #expect(try tpm.handles("handles-nv-index").isEmpty && tpm.handles("handles-transient").isEmpty, "the simulator on 2321 saw nothing")
            #expect(!exists(box.storePath) && !exists(Self.rootPath(box)))
            env["KEYBAY_TPM2_TCTI"] = "swtpm:host=127.0.0.1,port=2321"
            let named = try run(cliPath, ["init", "--root", "tpm2"], environment: env)
            #expect(try named.status == 0 && tpm.handles("handles-nv-index").count == 1, "\(named.stderr)")
        }
    }

    /// KEYBAY_TPM2_TCTI takes a TCTI name (device, swtpm, mssim, tabrmd) and its configuration,
    /// never a library: a path, a library's name or any other name is invalid-argument (exit 2)
    /// before anything is loaded. A world-writable library in a world-writable directory (on
    /// LD_LIBRARY_PATH too, where tss2 would find it by a bare name), whose constructor would
    /// leave a file, never runs; a store on a good TPM is left as it was.
    @Test func aLibraryInTheTCTIVariableIsRefusedAndNeverLoaded() throws {
        let tpm = try SoftwareTPM(), box = Sandbox(), root = RootUnderTest.tpm2(tpm)
        #expect(try root.cli(box, ["set", "k", "v"]).status == 0)
        let open = box.root + "/open", marker = box.root + "/constructor-ran"
        mkdir(open, 0o777)
        chmod(open, 0o777)
        let source = open + "/tcti.c", library = open + "/libtss2-tcti-planted.so"
        writeBytes(source, Array("""
            #include <fcntl.h>
            #include <unistd.h>
            __attribute__((constructor)) static void ran(void) { close(open("\(marker)", O_WRONLY | O_CREAT, 0600)); }
            const void *Tss2_Tcti_Info(void) { return 0; }

            """.utf8))
        let cc = try run("/usr/bin/cc", ["-shared", "-fPIC", "-o", library, source], environment: ["PATH": "/usr/bin:/bin"])
        try #require(cc.status == 0, "cc: \(cc.stderr)")
        chmod(library, 0o777)
        let store = readBytes(box.storePath)
        for value in [library, library + ":host=127.0.0.1", "planted", "libtss2-tcti-planted.so", "./libtss2-tcti-planted.so",
                      "libtss2-tcti-swtpm.so.0:host=127.0.0.1,port=\(tpm.port)", "pcap:swtpm:host=127.0.0.1,port=\(tpm.port)", "cmd:true",
                      "swtpm/../planted", "Swtpm:host=127.0.0.1,port=\(tpm.port)"] {
            let fresh = Sandbox()
            let planted = ["KEYBAY_TPM2_TCTI": value, "LD_LIBRARY_PATH": open]
            for (args, env) in [(["get", "k"], root.environment(box).merging(planted) { $1 }),
                                (["init", "--root", "tpm2"], fresh.environment.merging(planted) { $1 })] {
                let r = try run(cliPath, args, environment: env)
                #expect(r.status == 2 && r.stderr.contains("[invalid-argument]") && r.stderr.contains("KEYBAY_TPM2_TCTI"),
                        "\(value) \(args[0]): \(r.status) \(r.stderr)")
                #expect(!exists(marker), "\(value) \(args[0]): the library was loaded")
                unlink(marker)
            }
            #expect(!exists(fresh.storePath))
        }
        #expect(try readBytes(box.storePath) == store && root.cli(box, ["get", "k"]).out == "v")
        #expect(try tpm.handles("handles-nv-index").count == 1)
    }
}
