// SPDX-License-Identifier: Apache-2.0
import Foundation
import Glibc
import Testing
@testable import Keybay

extension RootUnderTest {
    /// The tpm2 root on `tpm`; its floor is the NV counter's value minus the base the root file records.
    static func tpm2(_ tpm: SoftwareTPM) -> RootUnderTest {
        RootUnderTest(name: "tpm2", environment: { $0.environment.merging(["KEYBAY_ROOT": "tpm2", "KEYBAY_TPM2_TCTI": tpm.tcti]) { $1 } },
                      floor: { box in
                          let file = try Tpm2Tests.rootFile(box)
                          return try tpm.counter(file.nvIndex) - file.base
                      })
    }
}

/// The tpm2 root against a real TPM 2.0 emulator (swtpm on a loopback port, started per test).
@Suite struct Tpm2Tests {
    static func rootPath(_ box: Sandbox) -> String { box.stateHome + "/keybay/" + box.app + "/tpm2-root.sealed" }

    /// The NV index and base the root file records (docs/format.md §12).
    static func rootFile(_ box: Sandbox) throws -> (nvIndex: UInt32, base: UInt64) {
        let file = try #require(readBytes(rootPath(box)))
        try #require(file.count > 22 && Array(file[0..<6]) == Array("KBT2".utf8) + [0, 1])
        return (UInt32(file[6..<10].reduce(0) { $0 << 8 | UInt64($1) }), file[10..<18].reduce(0) { $0 << 8 | UInt64($1) })
    }

    @Test func createOpenReadAndStatus() throws {
        let tpm = try SoftwareTPM(), box = Sandbox(), root = RootUnderTest.tpm2(tpm)
        #expect(try root.cli(box, ["init"]).status == 0)
        #expect(try root.cli(box, ["set", "k", "v"]).status == 0)
        let got = try root.cli(box, ["get", "k"])
        #expect(got.status == 0 && got.out == "v", "\(got.stderr)")
        let status = try root.cli(box, ["status", "--json"])
        #expect(status.out.contains("\"rootPlugin\":\"tpm2\"") && status.out.contains("\"state\":\"platform-only\"")
                && status.out.contains(Self.rootPath(box)) && status.out.contains(tpm.tcti), "\(status.out)")
        #expect(!exists(box.rootPath), "no file-root key next to a tpm2 root")
        #expect(mode(Self.rootPath(box)) == 0o600)
        let file = try Self.rootFile(box)
        #expect(try tpm.counter(file.nvIndex) == file.base, "the counter starts at its base: floor 0")
        #expect(try tpm.handles("handles-transient").isEmpty, "every transient object was flushed")
        // tss2 is opened on the first TPM operation: status of a platform-only store needs none.
        func mapsTSS(_ args: [String]) throws -> Bool {
            var env = root.environment(box)
            env["LD_DEBUG"] = "files"
            return try run(cliPath, args, environment: env).stderr.contains("libtss2-esys.so.0")
        }
        #expect(try !mapsTSS(["status"]) && mapsTSS(["get", "k"]))
    }

    /// Another machine's TPM (a fresh swtpm state) cannot load the sealed root.
    @Test func anotherMachinesTPMCannotOpenTheStore() throws {
        let tpm = try SoftwareTPM(), box = Sandbox()
        #expect(try RootUnderTest.tpm2(tpm).cli(box, ["set", "k", "v"]).status == 0)
        let store = readBytes(box.storePath)
        let other = try SoftwareTPM()
        let r = try RootUnderTest.tpm2(other).cli(box, ["get", "k", "--json"])
        #expect(r.status == 1 && r.error?.code == "platform-key-invalidated" && r.error?.reason == "foreign-object" && r.error?.path == Self.rootPath(box),
                "\(r.out)")
        #expect(readBytes(box.storePath) == store)
        #expect(try RootUnderTest.tpm2(tpm).cli(box, ["get", "k"]).out == "v", "its own TPM still opens it")
    }

    /// What else invalidates the root or refuses the store: the counter undefined, the TPM
    /// cleared (a new storage seed), the counter counted up by another process (locks out, never
    /// lets an older copy in). Transient objects left by killed processes are flushed.
    @Test func theTPMsOwnChangesAreRefusedAndLeftoversFlushed() throws {
        let tpm = try SoftwareTPM(), root = RootUnderTest.tpm2(tpm)
        let box = Sandbox()
        #expect(try root.cli(box, ["set", "k", "v"]).status == 0)
        let index = "0x" + String(try Self.rootFile(box).nvIndex, radix: 16)
        for _ in 0..<3 { #expect(try tpm.tools("tpm2_createprimary", "-Q", "-C", "o", "-c", box.root + "/p.ctx").status == 0) }
        #expect(try tpm.tools("tpm2_createprimary", "-Q", "-C", "o", "-c", box.root + "/p.ctx").status != 0, "the TPM's object memory is full")
        let full = try root.cli(box, ["get", "k"])
        #expect(full.status == 0 && full.out == "v", "leftovers are flushed: \(full.stderr)")
        // The store is at epoch 1 (floor 0): two increments put the floor above it.
        for _ in 0..<2 { #expect(try tpm.tools("tpm2_nvincrement", index, "-C", index).status == 0) }
        let counted = try root.cli(box, ["get", "k"])
        #expect(counted.status == 1 && counted.stderr.contains("[rolled-back]"), "\(counted.stderr)")
        #expect(try tpm.tools("tpm2_nvundefine", index, "-C", "o").status == 0)
        let undefined = try root.cli(box, ["get", "k", "--json"])
        #expect(undefined.status == 1 && undefined.error?.code == "platform-key-invalidated" && undefined.error?.reason == "counter-missing", "\(undefined.out)")

        let cleared = Sandbox()
        #expect(try root.cli(cleared, ["set", "k", "v"]).status == 0)
        #expect(try tpm.tools("tpm2_clear", "-c", "l").status == 0)
        let r = try root.cli(cleared, ["get", "k", "--json"])
        #expect(r.status == 1 && r.error?.code == "platform-key-invalidated" && r.error?.reason == "foreign-object", "\(r.out)")
    }

    /// `--opt pcrs=7`: extending PCR 7 (what a Secure Boot change does) invalidates the root.
    @Test func aPCRBoundRootIsInvalidatedWhenThePCRChanges() throws {
        let tpm = try SoftwareTPM(), box = Sandbox(), root = RootUnderTest.tpm2(tpm)
        let made = try root.cli(box, ["init", "--opt", "pcrs=7"])
        #expect(made.status == 0, "\(made.stderr)")
        #expect(try root.cli(box, ["set", "k", "v"]).status == 0 && root.cli(box, ["get", "k"]).out == "v")
        #expect(try tpm.tools("tpm2_pcrextend", "7:sha256=" + String(repeating: "ab", count: 32)).status == 0)
        let r = try root.cli(box, ["get", "k", "--json"])
        #expect(r.status == 1 && r.error?.code == "platform-key-invalidated" && r.error?.reason == "pcr-mismatch", "\(r.out)")
        let unbound = Sandbox(app: "com.example.unbound")
        #expect(try root.cli(unbound, ["set", "k", "v"]).status == 0 && root.cli(unbound, ["get", "k"]).out == "v",
                "a root without PCRs is not affected")
        let bad = try root.cli(Sandbox(), ["init", "--opt", "pcrs=24", "--json"])
        #expect(bad.status == 2 && bad.error?.code == "invalid-argument" && bad.error?.reason == "invalid-pcrs", "\(bad.out)")
        let unknown = try root.cli(Sandbox(), ["init", "--opt", "pcr=7", "--json"])
        #expect(unknown.status == 2 && unknown.error?.code == "invalid-argument" && unknown.error?.reason == "unknown-option", "\(unknown.out)")
    }

    /// The NV counter rises with each rotation (the floor is the new epoch) and never with records.
    @Test func theCounterRisesWithRotationsOnly() throws {
        let tpm = try SoftwareTPM()
        try RollbackTests.recordWritesLeaveTheFloorAlone(.tpm2(tpm))
    }

    @Test func olderCopiesAreRefused() throws {
        try RollbackTests.olderCopiesAreRefused(.tpm2(try SoftwareTPM()))
    }

    @Test func killedBetweenStoreAndFloorOpens() throws {
        try RollbackTests.aKillBetweenStoreAndFloorLeavesAStoreThatOpens(.tpm2(try SoftwareTPM()), library: "libkeybay-tpm2.so")
    }

    @Test func pluginCheckPasses() throws {
        let tpm = try SoftwareTPM(), box = Sandbox()
        let r = try run(cliPath, ["plugin-check", pluginDirectory + "/libkeybay-tpm2.so"],
                        environment: box.environment.merging(["KEYBAY_TPM2_TCTI": tpm.tcti]) { $1 })
        #expect(r.status == 0 && r.out.contains(" 0 failed") && !r.out.contains("FAIL") && r.out.contains("rollback floor"), "\(r.out)\(r.stderr)")
        #expect(try tpm.handles("handles-nv-index").isEmpty, "plugin-check's reset undefined its counter")
    }

    /// reset removes the counter and the root file; a TPM that cannot be reached is root-unavailable.
    @Test func resetRemovesTheCounterAndNoTPMIsRootUnavailable() throws {
        let tpm = try SoftwareTPM(), box = Sandbox(), root = RootUnderTest.tpm2(tpm)
        #expect(try root.cli(box, ["init"]).status == 0)
        #expect(try !tpm.handles("handles-nv-index").isEmpty)
        #expect(try root.cli(box, ["reset", "--yes"]).status == 0)
        #expect(try tpm.handles("handles-nv-index").isEmpty && !exists(Self.rootPath(box)))

        // A TCTI that reaches nothing: refused, named, nothing created.
        let nowhere = Sandbox()
        var env = root.environment(nowhere)
        env["KEYBAY_TPM2_TCTI"] = "swtpm:host=127.0.0.1,port=1"
        let r = try run(cliPath, ["init", "--json"], environment: env)
        #expect(r.status == 1 && r.error?.code == "root-unavailable" && r.error?.reason == "tpm-unreachable", "\(r.out)")
        #expect(!exists(nowhere.storePath) && !exists(Self.rootPath(nowhere)))
        // The default TCTI, with no TPM device here: the message names /dev/tpmrm0. (Not while
        // another test has a simulator where tss2's own default would look.)
        if !exists("/dev/tpmrm0") && !exists("/dev/tpm0") {
            env["KEYBAY_TPM2_TCTI"] = nil
            let d = try Tpm2BoundsTests.holdingTheSimulatorPorts { try run(cliPath, ["init", "--json"], environment: env) }
            #expect(d.status == 1 && d.error?.code == "root-unavailable" && d.error?.reason == "no-tpm" && d.error?.path == "/dev/tpmrm0", "\(d.out)")
        }
        // A store whose TPM is gone for good can still be reset (the counter stays in that TPM).
        #expect(try root.cli(box, ["set", "k", "v"]).status == 0)
        env = root.environment(box)
        env["KEYBAY_TPM2_TCTI"] = "swtpm:host=127.0.0.1,port=1"
        #expect(try run(cliPath, ["get", "k"], environment: env).stderr.contains("[root-unavailable]"))
        let reset = try run(cliPath, ["reset", "--yes"], environment: env)
        #expect(reset.status == 0 && !exists(Self.rootPath(box)) && !exists(box.storePath), "\(reset.stderr)")
    }

    /// A TPM device this user may not use (`/dev/tpmrm0` is usually root:tss 0660; here a
    /// `device:` TCTI naming such a file, and the CLI run as another user): `root-unavailable`
    /// naming the device, its mode and its group, and what to do.
    @Test(.enabled(if: geteuid() == 0, "running the CLI as another user needs root"))
    func aDeviceThisUserMayNotUseNamesItsGroup() throws {
        let box = Sandbox()
        // The device's group: tss where tpm-udev made it, else daemon (any group but root's, whose
        // advice differs, and not the user's own).
        let named = try #require(getgrnam("tss") ?? getgrnam("daemon"), "neither group tss nor daemon exists")
        let group = (named.pointee.gr_gid, String(cString: named.pointee.gr_name))
        let device = box.root + "/tpmrm0"
        writeBytes(device, [])
        // The other user may not reach the build directory (a clone in a private directory): the
        // CLI and the tpm2 plugin run from a copy it can reach (root's, 0755), found next to the CLI.
        // A sanitizer build runs in place (its runtime is found relative to the build).
        var cli = cliPath
        if sanitizer == nil {
            let bin = box.root + "/bin"
            mkdir(bin, 0o755)
            for name in ["keybay-methods", "libkeybay-tpm2.so"] {
                try Self.copyExecutable(buildDirectory + "/" + name, to: bin + "/" + name)
            }
            cli = bin + "/keybay-methods"
        }
        #expect(chown(device, 0, group.0) == 0 && chmod(device, 0o660) == 0 && chown(box.root, 65534, 65534) == 0)
        var env = box.environment
        env["KEYBAY_TPM2_TCTI"] = "device:" + device
        env["KEYBAY_PLUGIN_PATH"] = sanitizerPluginDirectory // the test plugins' directory is root's own
        let r = try run("/usr/bin/setpriv", ["--reuid=65534", "--regid=65534", "--clear-groups", cli, "init", "--root", "tpm2", "--json"], environment: env)
        #expect(r.status == 1 && r.error?.code == "root-unavailable" && r.error?.reason == "device-permission" && r.error?.path == device, "\(r.status): \(r.out)")
        // The advice for people that security.md promises: the mode, the group, and to join it.
        #expect(r.stderr.contains("is mode 0660, group \(group.1)") && r.stderr.contains("add the user to group \(group.1)"), "\(r.stderr)")
    }

    /// Copies an executable (mode 0755) through a descriptor that is close-on-exec from the
    /// start and closed before anything runs the copy: a child that another test forks meanwhile
    /// never inherits it open for writing, which would make the copy's exec fail with ETXTBSY
    /// ("Text file busy").
    static func copyExecutable(_ source: String, to destination: String) throws {
        let bytes = try #require(readBytes(source), "cannot read \(source)")
        let fd = open(destination, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o755)
        guard fd >= 0 else { throw KeybayTestFailure("cannot create \(destination): errno \(errno)") }
        var written = 0
        while written < bytes.count {
            let n = bytes[written...].withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else { close(fd); throw KeybayTestFailure("cannot write \(destination): errno \(errno)") }
            written += n
        }
        guard fchmod(fd, 0o755) == 0, close(fd) == 0 else { throw KeybayTestFailure("cannot finish \(destination): errno \(errno)") }
    }

    /// `root move` onto tpm2 and back: the move is a rotation, so the counter rises to its epoch
    /// (2, after the store's first); moving off removes the sealed object and undefines the counter.
    @Test func aMoveOntoTheTPMRaisesItsCounterAndAMoveOffRemovesIt() throws {
        let tpm = try SoftwareTPM(), box = Sandbox()
        let env = box.environment.merging(["KEYBAY_TPM2_TCTI": tpm.tcti]) { $1 }
        #expect(try run(cliPath, ["set", "k", "v"], environment: env).status == 0)
        let onto = try run(cliPath, ["root", "move", "tpm2"], environment: env)
        #expect(onto.status == 0, "\(onto.stderr)")
        #expect(try RootUnderTest.tpm2(tpm).floor(box) == 2 && !exists(box.rootPath))
        #expect(try tpm.handles("handles-nv-index").count == 1)
        let off = try run(cliPath, ["root", "move", "file-root"], environment: env)
        #expect(off.status == 0, "\(off.stderr)")
        #expect(try tpm.handles("handles-nv-index").isEmpty && !exists(Self.rootPath(box)))
        #expect(try RootUnderTest.fileRoot.floor(box) == 3 && run(cliPath, ["get", "k"], environment: env).out == "v")
    }

    /// Crash kills of enroll and remove on tpm2 (the store write, then the counter's increment).
    /// Short by default; KEYBAY_CRASH_RUNS sets the count for the long run.
    @Test func killedRotationsNeverTearTheStore() async throws {
        let tpm = try SoftwareTPM(), box = Sandbox()
        let runs = ProcessInfo.processInfo.environment["KEYBAY_CRASH_RUNS"].flatMap(Int.init) ?? 24
        try await ProcessTests.killWriters(box, runs: runs, environment: RootUnderTest.tpm2(tpm).environment(box), rotationsOnly: true)
    }
}
