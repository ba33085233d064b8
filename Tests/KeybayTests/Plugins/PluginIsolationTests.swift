// SPDX-License-Identifier: Apache-2.0
import Foundation
import Glibc
import Synchronization
import Testing
@testable import Keybay
import CKeybayPlugin
import CKeybayPluginIsolation

/// Method plugins in keybay-plugin-host: hostile plugins compiled from C at test time, each
/// enrolled into a real store, then asked to unwrap by the CLI or the library. What they do
/// stays in the helper: the host reports `plugin-failed` (or the plugin's own error, when the
/// sandbox refused what it tried), carries on, and nothing is written.
@Suite struct PluginIsolationTests {
    /// A method whose enroll succeeds (fixed parameters and secret) and whose unwrap is `unwrap`:
    /// a body that returns KEYBAY_OK with the enrolled secret only if what it tried worked.
    static func source(id: String, unwrap: String) -> String {
        """
        #define _GNU_SOURCE
        #include <arpa/inet.h>
        #include <fcntl.h>
        #include <netinet/in.h>
        #include <signal.h>
        #include <stdio.h>
        #include <string.h>
        #include <time.h>
        #include <sys/mman.h>
        #include <sys/ptrace.h>
        #include <sys/socket.h>
        #include <unistd.h>
        \(PluginLoaderTests.source(id: id, enroll: "p->data = calloc(1, 4); p->length = 4; memset(s, 7, 32); return KEYBAY_OK;",
                                   unwrap: "memset(s, 7, 32); \(unwrap)"))
        """
    }

    /// `source` with a sandbox declaration of `entries` (C string literals).
    static func declaring(_ source: String, _ entries: String) -> String {
        source.replacingOccurrences(of: ".describe = describe };", with: ".describe = describe, .sandbox = entries };")
            .replacingOccurrences(of: "static const keybay_plugin d", with: "static const char *const entries[] = { \(entries), 0 }; static const keybay_plugin d")
    }

    /// A store (file root) with the hostile method `id` enrolled, and the plugin's directory. A
    /// plugin that declares nothing is served by the helper's inspection child; one that declares
    /// something (`declaration`) by the helper itself, in the sandbox the declaration makes.
    static func enrolled(_ box: Sandbox, _ id: String, unwrap: String, declaration: String? = nil) throws -> String {
        let dir = box.root + "/plugins"
        let plain = source(id: id, unwrap: unwrap)
        try PluginLoaderTests.build(declaration.map { declaring(plain, $0) } ?? plain, fileID: id, in: dir)
        let r = try box.cli("enroll", id, "--plugin-dir", dir)
        #expect(r.status == 0, "\(r.stderr)")
        return dir
    }

    /// `get` through the hostile unwrap, with `environment` added; the store is unchanged after.
    static func get(_ box: Sandbox, _ dir: String, environment: [String: String] = [:]) throws -> RunResult {
        let before = readBytes(box.storePath)
        let r = try run(cliPath, ["--json", "get", "k", "--plugin-dir", dir], environment: box.environment.merging(environment) { $1 })
        #expect(readBytes(box.storePath) == before)
        return r
    }

    static func setRecord(_ box: Sandbox) throws {
        // Written before the method is enrolled: a platform-only store takes it without the method.
        #expect(try box.cli("--root", "file-root", "set", "k", "v").status == 0)
    }

    @Test(arguments: [
        ("null", "volatile int *x = 0; *x = 1; return KEYBAY_OK;", "plugin-crashed"),
        ("abort", "abort();", "plugin-crashed"),
        ("exit", "_exit(7);", "plugin-exited"),
        ("closes", "close(3); for (;;) pause();", "plugin-exited"),
        ("garbage", #"(void)!write(3, "\xff\xff\xff\x7fgarbage", 11); for (;;) pause();"#, "plugin-malformed-reply"),
        ("forged", #"(void)!write(3, "\x06\0\0\0\x11\x02\0\0\0\0", 10); for (;;) pause();"#, "plugin-malformed-reply"),
    ], [false, true])
    func aPluginThatFailsMakesGetReportPluginFailed(_ failure: (name: String, unwrap: String, reason: String), _ declares: Bool) throws {
        let (name, unwrap, reason) = failure
        let box = Sandbox()
        try Self.setRecord(box)
        let dir = try Self.enrolled(box, "hostile-\(name)", unwrap: unwrap, declaration: declares ? #""env:KEYBAY_TEST_UNUSED""# : nil)
        let r = try Self.get(box, dir)
        #expect(r.status == 1 && !r.signalled, "\(r.stderr)")
        #expect(r.error?.code == "plugin-failed" && r.error?.reason == reason && r.error?.pluginID == "hostile-\(name)", "\(r.stderr)")
    }

    @Test func aPluginThatSleepsForeverEndsWithinTheBound() throws {
        let box = Sandbox()
        try Self.setRecord(box)
        let dir = try Self.enrolled(box, "hostile-sleep", unwrap: "for (;;) pause();")
        let started = Date()
        let r = try Self.get(box, dir, environment: ["KEYBAY_PLUGIN_TIMEOUT": "2"])
        let seconds = Date().timeIntervalSince(started)
        #expect(r.status == 1 && r.error?.code == "plugin-failed" && r.error?.reason == "plugin-timed-out", "\(r.stderr)")
        // The documented bound is the timeout; the slack is for a loaded 2-core machine.
        #expect(seconds < 30)
    }

    /// Escapes: each body returns the enrolled secret only if the escape worked, else the plugin's
    /// own error (io) after set_error. In process every one of them works (the break).
    static func escapes(_ box: Sandbox, port: UInt16, udpPort: UInt16) -> [(String, String)] {
        [("read-store", #"int fd = open("\#(box.storePath)", O_RDONLY); if (fd >= 0) return KEYBAY_OK;"#),
         ("read-root", #"int fd = open("\#(box.rootPath)", O_RDONLY); if (fd >= 0) return KEYBAY_OK;"#),
         ("write-home", #"int fd = open("\#(box.root)/pwned", O_WRONLY | O_CREAT, 0600); if (fd >= 0) return KEYBAY_OK;"#),
         ("tcp", """
          int fd = socket(AF_INET, SOCK_STREAM, 0); struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(\(port)) };
          a.sin_addr.s_addr = htonl(INADDR_LOOPBACK); if (fd >= 0 && connect(fd, (struct sockaddr *)&a, sizeof a) == 0) return KEYBAY_OK;
          """),
         // Landlock governs TCP only: a datagram is stopped by the seccomp filter's socket rule.
         ("udp", """
          int fd = socket(AF_INET, SOCK_DGRAM, 0); struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(\(udpPort)) };
          a.sin_addr.s_addr = htonl(INADDR_LOOPBACK); if (fd >= 0 && sendto(fd, "x", 1, 0, (struct sockaddr *)&a, sizeof a) == 1) return KEYBAY_OK;
          """),
         ("ptrace", "if (ptrace(PTRACE_ATTACH, getppid(), 0, 0) == 0) return KEYBAY_OK;"),
         ("proc-mem", #"char m[64]; snprintf(m, sizeof m, "/proc/%d/mem", (int)getppid()); int fd = open(m, O_RDONLY); if (fd >= 0) return KEYBAY_OK;"#),
         ("kill-host", "if (kill(getppid(), SIGTERM) == 0) return KEYBAY_OK;"),
         // Landlock handles writing to files that exist, not only making new ones.
         ("write-existing", #"int fd = open("\#(box.root)/existing", O_WRONLY); if (fd >= 0) return KEYBAY_OK;"#),
         // No unix socket without a declaration of one.
         ("unix-socket", "int fd = socket(AF_UNIX, SOCK_STREAM, 0); if (fd >= 0) return KEYBAY_OK;"),
         // No program runs: /bin/true is outside what Landlock grants, and the dynamic loader,
         // which Landlock lets the plugin execute, is stopped by seccomp alone (if it ran, the
         // helper would become it and end: plugin-exited, not the plugin's own io).
         ("exec-true", #"char *a[] = { "true", 0 }; execv("/bin/true", a);"#),
         ("exec-loader", #"char *a[] = { "ld.so", "--version", 0 }; execv("\#(dynamicLoader)", a);"#),
         // The address space is limited (RLIMIT_AS 4 GiB): 5 GiB cannot be mapped, even unbacked.
         ("allocate", "void *m = mmap(0, 5ull << 30, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0); if (m != MAP_FAILED) return KEYBAY_OK;"),
         // The environment holds the declared variables alone (the host's has HOME, PATH, XDG_*).
         ("environment", #"extern char **environ; for (char **e = environ; e != 0 && *e != 0; e++) if (strncmp(*e, "KEYBAY_TEST_UNUSED=", 19) != 0) return KEYBAY_OK;"#)]
    }

    /// The dynamic loader of this machine (PT_INTERP of the test plugins), which the sandbox's
    /// system library grant lets a plugin execute.
    static let dynamicLoader: String = ["/lib64/ld-linux-x86-64.so.2", "/lib/ld-linux-aarch64.so.1"].first { (path: String) in access(path, X_OK) == 0 } ?? "/lib64/ld-linux-x86-64.so.2"

    @Test(arguments: ["read-store", "read-root", "write-home", "tcp", "udp", "ptrace", "proc-mem", "kill-host",
                      "write-existing", "unix-socket", "exec-true", "exec-loader", "allocate", "environment"], [false, true])
    func anEscapeFailsInsideTheHelper(_ name: String, _ declares: Bool) throws {
        let box = Sandbox()
        let listener = try LoopbackListener(), datagrams = try LoopbackListener(datagrams: true)
        try Self.setRecord(box)
        let existing = box.root + "/existing"
        try "the user's own".write(toFile: existing, atomically: true, encoding: .utf8)
        let body = Self.escapes(box, port: listener.port, udpPort: datagrams.port).first { $0.0 == name }!.1
        let dir = try Self.enrolled(box, "escape-\(name)", unwrap: body + #" h->set_error(h->context, "refused"); return KEYBAY_ERR_IO;"#,
                                    declaration: declares ? #""env:KEYBAY_TEST_UNUSED", "read:/usr/share/zoneinfo""# : nil)
        let r = try Self.get(box, dir)
        #expect(r.status != 0 && !r.signalled && r.error?.code == "io" && r.error?.pluginID == "escape-\(name)", "\(r.stderr)")
        #expect(access(box.root + "/pwned", F_OK) != 0)
        #expect(!listener.wasReached && !datagrams.wasReached)
        #expect(readBytes(existing) == Array("the user's own".utf8))
    }

    /// A Swift host with one store open keeps reading it after a plugin crashed another store's unlock.
    @Test func theHostCarriesOnAfterAPluginCrashed() async throws {
        let box = Sandbox(), other = Sandbox()
        try Self.setRecord(box)
        let dir = try Self.enrolled(box, "hostile-host", unwrap: "volatile int *x = 0; *x = 1; return KEYBAY_OK;")
        let first = try other.configuration()
        let open = try await KeybayStore.open(first)
        try open.set("kept", string: "yes")
        var config = try box.configuration()
        config.pluginSearch.directories = [dir]
        let method = try methodIDs(box).first
        let e = await keybayError { let s = try await KeybayStore.open(config, method: method); _ = try s.getString("k") }
        #expect(e?.code == .pluginFailed && e?.reason == "plugin-crashed" && e?.pluginID == "hostile-host", "\(String(describing: e))")
        #expect(try open.getString("kept") == "yes")
        // The next call starts a new helper, which crashes again: the same error, not a stale one.
        let again = await keybayError { let s = try await KeybayStore.open(config, method: method); _ = try s.getString("k") }
        #expect(again?.reason == "plugin-crashed")
    }

    /// The host's services cross the socket: the plugin sees the application id and gets the PIN
    /// the host's interaction answers, and a wrong one comes back as the plugin's wrong-secret.
    @Test func anIsolatedPluginSeesTheApplicationAndAsksForASecret() async throws {
        let box = Sandbox()
        try Self.setRecord(box)
        let dir = try Self.enrolled(box, "asks", unwrap: #"""
            char pin[64]; size_t got = 0;
            if (!KEYBAY_HOST_HAS(h, application_id) || h->application_id == 0 || strcmp(h->application_id, "\#(box.app)") != 0) return KEYBAY_ERR_IO;
            if (h->ask_secret(h->context, KEYBAY_SECRET_PIN, 0, "PIN", -1, (uint8_t *)pin, sizeof pin, &got) != KEYBAY_OK) return KEYBAY_ERR_CANCELLED;
            if (got != 4 || memcmp(pin, "4321", 4) != 0) return KEYBAY_ERR_WRONG_SECRET;
            return KEYBAY_OK;
            """#)
        var config = try box.configuration()
        config.pluginSearch.directories = [dir]
        let method = try methodIDs(box).first
        let session = try await KeybayStore.open(config, method: method, interaction: ScriptedInteraction(["4321"]))
        #expect(try session.getString("k") == "v")
        session.close()
        let wrong = await keybayError { _ = try await KeybayStore.open(config, method: method, interaction: ScriptedInteraction(["9999"])) }
        #expect(wrong?.code == .wrongSecret && wrong?.pluginID == "asks", "\(String(describing: wrong))")
    }

    @Test func isolationCanBeSwitchedOff() throws {
        let box = Sandbox()
        try Self.setRecord(box)
        let dir = try Self.enrolled(box, "escape-off", unwrap: #"int fd = open("\#(box.storePath)", O_RDONLY); if (fd >= 0) return KEYBAY_OK; return KEYBAY_ERR_IO;"#)
        let r = try Self.get(box, dir, environment: ["KEYBAY_PLUGIN_ISOLATION": "none"])
        #expect(r.status == 0 && r.error == nil, "\(r.stderr)")
    }

    @Test func aRefusedDeclarationIsRefused() throws {
        let box = Sandbox()
        let dir = box.root + "/plugins"
        let source = Self.declaring(PluginLoaderTests.source(id: "bad-sandbox"), #""read:/home""#)
        try PluginLoaderTests.build(source, fileID: "bad-sandbox", in: dir)
        let e = keybayError { _ = try PluginLoader.load(id: "bad-sandbox", kind: KEYBAY_KIND_METHOD, search: KeybayPluginSearch(directories: [dir], environmentPath: nil, isolation: .isolated)) }
        #expect(e?.code == .pluginRefused && e?.reason == "sandbox-declaration", "\(String(describing: e))")
    }

    /// Helpers started from many threads at once all start: every start is handed to the one
    /// spawner thread, and none waits on a request another caller took off. (A caller that
    /// cleared the pending request once its own was done left the next one waiting for ever.)
    /// Threads of their own, not the 2-core pool, so that many callers really wait at once; a
    /// hang fails the test at the bound instead of stalling the run.
    @Test func helpersStartedFromManyThreadsAtOnceAllStart() throws {
        let box = Sandbox()
        let directories = (0..<48).map { box.root + "/concurrent-\($0)" }
        for dir in directories { try PluginLoaderTests.build(PluginLoaderTests.source(id: "concurrent"), fileID: "concurrent", in: dir) }
        let started = Mutex(0)
        for round in 0..<3 {
            let group = DispatchGroup()
            for dir in directories[(round * 16)..<(round * 16 + 16)] {
                group.enter()
                Thread {
                    let search = KeybayPluginSearch(directories: [dir], environmentPath: nil, isolation: .isolated)
                    if let plugin = try? PluginLoader.load(id: "concurrent", kind: KEYBAY_KIND_METHOD, search: search), plugin.isIsolated {
                        started.withLock { $0 += 1 }
                    }
                    group.leave()
                }.start()
            }
            try #require(group.wait(timeout: .now() + 60) == .success, "round \(round): a helper start never returned")
        }
        #expect(started.withLock { $0 } == directories.count)
    }

    @Test func methodPluginsLoadIsolatedAndRootsInProcess() throws {
        let search = KeybayPluginSearch(directories: [testPluginDirectory], environmentPath: nil, isolation: .isolated)
        let method = try PluginLoader.load(id: "test-counting", kind: KEYBAY_KIND_METHOD, search: search)
        let root = try PluginLoader.load(id: "file-root", kind: nil, search: search)
        #expect(method.isIsolated && keybay_isolation_pid(method.isolation) > 0)
        #expect(!root.isIsolated)
        var inProcess = search
        inProcess.isolation = .inProcess
        #expect(try !PluginLoader.load(id: "test-counting", kind: KEYBAY_KIND_METHOD, search: inProcess).isIsolated)
    }
}

/// A TCP listener (or a UDP socket) on 127.0.0.1 that a test checks was never reached.
final class LoopbackListener {
    let fd: Int32
    let port: UInt16
    let datagrams: Bool

    init(datagrams: Bool = false) throws {
        self.datagrams = datagrams
        let type = datagrams ? SOCK_DGRAM.rawValue : SOCK_STREAM.rawValue
        let fd = socket(AF_INET, Int32(type) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let bound = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
        precondition(fd >= 0 && bound == 0 && (datagrams || listen(fd, 8) == 0), "cannot listen on 127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) } }
        self.fd = fd
        port = UInt16(bigEndian: address.sin_port)
    }

    /// Whether a connection is waiting (a connect completes in the kernel before accept), or a
    /// datagram arrived (a loopback send is queued before sendto returns).
    var wasReached: Bool {
        if datagrams {
            var byte: UInt8 = 0
            return recv(fd, &byte, 1, 0) >= 0
        }
        let c = accept(fd, nil, nil)
        if c >= 0 { close(c) }
        return c >= 0
    }

    deinit { close(fd) }
}
