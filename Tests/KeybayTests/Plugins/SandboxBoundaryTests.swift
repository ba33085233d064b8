// SPDX-License-Identifier: Apache-2.0
import Foundation
import Glibc
import Testing
@testable import Keybay

/// The ways around the sandbox a hostile method plugin tried, each compiled from C at test time:
/// code run outside the sandbox (by saying "root" in it, or through a DT_AUDIT tag), a reply
/// trickled or a stream of service calls that would hold the host, processes left behind, and
/// the waits it may use. What would show an escape is a marker file the plugin writes in the
/// test's `$HOME` wherever it can: it must never appear.
@Suite struct SandboxBoundaryTests {
    /// A method plugin whose every piece of code (its constructor, each operation and the
    /// `la_version` hook an audit tag would run) writes why into `marker` when it can. Its entry
    /// point says "root" where `HOME` is unset (the helper empties the environment) and "method"
    /// elsewhere.
    static func markingSource(id: String, marker: String) -> String {
        """
        #define _GNU_SOURCE
        #include <fcntl.h>
        #include <stdlib.h>
        #include <string.h>
        #include <unistd.h>
        #include "keybay_plugin.h"
        static void mark(const char *why) {
            int fd = open("\(marker)", O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
            if (fd >= 0) { (void)!write(fd, why, strlen(why)); close(fd); }
        }
        __attribute__((constructor)) static void loaded(void) { mark("constructor\\n"); }
        unsigned int la_version(unsigned int version) { mark("la_version\\n"); return version; }
        static void fb(keybay_buffer *b) { free(b->data); b->data = 0; b->length = 0; }
        static keybay_status probe(const keybay_host *h) { mark("probe\\n"); return KEYBAY_OK; }
        static keybay_status enroll(const keybay_host *h, const keybay_option *o, size_t n, keybay_buffer *p, uint8_t s[32]) {
            mark("enroll\\n"); p->data = calloc(1, 4); p->length = 4; memset(s, 7, 32); return KEYBAY_OK;
        }
        static keybay_status unwrap(const keybay_host *h, const uint8_t *p, size_t n, uint8_t s[32]) { mark("unwrap\\n"); memset(s, 7, 32); return KEYBAY_OK; }
        static keybay_status describe(const uint8_t *p, size_t n, keybay_buffer *t) { mark("describe\\n"); return KEYBAY_ERR_UNSUPPORTED; }
        static keybay_plugin d = { .abi_version = KEYBAY_PLUGIN_ABI_VERSION, .struct_size = sizeof(keybay_plugin), .id = "\(id)", .name = "t",
            .version = "1", .kind = KEYBAY_KIND_METHOD, .free_buffer = fb, .probe = probe, .enroll = enroll, .unwrap = unwrap, .describe = describe };
        const keybay_plugin *keybay_plugin_entry_v1(void) { d.kind = getenv("HOME") ? KEYBAY_KIND_METHOD : KEYBAY_KIND_ROOT; return &d; }
        """
    }

    /// A store holding `k` whose one method is plugin `id` from `dir`, enrolled with isolation
    /// off (where the plugin says "method"); the marker that enrollment wrote is removed.
    static func enrolledInProcess(_ box: Sandbox, _ id: String, dir: String, marker: String) throws {
        try PluginIsolationTests.setRecord(box)
        let r = try run(cliPath, ["enroll", id, "--plugin-dir", dir], environment: box.environment.merging(["KEYBAY_PLUGIN_ISOLATION": "none"]) { $1 })
        #expect(r.status == 0, "\(r.stderr)")
        #expect(access(marker, F_OK) == 0, "in process, the plugin's code runs and marks")
        unlink(marker)
    }

    /// `get`, `enroll` (into another store), `plugins` and `plugin-check`, isolated (the default):
    /// what each answered, and whether the marker appeared.
    static func everyWayIn(_ box: Sandbox, _ id: String, dir: String, marker: String) throws -> [(String, RunResult)] {
        let fresh = Sandbox()
        var results: [(String, RunResult)] = []
        results.append(("get", try run(cliPath, ["--json", "get", "k", "--plugin-dir", dir], environment: box.environment)))
        results.append(("enroll", try run(cliPath, ["--json", "enroll", id, "--plugin-dir", dir], environment: fresh.environment)))
        results.append(("plugins", try run(cliPath, ["--json", "plugins", "--plugin-dir", dir], environment: box.environment)))
        results.append(("plugin-check", try run(cliPath, ["plugin-check", dir + "/" + KeybayPluginSearch.fileName(for: id)], environment: box.environment)))
        #expect(access(marker, F_OK) != 0, "the plugin ran outside its sandbox: \(String(decoding: readBytes(marker) ?? [], as: UTF8.self))")
        return results
    }

    /// A plugin that says "root" in the helper and "method" anywhere else is never loaded in
    /// process: asked for as a method it is `plugin-failed` (`kind-mismatch`), and no listing or
    /// check runs it outside the sandbox. (The loader used to stop the helper and `dlopen` the
    /// file in process, where its unwrap ran unsandboxed.)
    @Test func aPluginThatSaysRootInTheSandboxNeverRunsOutsideIt() throws {
        let box = Sandbox()
        let dir = box.root + "/plugins", marker = box.root + "/marker", id = "two-faced"
        try PluginLoaderTests.build(Self.markingSource(id: id, marker: marker), fileID: id, in: dir)
        try Self.enrolledInProcess(box, id, dir: dir, marker: marker)
        let results = try Self.everyWayIn(box, id, dir: dir, marker: marker)
        for (name, r) in results where name == "get" || name == "enroll" {
            #expect(r.status == 1 && r.error?.code == "plugin-failed" && r.error?.reason == "kind-mismatch", "\(name): \(r.stderr)")
        }
        #expect(results.first { $0.0 == "plugin-check" }?.1.status != 0)
    }

    /// A plugin with a DT_AUDIT (or DT_DEPAUDIT) tag is refused before anything of it runs: the
    /// helper reads its needs from the ELF file, and the dynamic loader never maps it outside
    /// the sandbox. (`ld.so --list` ran its la_version hook with the user's whole access.)
    @Test(arguments: ["--audit", "--depaudit"])
    func aPluginWithAnAuditTagIsRefusedBeforeAnyOfItRuns(_ tag: String) throws {
        let box = Sandbox()
        let dir = box.root + "/plugins", marker = box.root + "/marker", id = "audited"
        let path = dir + "/" + KeybayPluginSearch.fileName(for: id)
        try PluginLoaderTests.build(Self.markingSource(id: id, marker: marker), fileID: id, in: dir, flags: ["-Wl,\(tag)=\(path)"])
        let dynamic = try run("/usr/bin/readelf", ["-d", path], environment: ["PATH": "/usr/bin:/bin"])
        #expect(dynamic.out.contains(tag == "--audit" ? "(AUDIT)" : "(DEPAUDIT)"), "\(dynamic.out)")
        try Self.enrolledInProcess(box, id, dir: dir, marker: marker)
        let results = try Self.everyWayIn(box, id, dir: dir, marker: marker)
        for (name, r) in results where name == "get" || name == "enroll" {
            #expect(r.status == 1 && r.error?.code == "plugin-refused" && r.error?.reason == "audit-library", "\(name): \(r.stderr)")
        }
        #expect(results.first { $0.0 == "plugin-check" }?.1.status != 0)
    }

    /// `get` through a hostile unwrap, killed at 60 s so that a hang fails the test rather than
    /// stalls it; the seconds it took.
    static func boundedGet(_ box: Sandbox, _ dir: String, timeout: String) throws -> (RunResult, Double) {
        let started = Date()
        let r = try run("/usr/bin/timeout", ["-s", "KILL", "60", cliPath, "--json", "get", "k", "--plugin-dir", dir],
                        environment: box.environment.merging(["KEYBAY_PLUGIN_TIMEOUT": timeout]) { $1 })
        return (r, Date().timeIntervalSince(started))
    }

    /// A reply trickled a byte at a time, and service calls sent one after another, end the call
    /// within its bound: each frame must arrive whole within 2 s, and the call's deadline is
    /// checked before every frame. (Each `recv` had its own 2 s, so one byte every 1.5 s held
    /// the host for ever, and frames 20 ms apart kept it from ever looking at the deadline.)
    @Test(arguments: [
        ("trickle", #"uint8_t head[4] = { 100, 0, 0, 0 }; (void)!write(3, head, 4); struct timespec t = { 1, 500000000 }; for (;;) { nanosleep(&t, 0); (void)!write(3, "x", 1); }"#),
        ("chatter", #"struct timespec t = { 0, 20000000 }; for (;;) { h->log(h->context, KEYBAY_LOG_DEBUG, "still here"); nanosleep(&t, 0); }"#),
    ])
    func aPluginThatKeepsSendingEndsWithinTheBound(_ plugin: (name: String, unwrap: String)) throws {
        let box = Sandbox()
        try PluginIsolationTests.setRecord(box)
        let dir = try PluginIsolationTests.enrolled(box, "hostile-\(plugin.name)", unwrap: plugin.unwrap)
        let (r, seconds) = try Self.boundedGet(box, dir, timeout: "3")
        #expect(!r.signalled && r.status == 1 && r.error?.code == "plugin-failed", "\(r.stderr)")
        #expect(["plugin-timed-out", "plugin-malformed-reply"].contains(r.error?.reason ?? ""), "\(r.stderr)")
        // The documented bound is the timeout plus a frame's 2 s; the slack is for a loaded 2-core machine.
        #expect(seconds < 30)
    }

    /// Cancelling the task that opens the store ends a plugin's call within the grace of 2 s
    /// even while the plugin keeps the socket busy (it was only looked at between frames).
    @Test func cancellingEndsACallThatKeepsSending() async throws {
        let box = Sandbox()
        try PluginIsolationTests.setRecord(box)
        let dir = try PluginIsolationTests.enrolled(box, "hostile-busy",
                                                    unwrap: #"struct timespec t = { 0, 20000000 }; for (;;) { h->log(h->context, KEYBAY_LOG_DEBUG, "busy"); nanosleep(&t, 0); }"#)
        var config = try box.configuration()
        config.pluginSearch.directories = [dir]
        let method = try methodIDs(box).first
        let opening = Task { try await KeybayStore.open(config, method: method) }
        try await Task.sleep(nanoseconds: 500_000_000)
        opening.cancel()
        // A hang fails at the bound instead of stalling the run (the blocked thread is left).
        let outcome = await withTaskGroup(of: KeybayError?.self) { group -> KeybayError? in
            group.addTask { await keybayError { _ = try await opening.value } }
            group.addTask { try? await Task.sleep(nanoseconds: 30_000_000_000); return KeybayError(.timedOut, "still waiting after 30 s") }
            let first = await group.next() ?? nil
            group.cancelAll()
            return first
        }
        #expect(outcome?.code == .cancelled, "\(String(describing: outcome))")
    }

    /// The processes of the plugin's file, by their command line (the helper and anything it started).
    static func processes(running path: String) -> [Int32] {
        guard let entries = directoryEntries("/proc") else { return [] }
        return entries.compactMap(Int32.init).filter { pid in
            guard let line = readBytes("/proc/\(pid)/cmdline") else { return false }
            return String(decoding: line, as: UTF8.self).contains(path)
        }
    }

    /// A plugin cannot start a process: fork fails inside the sandbox, and one second after `get`
    /// exits no process of the plugin's file is alive. (Twenty children, each pausing for ever,
    /// outlived the helper and the host.)
    @Test func aPluginStartsNoProcessThatOutlivesTheCall() throws {
        let box = Sandbox()
        try PluginIsolationTests.setRecord(box)
        let body = """
            int started = 0;
            for (int i = 0; i < 20; i++) { pid_t c = fork(); if (c == 0) { for (;;) pause(); } if (c > 0) started++; }
            if (started == 20) return KEYBAY_OK;
            h->set_error(h->context, "fork refused"); return KEYBAY_ERR_IO;
            """
        let dir = try PluginIsolationTests.enrolled(box, "hostile-fork", unwrap: body)
        let r = try PluginIsolationTests.get(box, dir)
        #expect(r.status == 1 && r.error?.code == "io" && r.error?.pluginID == "hostile-fork", "\(r.stderr)")
        sleep(1)
        let path = dir + "/" + KeybayPluginSearch.fileName(for: "hostile-fork")
        let left = Self.processes(running: path)
        #expect(left.isEmpty, "processes of the plugin still alive: \(left)")
        for pid in left { kill(pid, SIGKILL) }
    }

    /// The harmless waits are allowed: `pause` returns when a thread of the plugin signals it,
    /// and threads start (clone with CLONE_THREAD; clone3 answers ENOSYS and the C library falls
    /// back). The unwrap succeeds only if `pause` really waited for the signal. (`pause` was not on
    /// the allow-list: a loop of it spun at 100 % CPU.)
    @Test func pauseAndThreadsWorkInTheSandbox() throws {
        let box = Sandbox()
        try PluginIsolationTests.setRecord(box)
        let body = """
            static pid_t waiter;
            waiter = (pid_t)syscall(SYS_gettid);
            struct sigaction a = { 0 }; a.sa_handler = woken; sigaction(SIGUSR1, &a, 0);
            pthread_t t;
            if (pthread_create(&t, 0, wake, &waiter) != 0) { h->set_error(h->context, "no thread"); return KEYBAY_ERR_IO; }
            int r = pause(), e = errno;
            pthread_join(t, 0);
            if (r == -1 && e == EINTR && signalled) return KEYBAY_OK;
            h->set_error(h->context, "pause did not wait"); return KEYBAY_ERR_IO;
            """
        let helpers = """
            #include <errno.h>
            #include <pthread.h>
            #include <sys/syscall.h>
            static volatile sig_atomic_t signalled;
            static void woken(int s) { (void)s; signalled = 1; }
            static void *wake(void *tid) {
                struct timespec t = { 0, 200000000 }; nanosleep(&t, 0);
                syscall(SYS_tgkill, getpid(), *(pid_t *)tid, SIGUSR1); return 0;
            }
            """
        let dir = box.root + "/plugins"
        let source = PluginIsolationTests.source(id: "waits", unwrap: body).replacingOccurrences(of: "#include <unistd.h>\n", with: "#include <unistd.h>\n" + helpers + "\n")
        try PluginLoaderTests.build(source, fileID: "waits", in: dir, flags: ["-pthread"])
        #expect(try box.cli("enroll", "waits", "--plugin-dir", dir).status == 0)
        let r = try PluginIsolationTests.get(box, dir)
        #expect(r.status == 0 && r.error == nil, "\(r.stderr)")
    }
}
