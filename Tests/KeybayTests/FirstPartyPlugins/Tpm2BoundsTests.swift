// SPDX-License-Identifier: Apache-2.0
import Foundation
import Glibc
import Synchronization
import Testing
@testable import Keybay

/// The tpm2 root reaches only the TPM it is told to, gives up on one that does not answer, and
/// lets this user's processes share one TPM (docs/security.md, "The tpm2 root").
@Suite struct Tpm2BoundsTests {
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
            let r = try Self.runWithin(60, cliPath, ["init", "--root", "tpm2", "--json"], environment: env).result
            #expect(r.status == 1 && r.error?.code == "root-unavailable" && r.error?.reason == "no-tpm" && r.error?.path == "/dev/tpmrm0", "\(r.status): \(r.out)")
            #expect(try tpm.handles("handles-nv-index").isEmpty && tpm.handles("handles-transient").isEmpty, "the simulator on 2321 saw nothing")
            #expect(!exists(box.storePath) && !exists(Tpm2Tests.rootPath(box)))
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
                let r = try run(cliPath, args + ["--json"], environment: env)
                #expect(r.status == 2 && r.error?.code == "invalid-argument" && r.error?.reason == "tcti-refused",
                        "\(value) \(args[0]): \(r.status) \(r.out)")
                #expect(!exists(marker), "\(value) \(args[0]): the library was loaded")
                unlink(marker)
            }
            #expect(!exists(fresh.storePath))
        }
        #expect(try readBytes(box.storePath) == store && root.cli(box, ["get", "k"]).out == "v")
        #expect(try tpm.handles("handles-nv-index").count == 1)
    }

    /// A TPM that does not answer (swtpm stopped: its sockets still accept, nothing answers) is
    /// root-unavailable naming the TCTI once the bound passes (KEYBAY_TPM2_TIMEOUT_MS, here 1 s;
    /// 30 s unset, and never more), for opening a store and for creating one, and the TPM works
    /// again once it answers. A bound that is not 1–30000 ms is invalid-argument (exit 2); a
    /// larger number is taken as 30000.
    @Test func aTPMThatDoesNotAnswerTimesOut() throws {
        let tpm = try SoftwareTPM(), box = Sandbox(), root = RootUnderTest.tpm2(tpm)
        #expect(try root.cli(box, ["set", "k", "v"]).status == 0)
        var env = root.environment(box)
        env["KEYBAY_TPM2_TIMEOUT_MS"] = "1000"
        let fresh = Sandbox()
        tpm.stop()
        for (args, environment) in [(["get", "k"], env), (["init"], root.environment(fresh).merging(["KEYBAY_TPM2_TIMEOUT_MS": "1000"]) { $1 })] {
            let (r, seconds) = try Self.runWithin(20, cliPath, args + ["--json"], environment: environment)
            #expect(!r.signalled && r.status == 1 && r.error?.code == "root-unavailable" && r.error?.reason == "tpm-timeout",
                    "\(args[0]): \(r.signalled ? "killed after \(seconds) s" : "\(r.status)"): \(r.out)")
            #expect(seconds >= 0.95 && seconds < 10, "\(args[0]) took \(seconds) s")
        }
        #expect(!exists(fresh.storePath) && !exists(Tpm2Tests.rootPath(fresh)))
        tpm.resume()
        let again = try Self.runWithin(20, cliPath, ["get", "k"], environment: env).result
        #expect(again.status == 0 && again.out == "v", "\(again.stderr)")
        for value in ["0", "-1", "abc", "1.5", " 100", "100ms", "0x10"] {
            env["KEYBAY_TPM2_TIMEOUT_MS"] = value
            let r = try run(cliPath, ["get", "k", "--json"], environment: env)
            #expect(r.status == 2 && r.error?.code == "invalid-argument" && r.error?.reason == "timeout-refused", "\(value): \(r.out)")
        }
        env["KEYBAY_TPM2_TIMEOUT_MS"] = "99999999999999999999999"
        #expect(try run(cliPath, ["get", "k"], environment: env).out == "v", "a larger bound is 30 s, not refused")
    }

    /// A TPM that takes commands but never answers them (a listener the test runs in swtpm's
    /// place: the control channel answers, the command channel accepts and stays silent), so the
    /// wait is for a command's answer, not the connection's: root-unavailable within the bound.
    @Test func aTPMThatTakesCommandsButNeverAnswersTimesOut() throws {
        let silent = try SilentTPM(), box = Sandbox()
        var env = box.environment
        env["KEYBAY_TPM2_TCTI"] = "swtpm:host=127.0.0.1,port=\(silent.port)"
        env["KEYBAY_TPM2_TIMEOUT_MS"] = "1000"
        let (r, seconds) = try Self.runWithin(20, cliPath, ["init", "--root", "tpm2", "--json"], environment: env)
        #expect(!r.signalled && r.status == 1 && r.error?.code == "root-unavailable" && r.error?.reason == "tpm-timeout",
                "\(r.signalled ? "killed after \(seconds) s" : "\(r.status)"): \(r.out)")
        #expect(seconds >= 0.95 && seconds < 10, "init took \(seconds) s")
        #expect(silent.commandsReceived() > 0, "a command was sent: the wait was for its answer")
    }

    /// This user's processes take turns on a TPM (a lock file per TCTI under the state
    /// directory); one that holds it longer than the bound makes the others root-unavailable,
    /// within the bound, and they go on once it lets go.
    @Test func aProcessHoldingTheTPMIsWaitedForWithinTheBound() throws {
        let tpm = try SoftwareTPM(), box = Sandbox(), root = RootUnderTest.tpm2(tpm)
        #expect(try root.cli(box, ["set", "k", "v"]).status == 0)
        let directory = box.stateHome + "/keybay"
        let locks = try FileManager.default.contentsOfDirectory(atPath: directory).filter { $0.hasPrefix("tpm2-") && $0.hasSuffix(".lock") }
        try #require(locks.count == 1, "one lock file for one TCTI: \(locks)")
        #expect(mode(directory + "/" + locks[0]) == 0o600)
        let fd = open(directory + "/" + locks[0], O_RDONLY | O_CLOEXEC)
        try #require(fd >= 0 && flock(fd, LOCK_EX | LOCK_NB) == 0)
        var env = root.environment(box)
        env["KEYBAY_TPM2_TIMEOUT_MS"] = "1000"
        let (r, seconds) = try Self.runWithin(20, cliPath, ["get", "k", "--json"], environment: env)
        close(fd)
        #expect(!r.signalled && r.status == 1 && r.error?.code == "root-unavailable" && r.error?.reason == "tpm-busy",
                "\(r.signalled ? "killed after \(seconds) s" : "\(r.status)"): \(r.out)")
        #expect(seconds >= 0.95 && seconds < 10, "get took \(seconds) s")
        #expect(try run(cliPath, ["get", "k"], environment: env).out == "v")
    }

    /// The lock file needs no write access: a store whose state directory is a read-only mount
    /// still opens, with the lock file there (opened read-only, and taken: while the test holds
    /// it, `get` waits and gives up) and without it (made before there was one: the reader goes
    /// on without taking turns).
    @Test(.enabled(if: geteuid() == 0, "mounting a read-only file system needs root"))
    func aReadOnlyStateDirectoryStillOpens() throws {
        let tpm = try SoftwareTPM(), box = Sandbox()
        let mountPoint = box.root + "/mnt"
        mkdir(mountPoint, 0o700)
        let tools = ["PATH": "/usr/bin:/bin"]
        let mounted = try run("/bin/mount", ["-t", "tmpfs", "-o", "size=4m,mode=0700", "tmpfs", mountPoint], environment: tools)
        try #require(mounted.status == 0, "cannot mount a tmpfs: \(mounted.stderr)")
        defer { _ = try? run("/bin/umount", [mountPoint], environment: tools) }
        var env = RootUnderTest.tpm2(tpm).environment(box)
        env["XDG_STATE_HOME"] = mountPoint + "/state"
        #expect(try run(cliPath, ["set", "k", "v"], environment: env).status == 0)
        let directory = mountPoint + "/state/keybay"
        let locks = try FileManager.default.contentsOfDirectory(atPath: directory).filter { $0.hasPrefix("tpm2-") }
        try #require(locks.count == 1, "\(locks)")
        for lockFile in [true, false] {
            if !lockFile {
                try #require(run("/bin/mount", ["-o", "remount,rw", mountPoint], environment: tools).status == 0)
                unlink(directory + "/" + locks[0])
            }
            try #require(run("/bin/mount", ["-o", "remount,ro", mountPoint], environment: tools).status == 0)
            if lockFile {
                let fd = open(directory + "/" + locks[0], O_RDONLY | O_CLOEXEC)
                try #require(fd >= 0 && flock(fd, LOCK_EX | LOCK_NB) == 0)
                let held = try Self.runWithin(20, cliPath, ["get", "k"], environment: env.merging(["KEYBAY_TPM2_TIMEOUT_MS": "500"]) { $1 }).result
                close(fd)
                #expect(held.status == 1 && held.stderr.contains("[root-unavailable]"), "the lock was not taken: \(held.status) \(held.stderr)")
            }
            let get = try run(cliPath, ["get", "k"], environment: env)
            #expect(get.status == 0 && get.out == "v", "lock file \(lockFile): \(get.stderr)")
        }
    }

    /// 4 processes × 8 `get`s at once on one TPM without a resource manager (swtpm's socket, 3
    /// object slots): every one succeeds.
    @Test func concurrentProcessesOnOneTPMAllSucceed() throws {
        let tpm = try SoftwareTPM(), box = Sandbox(), root = RootUnderTest.tpm2(tpm)
        #expect(try root.cli(box, ["set", "k", "v"]).status == 0)
        let env = root.environment(box)
        let failures = Mutex<[String]>([])
        DispatchQueue.concurrentPerform(iterations: 4) { worker in
            for i in 0..<8 {
                let r = Result { try Self.runWithin(120, cliPath, ["get", "k"], environment: env).result }
                switch r {
                case .success(let got) where got.status == 0 && got.out == "v": break
                case .success(let got): failures.withLock { $0.append("\(worker).\(i): \(got.status) \(got.stderr)") }
                case .failure(let error): failures.withLock { $0.append("\(worker).\(i): \(error)") }
                }
            }
        }
        let failed = failures.withLock { $0 }
        #expect(failed.isEmpty, "\(failed.count) of 32 failed: \(failed.prefix(3))")
        #expect(try tpm.handles("handles-transient").isEmpty, "every transient object was flushed")
    }
}

/// In swtpm's place, a TPM that takes commands and never answers: on P, a listener whose
/// connections the kernel completes and nobody reads; on P+1, swtpm's control channel, which
/// answers every command with success (tss2's swtpm TCTI sets the locality there when it starts).
final class SilentTPM: @unchecked Sendable {
    let port: UInt16
    private let command: Int32, control: Int32

    init() throws {
        var last = ""
        for _ in 0..<50 {
            guard let command = try? Self.listen(0) else { continue }
            let port = command.port
            guard port < 65535, let control = try? Self.listen(port + 1) else { Glibc.close(command.fd); last = "port \(port + 1) taken"; continue }
            self.port = port
            self.command = command.fd
            self.control = control.fd
            // Ends when the listener is shut down (accept fails).
            Thread { [control = control.fd] in
                while true {
                    let c = accept(control, nil, nil)
                    if c < 0 { if errno == EINTR { continue }; return }
                    var request = [UInt8](repeating: 0, count: 64)
                    _ = read(c, &request, request.count)
                    let success: [UInt8] = [0, 0, 0, 0]
                    _ = write(c, success, success.count)
                    Glibc.close(c)
                }
            }.start()
            return
        }
        throw KeybayTestFailure("no free loopback port pair for the silent TPM: \(last)")
    }

    deinit {
        shutdown(control, Int32(SHUT_RDWR))
        Glibc.close(control)
        Glibc.close(command)
    }

    /// Commands sent on the command channel (connections accepted by the kernel, never answered,
    /// that hold at least a TPM command header); tss2's connection that only checks the port
    /// holds none.
    func commandsReceived() -> Int {
        var count = 0
        while true {
            var poller = pollfd(fd: command, events: Int16(POLLIN), revents: 0)
            guard poll(&poller, 1, 0) == 1 else { return count }
            let c = accept(command, nil, nil)
            guard c >= 0 else { return count }
            var header = [UInt8](repeating: 0, count: 10)
            if recv(c, &header, header.count, Int32(MSG_DONTWAIT) | Int32(MSG_WAITALL)) == header.count { count += 1 }
            Glibc.close(c)
        }
    }

    /// A listener on 127.0.0.1:`port` (0: the kernel picks), and the port it got.
    static func listen(_ port: UInt16) throws -> (fd: Int32, port: UInt16) {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw KeybayTestFailure("socket: \(errno)") }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, length) == 0 && Glibc.listen(fd, 16) == 0 && getsockname(fd, $0, &length) == 0
            }
        }
        guard bound else { Glibc.close(fd); throw KeybayTestFailure("bind 127.0.0.1:\(port): \(errno)") }
        return (fd, UInt16(bigEndian: address.sin_port))
    }
}
